//! `infermeter run SCENARIO`: the flags (`run/args.rs`, a shard's in `run/shard.rs`), turned
//! into [`RunSettings`] for [`crate::app::run_scenario`]; a shard of a distributed run joins
//! its coordinator through [`Shard`]. Then the summary, and the exit code of the outcome.

mod args;
mod shard;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

pub use args::{InconclusiveArg, RunArgs, UntrustedArg};

use super::progress::{ConsoleObserver, ProgressMode};
use crate::app::{
    self, InconclusiveAs, Output, RunSettings, Shard, ShardSettings, TargetOverride, Untrusted,
};
use crate::error::Error;

pub fn run(args: RunArgs) -> Result<(), Error> {
    let mode = if args.quiet {
        ProgressMode::Quiet
    } else if args.progress_lines {
        ProgressMode::Lines
    } else {
        ProgressMode::Auto
    };
    let color = args.color.enabled(std::io::stdout().is_terminal());
    let d = &args.distributed;
    let joining = match (&d.coordinator, d.shard) {
        (Some(url), Some(_)) => Some(ShardSettings {
            coordinator: url.clone(),
            token: app::shard_token(d.coordinator_token_file.as_deref())?,
            listen: d.coordinator_listen,
            merged_out: d.merged_out.clone(),
            timing: d.timing.settings(),
            on_refusal: Some(super::coordinate::refusal_log()),
        }),
        _ => None,
    };
    let mut settings = settings(args)?;
    // Before joining: every wait for the coordinator ends on a signal.
    settings.interrupt = super::signals::interrupt_on_signals();
    let shard = match &joining {
        Some(s) => Some(Shard::join(&mut settings, s)?),
        None => None,
    };
    let report = app::run_scenario(&settings, Arc::new(ConsoleObserver::new(mode)))?;
    crate::cli::console::out_text(
        &app::render_summary_text_with(&report.results, color),
        color,
    );
    let dir = &report.out_dir;
    outln!("results: {}", dir.join(Output::Results.name()).display());
    outln!("report:  {}", dir.join(Output::Report.name()).display());
    outln!("page:    {}", dir.join(Output::Html.name()).display());
    print_server(&report, dir);
    let (Some(shard), Some(s)) = (shard, settings.shard) else {
        return report.check();
    };
    outln!(
        "shard {}/{}: the figures above are this shard's slice; the run's gate is the merged result's",
        s.index,
        s.count
    );
    // A shard's own numbers are a slice; the run's gate is the merged one's, when this shard
    // took part in the whole run.
    let verdict = shard.verdict(&report);
    let closed = shard.close();
    let verdict = verdict?;
    closed?;
    if let Some(path) = verdict.as_ref().and_then(|v| v.results.as_ref()) {
        outln!("merged:  {path}");
    }
    app::shard_gate(&report, verdict.as_ref())
}

/// `--param-env NAME=VARIABLE`: each param's value read from its variable, registered as a
/// secret (and its name marked as a secret's) before anything could show it.
fn env_params(pairs: &[(String, String)]) -> Result<Vec<(String, String)>, Error> {
    pairs
        .iter()
        .map(|(name, var)| {
            let value = std::env::var(var).map_err(|_| {
                Error::usage(
                    format!("--param-env {name}={var}: the variable is not set (or not UTF-8)"),
                    "export it, or pass the param with --param",
                )
            })?;
            crate::redact::mark_secret_name(name);
            crate::redact::register(&value);
            Ok((name.clone(), value))
        })
        .collect()
}

/// The run the flags describe (its interrupt not yet tied to the signals).
fn settings(args: RunArgs) -> Result<RunSettings, Error> {
    let (scenario, scenario_text) = super::common::scenario_source(args.scenario)?;
    let mut params = args.params;
    params.extend(env_params(&args.param_env)?);
    Ok(RunSettings {
        scenario,
        scenario_text,
        params,
        target: TargetOverride {
            url: args.url,
            model: args.model,
        },
        out_dir: args.out,
        overwrite: args.force,
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
        command_line: std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        record_hostname: !args.no_hostname,
        shard: args.distributed.shard,
        ..RunSettings::new("")
    })
}

/// The server the run started: its command, start-up time and stop; with configurations,
/// one line per start (the stage it was started for, and its command).
fn print_server(report: &app::RunReport, dir: &std::path::Path) {
    let results = &report.results;
    let Some(s) = results
        .provenance
        .as_ref()
        .and_then(|p| p.started_server.as_ref())
    else {
        return;
    };
    let log = dir.join(app::SERVER_LOG);
    let starts: Vec<_> = results
        .stages
        .iter()
        .filter_map(|st| st.server.as_ref().filter(|s| s.restarted).map(|s| (st, s)))
        .collect();
    if starts.is_empty() {
        outln!(
            "server:  {} (ready in {:.1} s, {}; log {})",
            s.command.join(" "),
            s.startup_ms / 1e3,
            s.stopped,
            log.display()
        );
        return;
    }
    outln!(
        "server:  {} starts, one per configuration (log {})",
        starts.len(),
        log.display()
    );
    for (stage, s) in starts {
        outln!(
            "  {}: ready in {:.1} s for {}: {}",
            s.config,
            s.startup_ms / 1e3,
            stage.name,
            s.command.join(" ")
        );
    }
}
