//! [`run_scenario`]: the whole of `infermeter run` as one function — scenario → plan → run
//! (with the abort policy of `abort-on-fail` assertions and search probes' verdicts) → SLA
//! verdicts → [`Results`] → files. The files are settled before the first request (see
//! `outputs.rs`) and written after the last, the report watched for an interrupt.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::assemble::assemble;
use super::inputs::ReportInputs;
use super::outcome::{Outcome, RunReport};
use super::outputs::{Inputs, Outputs, placeholder, results_error};
use super::settings::RunSettings;
use crate::error::Error;
use crate::metrics::{PointKind, StageSummary, ValidityRules};
use crate::plan::{Load, Plan, Slice};
use crate::report::{self, Output, WriteOptions};
use crate::results::{
    CompareTolerances, Results, ShardRecord, ShardStart, Sharding, SlaPolicy, write_results,
};
use crate::runner::{
    self, LiveCheck, LiveJudgement, Observer, RunOptions, RunOutput, StageDecision, Stop,
};
use crate::scenario::Scenario;
use crate::sla::{self, ScopedAssertion};

/// Runs the scenario `settings` names, end to end, and writes its outputs. `Err` when it could
/// not be carried out (an invalid scenario, an unreachable target, an unreadable baseline);
/// otherwise the report, whose [`RunReport::check`] says whether the gate passed.
///
/// Builds its own async runtime: call it from a plain thread, not from inside a runtime.
pub fn run_scenario(
    settings: &RunSettings,
    observer: Arc<dyn Observer>,
) -> Result<RunReport, Error> {
    // An earlier run's results in `--out` are kept unless the caller says to replace them:
    // refused before anything (the directory's files included) is touched.
    if let Some(dir) = settings.out_dir.as_deref().filter(|_| !settings.overwrite) {
        super::outputs::refuse_earlier(dir)?;
    }
    let mut marked = false;
    let report = run_marked(settings, observer, &mut marked);
    if let (Err(e), false, Some(dir)) = (&report, marked, settings.out_dir.as_deref()) {
        super::outputs::mark_stale(dir, e);
    }
    report
}

/// [`run_scenario`], setting `marked` once the output directory holds this run's placeholder.
fn run_marked(
    settings: &RunSettings,
    observer: Arc<dyn Observer>,
    marked: &mut bool,
) -> Result<RunReport, Error> {
    let p = prepare(settings)?;
    p.outputs
        .begin(&placeholder(&p.plan), settings.junit.as_deref())?;
    *marked = true;
    let cx = sla::Context {
        baseline: p.baseline.as_ref().map(Results::baseline),
        telemetry: None,
        policy: sla::Policy {
            confidence: p.policy.confidence,
            untrusted: p.policy.untrusted,
            intervals: true,
        },
    };
    let (mut output, server) = execute(&p, settings, &observer, &cx)?;
    if let Some(a) = &p.agree {
        a.note_unpaired(&mut output.stages);
    }
    let mut results = assemble(&p.plan, &output, &cx, p.policy);
    results.provenance = Some(super::provenance::gather(super::provenance::Gathered {
        scenario: &p.scenario,
        command_line: &settings.command_line,
        hostname: settings.record_hostname,
        started_at: output.started_at,
        server: output.server.clone(),
        telemetry: results.telemetry.as_ref(),
    }));
    results.shards = settings
        .shard
        .map(|slice| shard_record(&p.plan, &output, slice, settings.barrier.is_some()));
    results.compare_tolerances = CompareTolerances {
        default: p.scenario.report.tolerance,
        metrics: p.scenario.report.tolerances.clone(),
    };
    if let Some(t) = &results.telemetry {
        for w in &t.warnings {
            observer.warning(&format!("telemetry: {w}"));
        }
    }
    let failures = super::server::record(&mut results, server);
    super::assemble::rank_configs(&mut results, &p.plan, &cx, p.policy);
    Ok(write(p, settings, results, output, failures))
}

/// A run's scenario and plan and what it reads besides, checked, with its outputs settled
/// (not yet begun).
struct Prepared {
    scenario: Scenario,
    plan: Arc<Plan>,
    policy: SlaPolicy,
    baseline: Option<Results>,
    /// The baseline's answers, for `agreement`, when the plan judges answers.
    agree: Option<super::agreement::BaselineAnswers>,
    template: Option<report::ReportTemplate>,
    outputs: Outputs,
}

/// Loads and compiles the scenario (rounds and shard applied), settles the SLA policy, reads
/// the baseline and template, and checks every output path.
fn prepare(settings: &RunSettings) -> Result<Prepared, Error> {
    let scenario = super::load_scenario(
        &settings.scenario,
        settings.scenario_text.as_deref(),
        &settings.params,
        &settings.target,
    )?;
    let mut plan = crate::plan::compile(&scenario).map_err(|source| Error::Plan {
        path: settings.scenario.clone(),
        source,
    })?;
    if let Some(n) = settings.rounds.filter(|n| *n > 1)
        && let Some(s) = plan.stages.iter().find(|s| s.until_decided.is_some())
    {
        return Err(Error::usage(
            format!(
                "--rounds {n}: stage `{}` is `until-decided`, and rounds repeat the same \
                 requests, which a stage that stops when decided does not send",
                s.name
            ),
            "leave out --rounds, or give the stage a fixed `requests` or `duration`",
        ));
    }
    if let Some(n) = settings.rounds {
        for s in plan
            .stages
            .iter_mut()
            .filter(|s| !matches!(s.load, Load::Search(_)))
        {
            s.rounds = n.max(1);
        }
    }
    if let Some(slice) = settings.shard {
        super::server::refuse_distributed(&scenario, "--shard")?;
        plan = crate::shard::slice(plan, slice)?;
    }
    let policy = SlaPolicy {
        confidence: settings
            .confidence
            .or(scenario.sla_policy.confidence)
            .unwrap_or(0.95),
        inconclusive: settings
            .inconclusive
            .or(scenario.sla_policy.inconclusive)
            .unwrap_or_default(),
        untrusted: settings
            .untrusted
            .or(scenario.sla_policy.untrusted)
            .unwrap_or_default(),
    };
    // A broken template or baseline is found now, not after the benchmark.
    let ReportInputs {
        baseline, template, ..
    } = ReportInputs::read(&scenario, &plan, settings.template.as_deref(), false)?;
    let agree = match &baseline {
        Some((path, _)) => super::agreement::BaselineAnswers::read(path, &plan)?,
        None => None,
    };
    let outputs = Outputs::prepare(
        settings.out_dir.as_deref(),
        &scenario.name,
        &asked_outputs(settings, &scenario),
        settings.junit.as_deref(),
        settings.step_summary.as_deref(),
        &Inputs {
            scenario: &settings.scenario,
            template: template.as_ref().map(|(p, _)| p.as_path()),
            baseline: baseline.as_ref().map(|(p, _)| p.as_path()),
        },
    )?;
    Ok(Prepared {
        scenario,
        plan: Arc::new(plan),
        policy,
        baseline: baseline.map(|(_, r)| r),
        agree,
        template: template.map(|(_, t)| t),
        outputs,
    })
}

/// Runs the plan on a runtime of its own (on `--cpus`' CPUs, idle CPUs polling with
/// `--poll-idle`), around the scenario's own server when it has one (started before, stopped
/// after, whatever happened between). A run that could not be carried out leaves its
/// placeholder saying why.
fn execute(
    p: &Prepared,
    settings: &RunSettings,
    observer: &Arc<dyn Observer>,
    cx: &sla::Context<'_>,
) -> Result<(RunOutput, Option<super::server::ServersDone>), Error> {
    // Before the runtime's threads start: they inherit the mask.
    let cpus = match &settings.cpus {
        Some(spec) => Some(runner::restrict_cpus(spec).map_err(|e| {
            Error::usage(
                format!("--cpus: {e}"),
                "give a count (`--cpus 4`) or a list of CPUs this process may use (`--cpus 0,2-3`; see `taskset -p $$`)",
            )
        })?),
        None => None,
    };
    // A shard per CPU (`--cpus N`, N > 1), started before the runtime and stopped after it.
    let shards = match cpus.as_deref() {
        Some(c) if c.len() > 1 => Some(Arc::new(runner::Shards::start(c).map_err(Error::Runtime)?)),
        _ => None,
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(c) = &cpus {
        builder.worker_threads(c.len());
    }
    let runtime = builder
        .enable_all()
        .thread_name("infermeter-client")
        .build()
        .map_err(Error::Runtime)?;
    // Held until the run is over.
    let poll_idle = settings
        .poll_idle
        .then(|| hold_poll_idle(observer))
        .flatten();
    let opts = RunOptions {
        live_check: live_check(&p.plan, p.baseline.as_ref(), cx.policy, &p.scenario),
        base_dir: p.scenario.source.base_dir(),
        observer: observer.clone(),
        requests_jsonl: p.outputs.requests_jsonl.clone(),
        answers_jsonl: p.outputs.answers_jsonl.clone(),
        agree_with: p
            .agree
            .as_ref()
            .and_then(super::agreement::BaselineAnswers::index),
        validity: ValidityRules {
            max_send_lag_p99_ms: settings.max_send_lag.as_secs_f64() * 1e3,
            max_steal_share: settings.max_steal_share,
            confidence: p.policy.confidence,
            ..ValidityRules::default()
        },
        interrupt: settings.interrupt.clone(),
        interrupt_grace: settings.interrupt_grace,
        poll_idle: poll_idle.is_some(),
        barrier: settings.barrier.clone(),
        server_switch: None,
        dispatchers: cpus.as_ref().map_or(1, Vec::len),
        shards: shards.clone(),
        test_send_lag: test_send_lag(),
        test_steal_share: test_steal_share(),
        test_read_stall: test_read_stall(),
    };
    let mut after_stage = |stage: &StageSummary| decide(&p.plan.sla, stage, cx);
    let output = runtime.block_on(async {
        let mut opts = opts;
        let servers =
            super::server::start(&p.scenario, &p.plan, &p.outputs.dir, &opts.interrupt).await?;
        if let Some(s) = &servers {
            opts.interrupt = s.run_stop.clone();
            opts.server_switch = Some(s.clone());
        }
        let output = runner::run(p.plan.clone(), opts, &mut after_stage).await;
        let done = match &servers {
            Some(s) => Some(s.finish().await),
            None => None,
        };
        Ok::<_, Error>((output?, done))
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    drop(shards);
    drop(poll_idle);
    output.inspect_err(|e| {
        // The placeholder stays incomplete, now saying why.
        let mut failed = placeholder(&p.plan);
        failed.error = Some(crate::redact::secrets(&crate::error::chain(e)).into_owned());
        let _ = write_results(&failed, &p.outputs.path(Output::Results));
    })
}

/// `INFERMETER_TEST_SEND_LAG_MS`, in debug builds only (what the tests run): holds every
/// open-loop request that many milliseconds before it is sent, so that a test can make a
/// stage's client untrusted deterministically. A release build never reads it.
fn test_send_lag() -> Duration {
    if !cfg!(debug_assertions) {
        return Duration::ZERO;
    }
    std::env::var("INFERMETER_TEST_SEND_LAG_MS")
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_millis)
}

/// `INFERMETER_TEST_STEAL_PERCENT`, in debug builds only: the hypervisor's steal every stage
/// reports, so that a test can flag steal deterministically. A release build never reads it.
fn test_steal_share() -> Option<f64> {
    if !cfg!(debug_assertions) {
        return None;
    }
    std::env::var("INFERMETER_TEST_STEAL_PERCENT")
        .ok()
        .and_then(|p| p.trim().parse::<f64>().ok())
        .filter(|p| (0.0..=100.0).contains(p))
        .map(|p| p / 100.0)
}

/// `INFERMETER_TEST_READ_STALL_MS`, in debug builds only: stalls the client's event loop that
/// long, again and again, while each stage runs, so that a test can make its reads late
/// deterministically. A release build never reads it.
fn test_read_stall() -> Duration {
    if !cfg!(debug_assertions) {
        return Duration::ZERO;
    }
    std::env::var("INFERMETER_TEST_READ_STALL_MS")
        .ok()
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_millis)
}

/// `--poll-idle`: /dev/cpu_dma_latency held at 0, or a warning when it cannot be.
fn hold_poll_idle(observer: &Arc<dyn Observer>) -> Option<runner::PollIdle> {
    match runner::PollIdle::hold() {
        Ok(held) => Some(held),
        Err(e) => {
            observer.warning(&format!(
                "--poll-idle: cannot write /dev/cpu_dma_latency ({e}); idle CPUs may sleep, run \
                 as root for it"
            ));
            None
        }
    }
}

/// Writes the run's results and reports (the report against the scenario's baseline, as
/// `compare` would show it) and settles how the run ended.
fn write(
    p: Prepared,
    settings: &RunSettings,
    mut results: Results,
    output: RunOutput,
    server_failures: Vec<Error>,
) -> RunReport {
    let mut failures: Vec<Error> = output.problems.into_iter().map(Error::from).collect();
    failures.extend(server_failures);
    let against = p.baseline.as_ref().map(|b| {
        let mut tolerances = report::Tolerances::new(p.scenario.report.tolerance.unwrap_or(0.05));
        tolerances.metrics = p.scenario.report.tolerances.clone();
        let opts = report::CompareOptions {
            tolerances,
            confidence: p.policy.confidence,
        };
        Box::new((b.clone(), report::compare(b, &results, &opts)))
    });
    let write_opts = WriteOptions {
        template: p.template,
        plots: settings.plots,
        step_summary: settings.step_summary.clone(),
        baseline: against,
        extra: p.outputs.asked.clone(),
        ..WriteOptions::default()
    };
    let json_path = p.outputs.path(Output::Results);
    let mut files = Vec::new();
    match write_results(&results, &json_path) {
        Ok(()) => files.push(json_path.clone()),
        Err(e) => failures.push(results_error(e)),
    }
    let mut stop = output.stop;
    match write_reports_watched(&results, &p.outputs.dir, write_opts, settings) {
        Some(written) => {
            files.extend(written.files);
            failures.extend(written.problems.into_iter().map(Error::from));
        }
        None => {
            // Interrupted while writing the reports: the result says so, whatever it said.
            results.passed = false;
            results.interrupted = true;
            results.error = Some("interrupted while writing the report".into());
            stop = Stop::Interrupted;
            if let Err(e) = write_results(&results, &json_path) {
                failures.push(results_error(e));
            }
        }
    }
    let outcome = if !failures.is_empty() {
        Outcome::Failed(failures)
    } else {
        match stop {
            Stop::Completed => Outcome::Completed,
            Stop::Interrupted => Outcome::Interrupted,
            Stop::Aborted(why) => Outcome::Aborted(why),
            Stop::Unsynchronised(why) => Outcome::Failed(vec![why.into()]),
        }
    };
    RunReport {
        results,
        outcome,
        out_dir: p.outputs.dir,
        files,
    }
}

/// The outputs written only when asked for that the command line and the scenario's `report`
/// ask for.
fn asked_outputs(settings: &RunSettings, scenario: &crate::scenario::Scenario) -> Vec<Output> {
    let report = &scenario.report;
    // A run that judges answers keeps them, for `compare`'s agreement with a baseline.
    let judged = scenario.datasets.iter().any(|d| d.quality.is_some());
    [
        (
            settings.requests_jsonl || report.requests_jsonl,
            Output::Requests,
        ),
        (report.llm_d, Output::LlmD),
        (report.parquet, Output::Parquet),
        (judged, Output::Answers),
    ]
    .into_iter()
    .filter_map(|(asked, output)| asked.then_some(output))
    .collect()
}

/// report.md, JUnit (the directory's and `--junit`'s), the step summary and the plots, written
/// on a thread of their own so that an interrupt is heard even when writing hangs (a step
/// summary on a pipe nobody reads, a file system that stopped answering). `None` when the
/// run's interrupt was cancelled first; a run interrupted earlier already has its result, and
/// a second signal ends the process.
fn write_reports_watched(
    results: &Results,
    out_dir: &Path,
    opts: WriteOptions,
    settings: &RunSettings,
) -> Option<report::Written> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (results_copy, dir, junit) = (
        results.clone(),
        out_dir.to_path_buf(),
        settings.junit.clone(),
    );
    let spawned = std::thread::Builder::new()
        .name("infermeter-report".into())
        .spawn(move || {
            let mut written = report::write_reports(&results_copy, &dir, &opts);
            if let Some(path) = junit {
                match report::write_junit(&results_copy, &path) {
                    Ok(()) => written.files.push(path),
                    Err(e) => written.problems.push(e),
                }
            }
            let _ = tx.send(written);
        });
    if let Err(e) = spawned {
        return Some(report::Written {
            files: Vec::new(),
            problems: vec![report::ReportError::io(out_dir, e)],
        });
    }
    let interrupt = &settings.interrupt;
    let watching = !interrupt.is_cancelled();
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(written) => return Some(written),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Some(report::Written {
                    files: Vec::new(),
                    problems: vec![report::ReportError::Plot(
                        "internal error: the report writer panicked".into(),
                    )],
                });
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if watching && interrupt.is_cancelled() {
                    return None;
                }
            }
        }
    }
}

/// After each stage: a search probe's verdict (its SLAs), else whether an `abort-on-fail`
/// assertion failed on it (an undecided one does not abort).
fn decide(
    assertions: &[ScopedAssertion],
    stage: &StageSummary,
    cx: &sla::Context<'_>,
) -> StageDecision {
    if let Some(p) = stage
        .profile
        .as_ref()
        .filter(|p| p.point.kind == PointKind::Probe)
    {
        let failed = sla::probe_failures(assertions, &p.point.group, stage, cx);
        return if failed.is_empty() {
            StageDecision::Continue
        } else {
            StageDecision::Failed(failed)
        };
    }
    match sla::abort_verdict(assertions, stage, cx, None) {
        Some(why) => StageDecision::Abort(why),
        None => StageDecision::Continue,
    }
}

/// The check of a running stage, when the plan needs one: its `abort-on-fail` assertions on
/// the stage's summary so far, once the scenario's minimum sample count and grace period are
/// met; and, for an `until-decided` stage past its minimum, whether every assertion holding
/// it open is decided.
fn live_check(
    plan: &Plan,
    baseline: Option<&Results>,
    policy: sla::Policy,
    scenario: &Scenario,
) -> Option<LiveCheck> {
    let aborting = plan.sla.iter().any(|a| a.abort_on_fail);
    if !aborting && plan.stages.iter().all(|s| s.until_decided.is_none()) {
        return None;
    }
    let assertions = plan.sla.clone();
    let baseline = baseline.cloned();
    let defaults = sla::AbortRule::default();
    let rule = sla::AbortRule {
        min_samples: scenario
            .sla_policy
            .abort_min_samples
            .unwrap_or(defaults.min_samples),
        grace_s: scenario
            .sla_policy
            .abort_grace
            .map_or(defaults.grace_s, |d| d.as_secs_f64()),
    };
    Some(Arc::new(move |stage: &StageSummary| {
        let cx = sla::Context {
            baseline: baseline.as_ref().map(Results::baseline),
            telemetry: None,
            policy,
        };
        let verdicts = match stage.until_decided {
            Some(_) => sla::held_verdicts(&assertions, stage, &cx),
            None => Vec::new(),
        };
        LiveJudgement {
            abort: sla::abort_verdict(&assertions, stage, &cx, Some(rule)),
            decided: sla::decided(&verdicts),
            verdicts,
        }
    }))
}

/// A shard's own part of a distributed result: how its steps started, and the plan's
/// assertions for the merge to judge.
fn shard_record(plan: &Plan, output: &RunOutput, slice: Slice, coordinated: bool) -> Sharding {
    let ms = |ns: i64| ns as f64 / 1e6;
    let starts = output
        .starts
        .iter()
        .map(|s| ShardStart {
            stage: s.stage.clone(),
            round: s.round,
            agreed_unix_ns: s.agreed.agreed_unix_ns.clamp(0, i128::from(i64::MAX)) as i64,
            offset_ms: ms(s.offset_ns),
            clock_error_ms: s.agreed.clock_error_ns as f64 / 1e6,
            missing: s.agreed.missing.clone(),
        })
        .collect();
    let stop = &output.stop;
    Sharding {
        count: slice.count,
        shards: vec![ShardRecord {
            index: slice.index,
            coordinated,
            starts,
            interrupted: !matches!(stop, Stop::Completed),
            error: match stop {
                Stop::Completed => None,
                Stop::Interrupted => Some("interrupted".into()),
                Stop::Aborted(why) => Some(why.to_string()),
                Stop::Unsynchronised(why) => Some(crate::error::chain(why)),
            },
        }],
        missing: Vec::new(),
        max_skew_ms: None,
        assertions: plan.sla.clone(),
    }
}
