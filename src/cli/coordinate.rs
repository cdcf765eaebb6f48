//! `infermeter coordinate SCENARIO --shards N`: serves the barrier and collects the shards'
//! results of a distributed run, merges them, and exits with the merged gate's code. Shard 0
//! can serve the same coordinator itself (`run --coordinator-listen`); both go through
//! [`start`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;

use super::common::{merged_check, parse_param};
use crate::app::{TargetOverride, load_scenario};
use crate::coordinate::{Coordinator, CoordinatorConfig};
use crate::error::Error;
use crate::report::render_summary_text;
use crate::units::Duration;

/// How long the coordinator waits, and what skew it tolerates.
#[derive(Debug, Clone, Args)]
pub struct CoordinatorTiming {
    /// How long a stage's start waits for its last shard after the first arrived (and the
    /// merge for the last result after the first came); a shard later than that is missing
    /// and the merged result partial.
    #[arg(long, value_name = "DURATION", default_value = "60s")]
    pub wait: Duration,
    /// The first stage's wait instead: shards start as their machines do.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub start_wait: Duration,
    /// A stage starts this long after every shard has arrived, for all to hear of it.
    #[arg(long, value_name = "DURATION", default_value = "500ms")]
    pub lead: Duration,
    /// A merged stage is untrusted when a shard started further than this from the agreed
    /// instant (its measured offset plus its clock's error bound).
    #[arg(long, value_name = "DURATION", default_value = "5ms")]
    pub max_skew: Duration,
}

#[derive(Debug, Args)]
pub struct CoordinateArgs {
    /// The scenario every shard runs (KDL): its plan hash admits shards, its stages bound
    /// the waits, its baseline serves `baseline` thresholds.
    pub scenario: PathBuf,
    /// Shards in the run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub shards: u32,
    /// Address to serve on.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:7777")]
    pub listen: SocketAddr,
    /// Directory for the merged results.json, report.md and junit.xml.
    #[arg(long, short, value_name = "DIR", default_value = "results/merged")]
    pub out: PathBuf,
    /// Override a scenario param (repeatable), as the shards do.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    #[command(flatten)]
    pub timing: CoordinatorTiming,
}

/// The scenario as the shards load it: its path (or text), params and target overrides.
pub(super) struct Source<'a> {
    pub path: &'a Path,
    pub text: Option<&'a str>,
    pub params: &'a [(String, String)],
    pub target: &'a TargetOverride,
}

/// Compiles the scenario's whole plan and starts its coordinator.
pub(super) fn start(
    source: &Source<'_>,
    listen: SocketAddr,
    shards: u32,
    out: PathBuf,
    timing: &CoordinatorTiming,
) -> Result<Coordinator, Error> {
    let scenario = load_scenario(source.path, source.text, source.params, source.target)?;
    let plan = crate::plan::compile(&scenario).map_err(|e| Error::Plan {
        path: source.path.to_path_buf(),
        source: e,
    })?;
    let baseline = match &scenario.report.baseline {
        Some(path) => Some(
            crate::results::read_results(&scenario.source.base_dir().join(path))
                .map_err(Error::Baseline)?,
        ),
        None => None,
    };
    let mut cfg = CoordinatorConfig::new(listen, shards, Arc::new(plan), out);
    cfg.wait = timing.wait.as_std();
    cfg.start_wait = timing.start_wait.as_std();
    cfg.lead = timing.lead.as_std();
    cfg.merge.max_skew_ms = timing.max_skew.as_secs_f64() * 1e3;
    cfg.merge.baseline = baseline;
    Ok(crate::coordinate::serve(cfg)?)
}

pub fn run(args: CoordinateArgs) -> Result<(), Error> {
    let source = Source {
        path: &args.scenario,
        text: None,
        params: &args.params,
        target: &TargetOverride::default(),
    };
    let coordinator = start(&source, args.listen, args.shards, args.out, &args.timing)?;
    eprintln!(
        "coordinating {} shard(s) on {}",
        args.shards, coordinator.addr
    );
    let outcome = coordinator.wait()?;
    if let Some(r) = &outcome.results {
        print!("{}", render_summary_text(r));
    }
    if let Some(path) = outcome.files.first() {
        println!("merged results: {}", path.display());
    }
    merged_check(&outcome.verdict)
}
