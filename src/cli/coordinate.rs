//! `infermeter coordinate SCENARIO --shards N`: serves the barrier and collects the shards'
//! results of a distributed run, merges them, and exits with the merged gate's code (see
//! [`crate::app::start_coordinator`]; shard 0 can serve the same coordinator itself, `run
//! --coordinator-listen`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use super::values::parse_param;
use crate::app::{self, CoordinatorSettings, CoordinatorTiming, RefusalLog, TargetOverride};
use crate::error::Error;
use crate::units::Duration;

/// How long the coordinator waits, and what skew it tolerates.
#[derive(Debug, Clone, Args)]
pub struct TimingArgs {
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

impl TimingArgs {
    pub fn settings(&self) -> CoordinatorTiming {
        CoordinatorTiming {
            wait: self.wait.as_std(),
            start_wait: self.start_wait.as_std(),
            lead: self.lead.as_std(),
            max_skew: self.max_skew.as_std(),
        }
    }
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
    /// The run's token file: read when it exists, else a new token is drawn and written there
    /// (readable by its owner only) for the shards (`run --coordinator-token-file FILE`).
    /// Without it the token is read from `INFERMETER_COORDINATOR_TOKEN`.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Override a scenario param (repeatable), as the shards do.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    #[command(flatten)]
    pub timing: TimingArgs,
}

/// Every refused request, on standard error (never with the token it carried).
pub fn refusal_log() -> RefusalLog {
    RefusalLog::new(|r| errln!("coordinator: {r}"))
}

pub fn run(args: CoordinateArgs) -> Result<(), Error> {
    let token = app::coordinator_token(args.token_file.as_deref())?;
    if let Some(file) = &token.created {
        errln!(
            "a new coordinator token is in {} (give it to every shard: --coordinator-token-file)",
            file.display()
        );
    }
    let coordinator = app::start_coordinator(&CoordinatorSettings {
        scenario: args.scenario,
        scenario_text: None,
        params: args.params,
        target: TargetOverride::default(),
        listen: args.listen,
        shards: args.shards,
        out: args.out,
        shard_out: None,
        timing: args.timing.settings(),
        token: token.token,
        interrupt: super::signals::interrupt_on_signals(),
        on_refusal: Some(refusal_log()),
    })?;
    errln!(
        "coordinating {} shard(s) on {}",
        args.shards,
        coordinator.addr()
    );
    errln!(
        "a shard's result may weigh up to {:.1} MiB (for this plan); larger ones are refused",
        coordinator.result_cap() as f64 / f64::from(1 << 20)
    );
    let merged = coordinator.wait()?;
    if let Some(r) = &merged.results {
        out!("{}", app::render_summary_text(r));
    }
    if let Some(path) = merged.files.first() {
        outln!("merged results: {}", path.display());
    }
    merged.check()
}
