//! `abort-on-fail`: the assertions that stop a run as soon as they fail. They are judged while
//! their stage runs, on its summary so far (about once a second), once the stage has run for
//! the grace period and the assertion's metric has the minimum number of samples (k6's
//! `abortOnFail` with `delayAbortEval`); and once more on the stage's final summary. Each
//! judgement is the ordinary one (intervals, untrusted stages inconclusive), so a stage is
//! stopped only when its numbers show the failure, never on an undecided verdict.

use std::fmt;

use super::evaluate::{Context, judge_one};
use super::grammar::{Assertion, ScopedAssertion};
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

/// An `abort-on-fail` assertion that failed and stopped the run: which, on which stage, with
/// what numbers (in the assertion's unit), and — when it was judged while the stage ran — how
/// far the stage had got. Shown (and recorded in the result's `error`) as
/// ``aborted: `ttft.p95 < 200ms` failed on stage `load` after 3.0 s, 120 requests (observed …)``.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct Abort {
    pub assertion: Assertion,
    pub stage: String,
    pub observed: f64,
    pub threshold: f64,
    /// Judged on a running stage: its seconds and requests so far.
    pub live: Option<(f64, u64)>,
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = self.assertion.unit();
        write!(
            f,
            "aborted: `{}` failed on stage `{}`",
            self.assertion.expr, self.stage
        )?;
        if let Some((secs, sent)) = self.live {
            write!(f, " after {secs:.1} s, {sent} requests")?;
        }
        write!(
            f,
            " (observed {:.3} {unit}, threshold {:.3} {unit})",
            self.observed, self.threshold
        )
    }
}

/// The first `abort-on-fail` assertion that fails on `stage`. `live` is the rule for a stage still running (its summary so far); `None` judges a
/// finished stage. Telemetry metrics are known only after the run, and rates (requests or
/// tokens per second) only over the whole stage, so a running stage is not judged on them.
pub fn abort_verdict(
    assertions: &[ScopedAssertion],
    stage: &StageSummary,
    cx: &Context<'_>,
    live: Option<AbortRule>,
) -> Option<Abort> {
    for a in assertions {
        let metric = a.assertion.metric;
        if !a.abort_on_fail
            || metric.is_telemetry()
            || metric.curve().is_some()
            || a.assertion.best
            || a.stage.as_ref().is_some_and(|s| s != &stage.name)
        {
            continue;
        }
        // A steady-state window is found once the stage has ended.
        if let Some(rule) = live
            && (metric.kind().shape() == Shape::Rate
                || a.assertion.window != super::grammar::Window::Stage
                || stage.wall_time_s < rule.grace_s
                || stage.requests.sent < rule.min_samples)
        {
            continue;
        }
        let v = judge_one(&a.assertion, stage, cx);
        if v.outcome == SlaOutcome::Fail {
            return Some(Abort {
                assertion: a.assertion.clone(),
                stage: stage.name.clone(),
                observed: v.observed,
                threshold: v.threshold,
                live: live.map(|_| (stage.wall_time_s, stage.requests.sent)),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_abort_says_which_assertion_failed_where_and_by_how_much() {
        let mut abort = Abort {
            assertion: "ttft.p95 < 200ms".parse().unwrap(),
            stage: "load".into(),
            observed: 250.25,
            threshold: 200.0,
            live: None,
        };
        assert_eq!(
            abort.to_string(),
            "aborted: `ttft.p95 < 200ms` failed on stage `load` (observed 250.250 ms, threshold \
             200.000 ms)"
        );
        abort.live = Some((3.04, 120));
        assert_eq!(
            abort.to_string(),
            "aborted: `ttft.p95 < 200ms` failed on stage `load` after 3.0 s, 120 requests \
             (observed 250.250 ms, threshold 200.000 ms)"
        );
    }
}
