//! [`run_scenario`]: the whole of `infermeter run` as one function — scenario → plan → run
//! (with the abort policy of `abort-on-fail` assertions and search probes' verdicts) → SLA
//! verdicts → [`Results`] → files.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::outcome::{Outcome, RunReport};
use super::settings::RunSettings;
use crate::error::Error;
use crate::metrics::{PointKind, StageSummary, ValidityRules};
use crate::plan::{Load, Plan, Slice};
use crate::report::{self, WriteOptions};
use crate::results::{
    CompareTolerances, RESULTS_SCHEMA_VERSION, Results, ShardRecord, ShardStart, Sharding,
    SlaPolicy, TargetInfo, read_results,
};
use crate::runner::{self, Observer, RunOptions, RunOutput, StageDecision, Stop};
use crate::scenario::Scenario;
use crate::sla::{self, ScopedAssertion, SlaOutcome};

/// Runs the scenario `settings` names, end to end, and writes its outputs. `Err` when it could
/// not be carried out (an invalid scenario, an unreachable target, an unreadable baseline);
/// otherwise the report, whose [`RunReport::check`] says whether the gate passed.
///
/// Builds its own async runtime: call it from a plain thread, not from inside a runtime.
pub fn run_scenario(
    settings: &RunSettings,
    observer: Arc<dyn Observer>,
) -> Result<RunReport, Error> {
    let scenario = crate::scenario::load(&settings.scenario, &settings.params)?;
    let mut plan = crate::plan::compile(&scenario).map_err(|source| Error::Plan {
        path: settings.scenario.clone(),
        source,
    })?;
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
        plan = crate::shard::slice(plan, slice)?;
    }
    let plan = Arc::new(plan);
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
    let base_dir = scenario.source.base_dir();
    let baseline = match &scenario.report.baseline {
        Some(path) => Some(read_results(&base_dir.join(path)).map_err(Error::Baseline)?),
        None => None,
    };
    let template = read_template(settings, &scenario, &base_dir)?;
    let out_dir = settings
        .out_dir
        .clone()
        .unwrap_or_else(|| default_out_dir(&scenario));
    std::fs::create_dir_all(&out_dir).map_err(|source| Error::Io {
        action: "create the output directory",
        path: out_dir.clone(),
        source,
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("infermeter-client")
        .build()
        .map_err(Error::Runtime)?;
    // Held until the run is over.
    let poll_idle = settings
        .poll_idle
        .then(|| match runner::PollIdle::hold() {
            Ok(held) => Some(held),
            Err(e) => {
                observer.warning(&format!(
                    "--poll-idle: cannot write /dev/cpu_dma_latency ({e}); idle CPUs may sleep, \
                     run as root for it"
                ));
                None
            }
        })
        .flatten();
    let opts = RunOptions {
        base_dir,
        observer: observer.clone(),
        requests_jsonl: (settings.requests_jsonl || scenario.report.requests_jsonl)
            .then(|| out_dir.join("requests.jsonl")),
        validity: ValidityRules {
            max_send_lag_p99_ms: settings.max_send_lag.as_secs_f64() * 1e3,
            max_steal_share: settings.max_steal_share,
            confidence: policy.confidence,
            ..ValidityRules::default()
        },
        interrupt: settings.interrupt.clone(),
        interrupt_grace: settings.interrupt_grace,
        poll_idle: poll_idle.is_some(),
        barrier: settings.barrier.clone(),
    };
    let cx = sla::Context {
        baseline: baseline.as_ref().map(Results::baseline),
        telemetry: None,
        policy: sla::Policy {
            confidence: policy.confidence,
            untrusted: policy.untrusted,
            intervals: true,
        },
    };
    let mut after_stage = |stage: &StageSummary| decide(&plan.sla, stage, &cx);
    let output = runtime.block_on(runner::run(plan.clone(), opts, &mut after_stage));
    runtime.shutdown_timeout(Duration::from_secs(1));
    drop(poll_idle);
    let output = output?;

    let mut results = assemble(&plan, &output, &cx, policy);
    results.shards = settings
        .shard
        .map(|slice| shard_record(&plan, &output, slice, settings.barrier.is_some()));
    results.compare_tolerances = CompareTolerances {
        default: scenario.report.tolerance,
        metrics: scenario.report.tolerances.clone(),
    };
    if let Some(t) = &results.telemetry {
        for w in &t.warnings {
            observer.warning(&format!("telemetry: {w}"));
        }
    }
    let mut failures: Vec<Error> = output.problems.into_iter().map(Error::from).collect();
    let write_opts = WriteOptions {
        template,
        plots: settings.plots,
        step_summary: settings.step_summary.clone(),
        ..WriteOptions::default()
    };
    let mut files = match report::write_all(&results, &out_dir, &write_opts) {
        Ok(files) => files,
        Err(e) => {
            failures.push(e.into());
            Vec::new()
        }
    };
    if let Some(path) = &settings.junit {
        match report::write_junit(&results, path) {
            Ok(()) => files.push(path.clone()),
            Err(e) => failures.push(e.into()),
        }
    }
    let outcome = if !failures.is_empty() {
        Outcome::Failed(failures)
    } else {
        match output.stop {
            Stop::Completed => Outcome::Completed,
            Stop::Interrupted => Outcome::Interrupted,
            Stop::Aborted(why) => Outcome::Aborted(why),
            Stop::Unsynchronised(why) => Outcome::Failed(vec![Error::Unsynchronised(why)]),
        }
    };
    Ok(RunReport {
        results,
        outcome,
        out_dir,
        files,
    })
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
        .filter(|p| p.kind == PointKind::Probe)
    {
        let failed = sla::probe_failures(assertions, &p.group, stage, cx);
        return if failed.is_empty() {
            StageDecision::Continue
        } else {
            StageDecision::Failed(failed)
        };
    }
    for a in assertions {
        // Telemetry metrics are known only once the sampler has finished, after the run.
        if !a.abort_on_fail
            || a.assertion.metric.is_telemetry()
            || a.stage.as_ref().is_some_and(|s| s != &stage.name)
        {
            continue;
        }
        let v = sla::judge_one(&a.assertion, stage, cx);
        if v.outcome == SlaOutcome::Fail {
            return StageDecision::Abort(format!(
                "aborted: `{}` failed on stage `{}` (observed {:.3} {}, threshold {:.3} {})",
                v.expr, stage.name, v.observed, v.unit, v.threshold, v.unit
            ));
        }
    }
    StageDecision::Continue
}

/// The run's [`Results`]: its stages, the SLA verdicts on them and the gate, and where it
/// stopped.
fn assemble(plan: &Plan, output: &RunOutput, cx: &sla::Context<'_>, policy: SlaPolicy) -> Results {
    let (scoped, judged) = sla::profile_inputs(&plan.sla, &output.stages, &output.searches);
    let cx = sla::Context {
        telemetry: output.telemetry.as_ref(),
        ..*cx
    };
    let verdicts = sla::judge(&scoped, &judged, &cx);
    let gate = sla::gate(&verdicts, policy.inconclusive);
    let stopped_early = output.stop != Stop::Completed;
    let error = match &output.stop {
        Stop::Aborted(why) => Some(why.clone()),
        Stop::Interrupted => Some("interrupted (Ctrl-C)".to_string()),
        Stop::Unsynchronised(why) => Some(why.clone()),
        Stop::Completed => output.problems.first().map(|p| crate::error::chain(p)),
    };
    Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario: plan.scenario.clone(),
        description: plan.description.clone(),
        plan_hash: plan.hash.clone(),
        seed: plan.seed,
        passed: gate.outcome == SlaOutcome::Pass && !stopped_early,
        outcome: gate.outcome,
        sla_policy: policy,
        compare_tolerances: CompareTolerances::default(),
        interrupted: stopped_early,
        error,
        infermeter_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: crate::units::rfc3339(output.started_at),
        target: TargetInfo {
            endpoint: output.endpoint.clone(),
            api: plan.target.api,
            model: output.model.clone(),
            tokenizer: output.tokenizer.clone(),
        },
        warmup: output.warmup.clone(),
        stages: output.stages.clone(),
        sla: verdicts,
        telemetry: output.telemetry.clone(),
        searches: output.searches.clone(),
        shards: None,
    }
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
            interrupted: *stop != Stop::Completed,
            error: match stop {
                Stop::Completed => None,
                Stop::Interrupted => Some("interrupted".into()),
                Stop::Aborted(why) | Stop::Unsynchronised(why) => Some(why.clone()),
            },
        }],
        missing: Vec::new(),
        max_skew_ms: None,
        assertions: plan.sla.clone(),
    }
}

/// The report template's text: the command line's, else the scenario's, else none.
fn read_template(
    settings: &RunSettings,
    scenario: &Scenario,
    base_dir: &Path,
) -> Result<Option<String>, Error> {
    let path = settings
        .template
        .clone()
        .or_else(|| scenario.report.template.as_ref().map(|t| base_dir.join(t)));
    path.map(|path| {
        std::fs::read_to_string(&path).map_err(|source| Error::Template { path, source })
    })
    .transpose()
}

fn default_out_dir(scenario: &Scenario) -> PathBuf {
    let stamp = crate::units::rfc3339(SystemTime::now()).replace([':', '-'], "");
    Path::new("results").join(format!(
        "{}-{}",
        slug(&scenario.name),
        stamp.trim_end_matches('Z')
    ))
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}
