//! The validator's rules for an `until-decided` stage's looks (`until_decided.decided_by`,
//! `until_decided.prefix`, schema 3) and for a verdict taken from its complete prefix
//! (`basis.rule: prefix`): the prefix is a part of what the stage sent, its figures finite,
//! and a verdict on the prefix's basis is the prefix's recorded decision — so a file whose
//! final verdict could not be recomputed from it is refused.

use super::Checker;
use crate::metrics::{LookOutcome, StageSummary, UntilStop};
use crate::sla::{Basis, SlaOutcome, SlaVerdict};

impl Checker {
    pub(super) fn until(&mut self, at: &str, s: &StageSummary) {
        let Some(u) = &s.until_decided else { return };
        let at = format!("{at}.until_decided");
        if let Some(by) = u.decided_by
            && u.stopped != UntilStop::Decided
        {
            self.fail(
                format!("{at}.decided_by"),
                by.as_str(),
                format!("the stage stopped `{}`, not decided", u.stopped.as_str()),
            );
        }
        let Some(p) = &u.prefix else { return };
        let at = format!("{at}.prefix");
        self.count(&format!("{at}.requests"), p.requests);
        self.at_most(
            &format!("{at}.requests"),
            p.requests,
            s.requests.sent,
            "the stage sent",
        );
        for (i, v) in p.verdicts.iter().enumerate() {
            let at = format!("{at}.verdicts[{i}]");
            if !v.observed.is_finite() {
                self.fail(
                    format!("{at}.observed"),
                    v.observed,
                    "must be a finite number",
                );
            }
            if !(v.confidence > 0.0 && v.confidence < 1.0) {
                self.fail(
                    format!("{at}.confidence"),
                    v.confidence,
                    "must lie in (0, 1)",
                );
            }
            for (name, x) in [("low", v.low), ("high", v.high)] {
                if x.is_some_and(|x| !x.is_finite()) {
                    self.fail(format!("{at}.{name}"), x.unwrap_or(0.0), "must be finite");
                }
            }
            if let (Some(low), Some(high)) = (v.low, v.high)
                && low > high
            {
                self.fail(format!("{at}.low"), low, format!("above high ({high})"));
            }
        }
    }

    /// A verdict on the prefix's basis: its stage's prefix, as long, decided it so.
    pub(super) fn prefix_basis(&mut self, at: &str, v: &SlaVerdict, stages: &[StageSummary]) {
        let Some(Basis::Prefix { requests }) = v.basis else {
            return;
        };
        let prefix = stages
            .iter()
            .find(|s| v.stage.as_deref() == Some(s.name.as_str()))
            .and_then(|s| s.until_decided.as_ref())
            .and_then(|u| u.prefix.as_ref());
        let Some(prefix) = prefix else {
            self.fail(
                format!("{at}.basis.requests"),
                requests,
                "its stage records no complete prefix (`until_decided.prefix`)",
            );
            return;
        };
        if prefix.requests != requests {
            self.fail(
                format!("{at}.basis.requests"),
                requests,
                format!("the stage's prefix is {} requests long", prefix.requests),
            );
        }
        let recorded = prefix
            .verdicts
            .iter()
            .find(|p| p.expr == v.assertion.expr)
            .map(|p| p.outcome);
        let same = matches!(
            (recorded, v.outcome),
            (Some(LookOutcome::Pass), SlaOutcome::Pass)
                | (Some(LookOutcome::Fail), SlaOutcome::Fail)
        );
        if !same {
            self.fail(
                format!("{at}.outcome"),
                v.outcome.as_str(),
                "not the decision its stage's prefix recorded for this assertion",
            );
        }
    }
}
