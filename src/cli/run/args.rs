//! `infermeter run`'s flags.

use std::path::PathBuf;

use clap::Args;

use super::super::color::ColorChoice;
use super::super::values::{confidence, parse_param, percent};
use super::shard::ShardArgs;
use crate::app::CpuSpec;
use crate::units;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InconclusiveArg {
    Fail,
    Pass,
    Inconclusive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UntrustedArg {
    Inconclusive,
    Judge,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (KDL); `-` reads it from standard input.
    pub scenario: PathBuf,

    /// Send to this OpenAI-compatible base URL instead of the scenario's target (not part of
    /// the plan hash).
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// Ask for this model instead of the scenario's (part of the plan hash, like a `model`
    /// line in the file).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    // Help as an attribute: rustdoc would read `<scenario>` as an HTML tag.
    #[arg(
        long,
        short,
        value_name = "DIR",
        help = "Directory for results.json, report.md, plots and junit.xml \
                [default: results/<scenario>-<UTC time>]"
    )]
    pub out: Option<PathBuf>,

    /// Replace an earlier run's results in --out DIR (without it, a directory holding them
    /// is refused with exit 2 and left as it is).
    #[arg(long)]
    pub force: bool,

    /// Override a scenario param (repeatable), e.g. `--param rate=50`.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,

    /// Set a param from an environment variable (repeatable), e.g. `--param-env
    /// api_key=OPENAI_API_KEY`: the value never appears on a command line, and is masked in
    /// every output as a secret.
    #[arg(long = "param-env", value_name = "NAME=VARIABLE", value_parser = parse_param)]
    pub param_env: Vec<(String, String)>,

    /// Also write a JUnit XML file here (one test case per SLA assertion).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Render report.md with this minijinja template instead of the built-in one.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,

    /// Write one JSON row per request to requests.jsonl in the output directory.
    #[arg(long)]
    pub requests_jsonl: bool,

    /// Do not write SVG plots.
    #[arg(long)]
    pub no_plots: bool,

    /// Flag a stage as untrusted when the client's send lag p99 exceeds the larger of this and
    /// 5 % of the stage's TTFT p50.
    #[arg(long, value_name = "DURATION", default_value = "1ms")]
    pub max_send_lag: units::Duration,

    /// Name hypervisor steal above this share (percent) of the client's CPU time (`steal` in
    /// /proc/stat; cloud VMs with busy neighbours): the cause of a measured effect's flag (send
    /// lag, idle clients, rate shortfall), or a note; on its own it never untrusts a stage.
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, value_parser = percent)]
    pub max_steal: f64,

    /// Keep idle CPUs polling instead of sleeping for the run: holds /dev/cpu_dma_latency at 0,
    /// as cyclictest and tuned's latency-performance profile do. A sleeping CPU (on a VM, a
    /// halted vCPU) takes tens of microseconds to wake, which lands in send lag and TTFT. Costs
    /// power: the CPUs never idle. Needs write access to /dev/cpu_dma_latency (root); without
    /// it the run goes on with a warning, and no stage records `poll_idle`.
    #[arg(long)]
    pub poll_idle: bool,

    /// Run the client on these CPUs: a count (`4`: the first four this process may use) or a
    /// list (`0,2-3`). The process is restricted to them; with two or more, one shard per
    /// CPU: a pinned thread with its own runtime, open-loop dispatcher (on an interleaved
    /// slice of the schedule), connection pools and fold thread, so the client's work spreads
    /// over them. Without it: every CPU, one dispatcher. Linux.
    #[arg(long, value_name = "N|LIST")]
    pub cpus: Option<CpuSpec>,

    /// Confidence of the intervals SLA assertions are decided on [default: the scenario's
    /// `sla { confidence … }`, else 95%].
    #[arg(long, value_name = "PERCENT", value_parser = confidence)]
    pub confidence: Option<f64>,

    /// What an assertion that cannot be decided (its interval straddles the threshold, too few
    /// samples, an untrusted stage) does to the gate: `fail` (exit 1), `pass` (exit 0) or
    /// `inconclusive` (exit 4) [default: the scenario's `sla { inconclusive … }`, else
    /// inconclusive].
    #[arg(long, value_enum, value_name = "AS")]
    pub inconclusive: Option<InconclusiveArg>,

    /// What an assertion on an untrusted stage comes to: `inconclusive`, or `judge` it on its
    /// numbers anyway [default: the scenario's `sla { untrusted … }`, else inconclusive].
    #[arg(long, value_enum, value_name = "AS")]
    pub untrusted: Option<UntrustedArg>,

    /// Run every stage this many times on the same plan; its figures are then the medians
    /// across rounds, with intervals across rounds [default: the scenario's `rounds`, else 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: Option<u32>,

    /// No progress output; only the final summary.
    #[arg(long, short)]
    pub quiet: bool,

    /// Progress as plain lines every few seconds, even on a terminal.
    #[arg(long, conflicts_with = "quiet")]
    pub progress_lines: bool,

    /// Colour the outcome words (PASSED, FAILED, INCONCLUSIVE) on the console: `auto` when
    /// the output is a terminal and `NO_COLOR` is not set.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Leave the host name out of the result's provenance (CPU, kernel and OS are still
    /// recorded).
    #[arg(long)]
    pub no_hostname: bool,
    #[command(flatten)]
    pub distributed: ShardArgs,
}
