//! `infermeter validate FILE...`: parses each scenario and prints `ok` or its diagnostics.

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
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
}

/// Checks every file and prints each verdict; the last invalid file's error is returned (the
/// others are printed as they are found).
pub fn run(args: ValidateArgs) -> Result<(), Error> {
    let mut last: Option<Error> = None;
    for file in &args.files {
        match scenario::load(file, &args.params) {
            Ok(s) => println!(
                "ok  {}  ({} datasets, {} stages)",
                file.display(),
                s.datasets.len(),
                s.stages.len()
            ),
            Err(e) => {
                if let Some(earlier) = last.replace(e.into()) {
                    print_error(&earlier);
                }
            }
        }
    }
    last.map_or(Ok(()), Err)
}
