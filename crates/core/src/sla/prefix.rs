//! The final verdict of an `until-decided` stage where its whole sequence is undecided: the
//! complete prefix's decision at the stop, as `results.json` keeps it
//! (`until_decided.prefix`). Both sequences cover the truth on one event of probability at
//! least 1 − α, on which neither decides wrongly, so taking the prefix's decision where the
//! whole stage has none keeps the guarantee (`docs/statistics.md`). Reading it from the
//! stage's record, not from the run's memory, makes the verdict recomputable from the file.

use super::grammar::Assertion;
use super::sequential::decides_stage;
use super::verdict::{Across, Basis, SlaOutcome, SlaVerdict, VerdictInterval};
use crate::metrics::{LookOutcome, StageSummary};

/// Replaces an inconclusive `verdict` of `assertion` on `stage` with the complete prefix's
/// decision at the stop, where the stage recorded one.
pub(super) fn fall_back(assertion: &Assertion, stage: &StageSummary, verdict: &mut SlaVerdict) {
    // The prefix was judged at a look, before the stage's end knew its host's flags (CPU
    // contention, steal): on a stage found untrusted, its decision might not hold net of
    // the client, so the whole stage's careful "undecided" stands.
    if verdict.outcome != SlaOutcome::Inconclusive
        || !decides_stage(assertion)
        || !stage.validity.trusted
    {
        return;
    }
    let Some(prefix) = stage.until_decided.as_ref().and_then(|u| u.prefix.as_ref()) else {
        return;
    };
    let Some(look) = prefix.verdicts.iter().find(|v| v.expr == assertion.expr) else {
        return;
    };
    let outcome = match look.outcome {
        LookOutcome::Pass => SlaOutcome::Pass,
        LookOutcome::Fail => SlaOutcome::Fail,
        LookOutcome::Inconclusive => return,
    };
    let m = prefix.requests;
    let whole = verdict
        .note
        .take()
        .unwrap_or_else(|| "the whole stage is undecided".into());
    verdict.set_outcome(outcome);
    verdict.observed = look.observed;
    verdict.interval = look.low.zip(look.high).map(|(low, high)| VerdictInterval {
        low,
        high,
        confidence: look.confidence,
        across: Across::Requests,
        sequential: true,
    });
    verdict.more = None;
    let basis = Basis::Prefix { requests: m };
    verdict.note = Some(format!(
        "{} (the stage stopped on them; over every request sent: {whole})",
        basis.sentence(outcome)
    ));
    verdict.basis = Some(basis);
}
