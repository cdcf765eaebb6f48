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
        passed: gate.outcome == SlaOutcome::Pass && !stopped_early,
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
        },
        warmup: output.warmup.clone(),
        stages: output.stages.clone(),
        sla: verdicts,
        telemetry: output.telemetry.clone(),
        searches: output.searches.clone(),
        frontiers: crate::metrics::frontiers(&output.stages),
        provenance: None,
        shards: None,
    }
}
