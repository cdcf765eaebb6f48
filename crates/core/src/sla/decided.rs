//! Whether a running `until-decided` stage may stop: every assertion that holds it open
//! ([`super::decides_stage`]) is decided on its confidence sequence, judged as its verdict
//! will be. Apart from `sequential.rs`, which the verdicts themselves use.

use super::evaluate::{Context, judge_one};
use super::grammar::ScopedAssertion;
use super::sequential::decides_stage;
use super::verdict::{SlaOutcome, SlaVerdict};
use crate::metrics::{LookOutcome, LookVerdict, StageSummary};

/// Whether every assertion that holds `stage` open is decided on its numbers so far: the
/// stage may stop sending. Each is judged by [`judge_one`], the trust rule included: on an
/// untrusted stage it is decided only where its verdict will be (a flag that could not have
/// moved it, or a failure that holds net of the client).
pub fn all_decided(assertions: &[ScopedAssertion], stage: &StageSummary, cx: &Context<'_>) -> bool {
    decided(&held_verdicts(assertions, stage, cx))
}

/// The verdict of every assertion that holds `stage` open, as a look records it: judged
/// as [`all_decided`] judges them. The stage may stop when there is one at least and none is
/// inconclusive ([`decided`]).
pub fn held_verdicts(
    assertions: &[ScopedAssertion],
    stage: &StageSummary,
    cx: &Context<'_>,
) -> Vec<LookVerdict> {
    assertions
        .iter()
        .filter(|a| a.stage.as_ref().is_none_or(|s| s == &stage.name))
        .filter(|a| decides_stage(&a.assertion))
        .map(|a| look_verdict(&judge_one(&a.assertion, stage, cx), cx.policy.confidence))
        .collect()
}

/// Whether a look's verdicts decide its stage: one at least, none inconclusive.
pub fn decided(verdicts: &[LookVerdict]) -> bool {
    !verdicts.is_empty()
        && verdicts
            .iter()
            .all(|v| v.outcome != LookOutcome::Inconclusive)
}

fn look_verdict(v: &SlaVerdict, confidence: f64) -> LookVerdict {
    LookVerdict {
        expr: v.assertion.expr.clone(),
        outcome: match v.outcome {
            SlaOutcome::Pass => LookOutcome::Pass,
            SlaOutcome::Fail => LookOutcome::Fail,
            SlaOutcome::Inconclusive => LookOutcome::Inconclusive,
        },
        observed: v.observed,
        low: v.interval.map(|i| i.low),
        high: v.interval.map(|i| i.high),
        confidence: v.interval.map_or(confidence, |i| i.confidence),
    }
}
