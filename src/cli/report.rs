//! `infermeter report RESULTS.json`: re-renders the Markdown report of a past run.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::exit;
use crate::report::{cdf_file_name, read_results, render_markdown_with_plots, timeline_file_name};

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The results.json of a run.
    pub results: PathBuf,
    /// A minijinja template to use instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Write the report here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(args: &ReportArgs) -> i32 {
    let results = match read_results(&args.results) {
        Ok(r) => r,
        Err(e) => return fail(&e, exit::INVALID),
    };
    let template = match &args.template {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("error: failed to read template {}: {e}", path.display());
                return exit::INVALID;
            }
        },
        None => None,
    };
    // Link the plots that sit next to where the report will be read.
    let report_dir = match &args.out {
        Some(out) => out.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => args
            .results
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
    };
    let plots: Vec<String> = results
        .stages
        .iter()
        .flat_map(|s| [cdf_file_name(&s.name), timeline_file_name(&s.name)])
        .filter(|f| report_dir.join(f).is_file())
        .collect();
    let md = match render_markdown_with_plots(&results, template.as_deref(), &plots) {
        Ok(md) => md,
        Err(e) => return fail(&e, exit::INVALID),
    };
    match &args.out {
        Some(out) => match std::fs::write(out, md) {
            Ok(()) => exit::OK,
            Err(e) => {
                eprintln!("error: failed to write {}: {e}", out.display());
                exit::RUN_ERROR
            }
        },
        None => {
            print!("{md}");
            exit::OK
        }
    }
}

/// Prints an error with its chain of causes.
pub(crate) fn fail(e: &dyn std::error::Error, code: i32) -> i32 {
    let mut msg = format!("error: {e}");
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(&format!(": {s}"));
        src = s.source();
    }
    eprintln!("{msg}");
    code
}
