//! The validator's rules for speculative decoding (schema 3): the responses' counts of a stage
//! (`stages[].spec`) are counts a run can reach, with no more accepted than proposed; the
//! server's figures (`telemetry.stages[].servers[].spec`) are what the run writes: shares in
//! 0..=1, a mean acceptance length of at least one token, counts at least 0.

use super::Checker;
use crate::metrics::StageSummary;
use crate::telemetry::{MAX_DRAFT_POSITIONS, TelemetryReport};

impl Checker {
    pub(super) fn spec(&mut self, at: &str, s: &StageSummary) {
        let Some(c) = &s.spec else { return };
        let at = format!("{at}.spec");
        self.count(&format!("{at}.requests"), c.requests);
        self.at_most(
            &format!("{at}.requests"),
            c.requests,
            s.requests.ok,
            "the stage's ok requests",
        );
        self.at_most(
            &format!("{at}.accepted_tokens"),
            c.accepted_tokens,
            c.draft_tokens,
            "the draft tokens",
        );
    }

    pub(super) fn telemetry_spec(&mut self, t: &TelemetryReport) {
        for (i, stage) in t.stages.iter().enumerate() {
            for (j, server) in stage.servers.iter().enumerate() {
                let Some(spec) = &server.spec else { continue };
                let at = format!("telemetry.stages[{i}].servers[{j}].spec");
                for (name, v) in [
                    ("drafts", spec.drafts),
                    ("draft_tokens", spec.draft_tokens),
                    ("accepted_tokens", spec.accepted_tokens),
                ] {
                    if let Some(v) = v {
                        self.non_negative(&format!("{at}.{name}"), v);
                    }
                }
                if let Some(r) = spec.acceptance_rate {
                    self.share(&format!("{at}.acceptance_rate"), r);
                }
                if let Some(l) = spec.acceptance_length
                    && !(l.is_finite() && l >= 1.0)
                {
                    self.fail(
                        format!("{at}.acceptance_length"),
                        l,
                        "at least 1 token a step",
                    );
                }
                let per_pos = &spec.acceptance_rate_per_position;
                if per_pos.len() > MAX_DRAFT_POSITIONS {
                    self.fail(
                        format!("{at}.acceptance_rate_per_position"),
                        per_pos.len(),
                        format!("more than {MAX_DRAFT_POSITIONS} positions"),
                    );
                }
                for (k, r) in per_pos.iter().enumerate() {
                    self.share(&format!("{at}.acceptance_rate_per_position[{k}]"), *r);
                }
            }
        }
    }
}
