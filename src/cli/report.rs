//! `infermeter report RESULTS.json`: re-renders the report of a past run — Markdown (linking
//! the plots beside it), the self-contained HTML page, the pull-request comment, or the
//! per-stage CSV: any output the run's table of outputs renders from results (see
//! [`crate::app::render_saved`]).

use std::path::PathBuf;

use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};

use crate::app::{self, Output, RenderSettings};
use crate::error::Error;

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
    /// What to render: the Markdown report, the self-contained HTML page (plots inline), the
    /// pull-request comment (Markdown without links out of the run's directory), or the
    /// per-stage metrics as CSV.
    #[arg(long, default_value = "markdown", value_parser = formats())]
    pub format: Output,
}

/// `--format`: the names the table of outputs gives the outputs it renders.
fn formats() -> impl TypedValueParser<Value = Output> {
    PossibleValuesParser::new(app::report_formats())
        .try_map(|name| Output::from_format(&name).ok_or(UnknownFormat(name)))
}

/// A `--format` name no output has (clap refuses it before this is asked).
#[derive(Debug, thiserror::Error)]
#[error("no output is rendered as `{0}`")]
struct UnknownFormat(String);

pub fn run(args: &ReportArgs) -> Result<(), Error> {
    let text = app::render_saved(&RenderSettings {
        results: args.results.clone(),
        output: args.format,
        template: args.template.clone(),
        out: args.out.clone(),
    })?;
    match &args.out {
        Some(out) => app::write_text(out, &text),
        None => {
            out!("{text}");
            Ok(())
        }
    }
}
