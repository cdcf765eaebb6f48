//! `abort-on-fail`: the assertions that stop a run as soon as they fail. They are judged while
//! their stage runs, on its summary so far (about once a second), once the stage has run for
//! the grace period and the assertion's metric has the minimum number of samples (k6's
//! `abortOnFail` with `delayAbortEval`); and once more on the stage's final summary. Each
//! judgement is the ordinary one (intervals, untrusted stages inconclusive), so a stage is
//! stopped only when its numbers show the failure, never on an undecided verdict.

use super::evaluate::{Context, judge_one};
use super::grammar::ScopedAssertion;
use super::verdict::SlaOutcome;
use crate::metrics::{Shape, StageSummary};

/// When a running stage's `abort-on-fail` assertions are judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AbortRule {
    /// Requests the stage must have completed first (failed ones included: a stage where
    /// every request fails is judged too, and fails).
    pub min_samples: u64,
    /// Seconds the stage must have run first.
    pub grace_s: f64,
}

impl Default for AbortRule {
    fn default() -> Self {
        AbortRule {
            min_samples: 20,
            grace_s: 0.0,
        }
    }
}

/// The first `abort-on-fail` assertion that fails on `stage`, as the message the aborted run
/// records. `live` is the rule for a stage still running (its summary so far); `None` judges a
/// finished stage. Telemetry metrics are known only after the run, and rates (requests or
/// tokens per second) only over the whole stage, so a running stage is not judged on them.
pub fn abort_verdict(
    assertions: &[ScopedAssertion],
    stage: &StageSummary,
    cx: &Context<'_>,
    live: Option<AbortRule>,
) -> Option<String> {
    for a in assertions {
        let metric = a.assertion.metric;
        if !a.abort_on_fail
            || metric.is_telemetry()
            || a.stage.as_ref().is_some_and(|s| s != &stage.name)
        {
            continue;
        }
        if let Some(rule) = live
            && (metric.kind().shape() == Shape::Rate
                || stage.wall_time_s < rule.grace_s
                || stage.requests.sent < rule.min_samples)
        {
            continue;
        }
        let v = judge_one(&a.assertion, stage, cx);
        if v.outcome == SlaOutcome::Fail {
            let when = if live.is_some() {
                format!(
                    " after {:.1} s, {} requests",
                    stage.wall_time_s, stage.requests.sent
                )
            } else {
                String::new()
            };
            let unit = v.unit();
            return Some(format!(
                "aborted: `{}` failed on stage `{}`{when} (observed {:.3} {unit}, threshold {:.3} \
                 {unit})",
                v.assertion, stage.name, v.observed, v.threshold
            ));
        }
    }
    None
}
