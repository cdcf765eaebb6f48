//! Whether a running `until-decided` stage may stop: every assertion that holds it open
//! ([`super::decides_stage`]) is decided on its confidence sequence, judged as its verdict
//! will be. Apart from `sequential.rs`, which the verdicts themselves use.

use super::evaluate::{Context, judge_one};
use super::grammar::ScopedAssertion;
use super::sequential::decides_stage;
use super::verdict::SlaOutcome;
use crate::metrics::StageSummary;

/// Whether every assertion that holds `stage` open is decided on its numbers so far: the
/// stage may stop sending. Each is judged by [`judge_one`], the trust rule included: on an
/// untrusted stage it is decided only where its verdict will be (a flag that could not have
/// moved it, or a failure that holds net of the client).
pub fn all_decided(assertions: &[ScopedAssertion], stage: &StageSummary, cx: &Context<'_>) -> bool {
    let mut any = false;
    for a in assertions {
        if a.stage.as_ref().is_some_and(|s| s != &stage.name) || !decides_stage(&a.assertion) {
            continue;
        }
        any = true;
        if judge_one(&a.assertion, stage, cx).outcome == SlaOutcome::Inconclusive {
            return false;
        }
    }
    any
}
