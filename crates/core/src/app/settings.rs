//! What a caller asks of a run: the scenario and its params, where outputs go, the validity
//! rules, and how to interrupt it. The CLI fills this from `infermeter run`'s flags.

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::sla::{InconclusiveAs, Untrusted};

/// Everything [`run_scenario`](super::run_scenario) needs besides the observer.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// The scenario file (KDL).
    pub scenario: PathBuf,
    /// The scenario's text when it did not come from the file (`-`: standard input);
    /// `scenario` then only names it in diagnostics.
    pub scenario_text: Option<String>,
    /// Param overrides (`NAME`, `VALUE`), applied in order.
    pub params: Vec<(String, String)>,
    /// `--url` / `--model`: replace the scenario's target after parsing.
    pub target: super::TargetOverride,
    /// Output directory; `None` makes a fresh `results/<scenario>-<UTC time>` one.
    pub out_dir: Option<PathBuf>,
    /// Replace an earlier run's results in `out_dir` (`--force`); without it, a directory
    /// that holds them is refused (exit 2) and left as it is.
    pub overwrite: bool,
    /// Also write a JUnit file here (one is always written into the output directory).
    pub junit: Option<PathBuf>,
    /// A report template replacing the scenario's and the built-in one.
    pub template: Option<PathBuf>,
    /// Write `requests.jsonl` (also when the scenario asks for it).
    pub requests_jsonl: bool,
    pub plots: bool,
    /// A stage is untrusted when the client's send lag p99 exceeds this.
    pub max_send_lag: Duration,
    /// A stage is untrusted when the hypervisor steals more than this share (0..1) of the
    /// client's CPU time.
    pub max_steal_share: f64,
    /// Hold `/dev/cpu_dma_latency` at 0 for the run (idle CPUs poll instead of sleeping).
    pub poll_idle: bool,
    /// `--cpus`: restrict the client to these CPUs, with a runtime worker and an open-loop
    /// dispatcher per CPU (`None`: every CPU, one dispatcher).
    pub cpus: Option<crate::runner::CpuSpec>,
    /// Where to append the Markdown report too (GitHub's step summary).
    pub step_summary: Option<PathBuf>,
    /// Overrides of the scenario's `sla` settings (`None`: the scenario's, else the default).
    pub confidence: Option<f64>,
    pub inconclusive: Option<InconclusiveAs>,
    pub untrusted: Option<Untrusted>,
    /// Runs every stage this many times (the scenario's `rounds` otherwise).
    pub rounds: Option<u32>,
    /// Cancel to interrupt the run: sending stops, in-flight requests get `interrupt_grace`,
    /// and an interrupted result is written.
    pub interrupt: CancellationToken,
    pub interrupt_grace: Duration,
    /// The command line that started the run, recorded (secrets masked) in the result's
    /// provenance; empty from the library unless the caller sets it.
    pub command_line: Vec<String>,
    /// Record the host name in the provenance (`--no-hostname` turns it off).
    pub record_hostname: bool,
    /// Run only this shard of the plan (`--shard I/N`; see `shard::slice`).
    pub shard: Option<crate::plan::Slice>,
    /// Where a shard agrees with the others when each step starts (a coordinator's client);
    /// without one, each step starts when the shard gets to it.
    pub barrier: Option<std::sync::Arc<dyn crate::runner::Barrier>>,
}

impl RunSettings {
    /// Settings with every default, for `scenario`.
    pub fn new(scenario: impl Into<PathBuf>) -> Self {
        RunSettings {
            scenario: scenario.into(),
            scenario_text: None,
            params: Vec::new(),
            target: super::TargetOverride::default(),
            out_dir: None,
            overwrite: false,
            junit: None,
            template: None,
            requests_jsonl: false,
            plots: true,
            max_send_lag: Duration::from_millis(1),
            max_steal_share: 0.01,
            poll_idle: false,
            cpus: None,
            step_summary: None,
            confidence: None,
            inconclusive: None,
            untrusted: None,
            rounds: None,
            interrupt: CancellationToken::new(),
            interrupt_grace: Duration::from_secs(2),
            command_line: Vec::new(),
            record_hostname: true,
            shard: None,
            barrier: None,
        }
    }
}
