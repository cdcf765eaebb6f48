//! A run's output and its plan made into [`Results`]: the SLA verdicts, the gate, and why it
//! stopped. Shared by a real run (`run.rs`) and the sample results a template is checked
//! against (`inputs.rs`).

use crate::plan::Plan;
use crate::results::{CompareTolerances, RESULTS_SCHEMA_VERSION, Results, SlaPolicy, TargetInfo};
use crate::runner::{RunOutput, Stop};
use crate::sla::{self, SlaOutcome};

/// The run's [`Results`]: its stages, the SLA verdicts on them and the gate, and where it
/// stopped.
pub(super) fn assemble(
    plan: &Plan,
    output: &RunOutput,
    cx: &sla::Context<'_>,
    policy: SlaPolicy,
) -> Results {
    let cx = sla::Context {
        telemetry: output.telemetry.as_ref(),
        ..*cx
    };
    let mut verdicts = sla::judge_run(&plan.sla, &output.stages, &output.searches, &cx);
    verdicts.extend(sla::nothing_measured(&output.stages));
    verdicts.extend(sla::priority_inversions(&output.stages, &cx));
    let gate = sla::gate(&verdicts, policy.inconclusive);
    let stopped_early = !matches!(output.stop, Stop::Completed);
    let mlperf = plan
        .mlperf
        .as_ref()
        .map(|rule| sla::mlperf::qualify(rule, &output.stages));
    let unqualified = mlperf.as_ref().is_some_and(|q| q.fails_gate());
    let error = match &output.stop {
        Stop::Aborted(why) => Some(why.to_string()),
        Stop::Interrupted => Some("interrupted (Ctrl-C or a signal)".to_string()),
        Stop::Unsynchronised(why) => Some(crate::error::chain(why)),
        Stop::Completed => output
            .problems
            .first()
            .map(|p| crate::redact::secrets(&crate::error::chain(p)).into_owned()),
    };
    Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario: plan.scenario.clone(),
        description: plan.description.clone(),
        plan_hash: plan.hash.clone(),
        seed: plan.seed,
        passed: gate.outcome == SlaOutcome::Pass && !stopped_early && !unqualified,
        outcome: gate.outcome,
        sla_policy: policy,
        compare_tolerances: CompareTolerances::default(),
        interrupted: stopped_early,
        error,
        complete: true,
        infermeter_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at: crate::units::rfc3339(output.started_at),
        target: TargetInfo {
            endpoint: output.endpoint.clone(),
            api: plan.target.request.api,
            stream: plan.target.request.stream,
            model: output.model.clone(),
            tokenizer: output.tokenizer.clone(),
            cache_salt: output.cache_salt.clone(),
            routes: super::outputs::routes(plan),
            affinity_header: plan.target.request.affinity_header.clone(),
            priority_header: plan.target.request.priority_header.clone(),
            network: output.network.clone(),
        },
        warmup: output.warmup.clone(),
        stages: output.stages.clone(),
        sla: verdicts,
        telemetry: output.telemetry.clone(),
        searches: output.searches.clone(),
        frontiers: crate::metrics::frontiers(&output.stages),
        provenance: None,
        shards: None,
        configs: None,
        mlperf,
    }
}

/// Once each stage records the server it ran on: judges `server_startup` again (it is read
/// off that record), ranks the server's configurations and judges the `best.` assertions on
/// the ranking; the gate is judged again with them, and a run already failed stays failed.
pub(super) fn rank_configs(
    results: &mut Results,
    plan: &Plan,
    cx: &sla::Context<'_>,
    policy: SlaPolicy,
) {
    let cx = sla::Context {
        telemetry: results.telemetry.as_ref(),
        ..*cx
    };
    let startups = startup_verdicts(results, &cx);
    let changed = !startups.is_empty();
    for (i, v) in startups {
        results.sla[i] = v;
    }
    let run = sla::RunFacts {
        stages: &results.stages,
        searches: &results.searches,
        verdicts: &results.sla,
    };
    let configs = sla::rank_configs(&plan.sla, run, &cx);
    let best = sla::judge_best(&plan.sla, run, &cx);
    results.configs = configs;
    if best.is_empty() && !changed {
        return;
    }
    results.sla.extend(best);
    let gate = sla::gate(&results.sla, policy.inconclusive);
    results.passed = results.passed && gate.outcome == SlaOutcome::Pass;
    results.outcome = gate.outcome;
}

/// The `server_startup` verdicts judged again, by their index: on the stage's own server, or
/// (a `server` block without configurations) on the run's one start.
fn startup_verdicts(results: &Results, cx: &sla::Context<'_>) -> Vec<(usize, sla::SlaVerdict)> {
    let started = results
        .provenance
        .as_ref()
        .and_then(|p| p.started_server.as_ref());
    let mut out = Vec::new();
    for (i, v) in results.sla.iter().enumerate() {
        if v.assertion.metric != sla::Metric::Count(crate::metrics::CountMetric::ServerStartup) {
            continue;
        }
        let Some(stage) = v
            .stage
            .as_ref()
            .and_then(|name| results.stages.iter().find(|s| &s.name == name))
        else {
            continue;
        };
        let mut on = stage.clone();
        if on.server.is_none()
            && let Some(s) = started
        {
            on.server = Some(crate::metrics::StageServer {
                config: String::new(),
                command: s.command.clone(),
                pid: s.pid,
                startup_ms: s.startup_ms,
                restarted: true,
            });
        }
        let judged = sla::judge_one(&v.assertion, &on, cx);
        out.push((
            i,
            sla::SlaVerdict {
                gates: v.gates,
                ..judged
            },
        ));
    }
    out
}
