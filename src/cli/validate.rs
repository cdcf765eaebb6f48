//! `infermeter validate FILE...`: checks each scenario as far as it can without the network —
//! parsed, then compiled into its plan (so data set files are read, hooks compiled, params
//! resolved; the report's baseline read and its template tried) — and prints `ok` or its
//! diagnostics.

use std::path::PathBuf;

use clap::Args;

use super::common::{parse_param, print_error};
use crate::error::Error;
use crate::scenario;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Override a declared param, e.g. `--param rate=40` (repeatable).
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
}

/// Checks every file and prints each verdict; the last invalid file's error is returned (the
/// others are printed as they are found).
pub fn run(args: ValidateArgs) -> Result<(), Error> {
    super::signals::exit_on_signals();
    let mut last: Option<Error> = None;
    for file in &args.files {
        let checked = scenario::load(file, &args.params)
            .map_err(Error::from)
            .and_then(|s| {
                let plan = crate::plan::compile(&s).map_err(|source| Error::Plan {
                    path: file.clone(),
                    source,
                })?;
                // The report's baseline and template, as `run` reads them; a baseline may
                // not have been made yet.
                let inputs = crate::app::ReportInputs::read(&s, &plan, None, true)?;
                Ok((s, inputs.missing_baseline))
            });
        match checked {
            Ok((s, missing_baseline)) => {
                println!(
                    "ok  {}  ({} datasets, {} stages)",
                    file.display(),
                    s.datasets.len(),
                    s.stages.len()
                );
                if let Some(b) = missing_baseline {
                    eprintln!(
                        "note: {}: its baseline {} does not exist yet (`run` needs it)",
                        file.display(),
                        b.display()
                    );
                }
            }
            Err(e) => {
                if let Some(earlier) = last.replace(e) {
                    print_error(&earlier);
                }
            }
        }
    }
    last.map_or(Ok(()), Err)
}
