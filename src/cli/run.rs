//! `infermeter run SCENARIO`: the flags, turned into [`RunSettings`] for
//! [`crate::app::run_scenario`]; then the summary, and the exit code of the outcome.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::common::{merged_check, parse_param, parse_shard, percent};
use super::progress::{ColorChoice, ConsoleObserver, ProgressMode};
use crate::app::{RunSettings, TargetOverride, run_scenario};
use crate::error::Error;
use crate::plan::Slice;
use crate::report::{HTML_FILE, REPORT_FILE, render_summary_text_with};
use crate::results::RESULTS_FILE;
use crate::sla::{InconclusiveAs, Untrusted};
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

/// A confidence from 50 % to below 100 %, as a fraction.
fn confidence(s: &str) -> Result<f64, String> {
    let v = percent(s)? / 100.0;
    if (0.5..1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} is not from 50% to below 100%"))
    }
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

    /// Override a scenario param (repeatable), e.g. `--param rate=50`.
    #[arg(long = "param", short = 'p', value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,

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

    /// Flag a stage as untrusted when the hypervisor steals more than this share (percent) of
    /// the client's CPU time (`steal` in /proc/stat; cloud VMs with busy neighbours).
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
    /// list (`0,2-3`). The process is restricted to them, with a runtime worker and an
    /// open-loop dispatcher (each on an interleaved slice of the schedule) per CPU, so the
    /// client's work spreads over them. Without it: every CPU, one dispatcher. Linux.
    #[arg(long, value_name = "N|LIST")]
    pub cpus: Option<crate::runner::CpuSpec>,

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
    /// Run shard I (0-based) of N of the plan: its share of every stage's requests and
    /// clients, each request at its planned offset (see docs/distributed.md).
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    pub shard: Option<Slice>,

    /// The coordinator of the distributed run (`http://host:port`): each stage starts at the
    /// instant agreed there, the result is sent there, and the exit code is the merged gate's.
    #[arg(long, value_name = "URL", requires = "shard")]
    pub coordinator: Option<String>,

    /// Shard 0 also serves the coordinator on this address (the other shards ignore it), so
    /// that one Indexed Job needs no other process.
    #[arg(long, value_name = "ADDR", requires = "coordinator")]
    pub coordinator_listen: Option<std::net::SocketAddr>,

    /// Where shard 0's coordinator writes the merged result [default: OUT/merged].
    #[arg(long, value_name = "DIR", requires = "coordinator_listen")]
    pub merged_out: Option<PathBuf>,

    #[command(flatten)]
    pub timing: super::coordinate::CoordinatorTiming,
}

pub fn run(args: RunArgs) -> Result<(), Error> {
    let (scenario, scenario_text) = super::common::scenario_source(args.scenario)?;
    let target = TargetOverride {
        url: args.url,
        model: args.model,
    };
    let client = match (&args.coordinator, args.shard) {
        (Some(url), Some(slice)) => Some(crate::coordinate::Client::new(
            crate::coordinate::ClientConfig::new(url.clone(), slice.index),
        )?),
        _ => None,
    };
    let hosted = match (args.coordinator_listen, args.shard) {
        (Some(listen), Some(slice)) if slice.index == 0 => {
            let out = args.merged_out.clone().unwrap_or_else(|| {
                args.out
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("results"))
                    .join("merged")
            });
            let source = super::coordinate::Source {
                path: &scenario,
                text: scenario_text.as_deref(),
                params: &args.params,
                target: &target,
            };
            Some(super::coordinate::start(
                &source,
                listen,
                slice.count,
                out,
                &args.timing,
            )?)
        }
        _ => None,
    };
    let interrupt = super::signals::interrupt_on_signals();
    let args_shard = args.shard;
    let settings = RunSettings {
        scenario,
        scenario_text,
        params: args.params,
        target,
        out_dir: args.out,
        junit: args.junit,
        template: args.template,
        requests_jsonl: args.requests_jsonl,
        plots: !args.no_plots,
        max_send_lag: args.max_send_lag.as_std(),
        max_steal_share: args.max_steal / 100.0,
        poll_idle: args.poll_idle,
        cpus: args.cpus,
        // GitHub Actions' job summary: the report is appended there too.
        step_summary: std::env::var_os("GITHUB_STEP_SUMMARY")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        confidence: args.confidence,
        inconclusive: args.inconclusive.map(|a| match a {
            InconclusiveArg::Fail => InconclusiveAs::Fail,
            InconclusiveArg::Pass => InconclusiveAs::Pass,
            InconclusiveArg::Inconclusive => InconclusiveAs::Inconclusive,
        }),
        untrusted: args.untrusted.map(|a| match a {
            UntrustedArg::Inconclusive => Untrusted::Inconclusive,
            UntrustedArg::Judge => Untrusted::Judge,
        }),
        rounds: args.rounds,
        interrupt,
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        record_hostname: !args.no_hostname,
        shard: args.shard,
        barrier: client
            .clone()
            .map(|c| Arc::new(c) as Arc<dyn crate::runner::Barrier>),
        ..RunSettings::new("")
    };
    let mode = if args.quiet {
        ProgressMode::Quiet
    } else if args.progress_lines {
        ProgressMode::Lines
    } else {
        ProgressMode::Auto
    };
    let color = args.color.enabled(std::io::stdout().is_terminal());
    let report = run_scenario(&settings, Arc::new(ConsoleObserver::new(mode)))?;
    print!("{}", render_summary_text_with(&report.results, color));
    println!("results: {}", report.out_dir.join(RESULTS_FILE).display());
    println!("report:  {}", report.out_dir.join(REPORT_FILE).display());
    println!("page:    {}", report.out_dir.join(HTML_FILE).display());
    let Some(client) = client else {
        return report.check();
    };
    if let Some(s) = args_shard {
        println!(
            "shard {}/{}: the figures above are this shard's slice; the run's gate is the merged result's",
            s.index, s.count
        );
    }
    // A shard's own numbers are a slice; the run's gate is the merged one's.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    runtime.block_on(client.submit(&report.results))?;
    let verdict = runtime.block_on(client.verdict())?;
    if let Some(path) = &verdict.results {
        println!("merged:  {path}");
    }
    if let Some(coordinator) = hosted {
        coordinator.wait()?;
    }
    merged_check(&verdict)
}
