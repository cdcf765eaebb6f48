//! SLAs on load profiles. A search probe passes when every assertion scoped to the search's
//! stage, and every scenario-level one, holds on it. After the run, a search's stage is judged
//! on its answer probe (no passing rate: its scoped assertions fail as "did not run"), probes
//! themselves are not judged again (failing probes are how a search works), and an assertion
//! scoped to a sweep applies to every point of the sweep.

use super::grammar::ScopedAssertion;
use super::{Context, SlaOutcome, judge_one};
use crate::metrics::{PointKind, SearchSummary, StageSummary};

/// The expressions that failed on a probe of search `group` (empty: it passed). Probes are
/// judged on their values (see [`super::Policy::point`]): the search reports a bracket, and
/// its answer stage is judged with intervals after the run.
pub fn probe_failures(
    assertions: &[ScopedAssertion],
    group: &str,
    stage: &StageSummary,
    cx: &Context<'_>,
) -> Vec<String> {
    let cx = Context {
        policy: cx.policy.point(),
        ..*cx
    };
    let cx = &cx;
    assertions
        .iter()
        .filter(|a| a.stage.as_deref().is_none_or(|s| s == group))
        // The curve is the search's answer, not a probe's.
        .filter(|a| a.assertion.metric.curve().is_none() && !a.assertion.best)
        .map(|a| judge_one(&a.assertion, stage, cx))
        .filter(|v| v.outcome != SlaOutcome::Pass)
        .map(|v| v.assertion.to_string())
        .collect()
}

/// The assertions and stages the final SLA evaluation sees, with load profiles resolved.
pub fn profile_inputs(
    assertions: &[ScopedAssertion],
    stages: &[StageSummary],
    searches: &[SearchSummary],
) -> (Vec<ScopedAssertion>, Vec<StageSummary>) {
    let is_probe = |s: &StageSummary| {
        s.profile
            .as_ref()
            .is_some_and(|p| p.point.kind == PointKind::Probe)
    };
    let mut judged: Vec<StageSummary> = stages.iter().filter(|s| !is_probe(s)).cloned().collect();
    for search in searches {
        let answer = if let Some(clients) = search.answer_clients {
            search
                .probes
                .iter()
                .find(|p| p.passed && p.clients == Some(clients))
                .and_then(|probe| stages.iter().find(|s| s.name == probe.stage))
        } else {
            search.answer_rate_per_s.and_then(|rate| {
                let probe = search
                    .probes
                    .iter()
                    .find(|p| p.passed && p.rate_per_s == rate)?;
                stages.iter().find(|s| s.name == probe.stage)
            })
        };
        if let Some(stage) = answer {
            judged.push(StageSummary {
                name: search.group.clone(),
                ..stage.clone()
            });
        }
    }
    let mut out = Vec::with_capacity(assertions.len());
    for a in assertions {
        let points: Vec<&StageSummary> = match &a.stage {
            Some(group) => judged
                .iter()
                .filter(|s| {
                    s.profile.as_ref().is_some_and(|p| {
                        p.point.kind == PointKind::Sweep && &p.point.group == group
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        if points.is_empty() {
            out.push(a.clone());
        } else {
            out.extend(points.iter().map(|s| ScopedAssertion {
                stage: Some(s.name.clone()),
                ..a.clone()
            }));
        }
    }
    (out, judged)
}
