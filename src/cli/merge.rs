//! `infermeter merge SHARD_RESULT... --out DIR`: one result from the shards' results of a
//! distributed run (see `merge::merge`), with its report and JUnit; exits with its gate.

use std::path::PathBuf;

use clap::Args;

use super::common::merged_check;
use crate::error::Error;
use crate::merge::{MergeOptions, merge};
use crate::report::{WriteOptions, render_summary_text, write_all};
use crate::results::read_results;
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
}

pub fn run(args: MergeArgs) -> Result<(), Error> {
    let inputs = args
        .results
        .iter()
        .map(|p| Ok((p.display().to_string(), read_results(p)?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let baseline = match &args.baseline {
        Some(p) => Some(read_results(p).map_err(Error::Baseline)?),
        None => None,
    };
    let opts = MergeOptions {
        allow_missing: args.allow_missing,
        max_skew_ms: args.max_skew.as_secs_f64() * 1e3,
        baseline,
    };
    let merged = merge(inputs, &opts)?;
    let write = WriteOptions {
        plots: !args.no_plots,
        ..WriteOptions::default()
    };
    let files = write_all(&merged, &args.out, &write)?;
    print!("{}", render_summary_text(&merged));
    if let Some(p) = files.first() {
        println!("merged results: {}", p.display());
    }
    merged_check(&crate::coordinate::verdict_of(&merged, None))
}
