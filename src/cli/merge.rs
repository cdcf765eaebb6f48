//! `infermeter merge SHARD_RESULT... --out DIR`: one result from the shards' results of a
//! distributed run (see [`crate::app::merge_results`]), with its report and JUnit; exits with
//! its gate.

use std::path::PathBuf;

use clap::Args;

use crate::app::{self, MergeSettings};
use crate::error::Error;
use crate::units::Duration;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' results.json files (one per shard).
    #[arg(required = true)]
    pub results: Vec<PathBuf>,
    /// Directory for the merged results.json, report.md, plots and junit.xml.
    #[arg(long, short, value_name = "DIR")]
    pub out: PathBuf,
    /// Merge even when shards are missing: the result is then partial (every stage untrusted,
    /// `shards.missing` set, exit 3).
    #[arg(long)]
    pub allow_missing: bool,
    /// A merged stage is untrusted when a shard started further than this from the agreed
    /// instant (its measured offset plus its clock's error bound).
    #[arg(long, value_name = "DURATION", default_value = "5ms")]
    pub max_skew: Duration,
    /// The baseline run for `baseline` thresholds.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Do not write SVG plots.
    #[arg(long)]
    pub no_plots: bool,
    /// Also write the llm-d Benchmark Report v0.2.1 of the merged result
    /// (llm-d-report.jsonl), as a run whose scenario says `report { llm-d #true }` does.
    #[arg(long)]
    pub llm_d: bool,
}

pub fn run(args: MergeArgs) -> Result<(), Error> {
    let merged = app::merge_results(&MergeSettings {
        results: args.results,
        out: args.out,
        allow_missing: args.allow_missing,
        max_skew: args.max_skew.as_std(),
        baseline: args.baseline,
        plots: !args.no_plots,
        llm_d: args.llm_d,
    })?;
    if let Some(r) = &merged.results {
        crate::cli::console::out_text(&app::render_summary_text(r), false);
    }
    if let Some(p) = merged.files.first() {
        outln!("merged results: {}", p.display());
    }
    merged.check()
}
