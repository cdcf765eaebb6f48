//! `infermeter report RESULTS.json`: re-renders the report of a past run — Markdown (linking
//! the plots beside it), the self-contained HTML page, the pull-request comment, the per-stage
//! CSV, the llm-d Benchmark Report: any output the run's table of outputs renders from results
//! (see [`crate::app::render_saved`]) — or converts its `requests.jsonl` to Parquet
//! ([`crate::app::convert_saved`]).

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
    /// pull-request comment (Markdown without links out of the run's directory), the
    /// per-stage metrics as CSV, the llm-d Benchmark Report v0.2.1 (one JSON document per
    /// stage, one a line), the run's per-request rows as Parquet (from the requests.jsonl
    /// beside the results; needs --out), or a several-URL target's per-URL figures as CSV.
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
    let settings = RenderSettings {
        results: args.results.clone(),
        output: args.format,
        template: args.template.clone(),
        out: args.out.clone(),
    };
    if args.format.from_requests() {
        return app::convert_saved(&settings);
    }
    let text = app::render_saved(&settings)?;
    match &args.out {
        Some(out) => app::write_text(out, &text),
        None => {
            crate::cli::console::out_text(&text, false);
            Ok(())
        }
    }
}
