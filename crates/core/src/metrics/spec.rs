//! Speculative decoding as the responses themselves report it: llama.cpp's per-request
//! `timings.draft_n` (draft tokens proposed) and `timings.draft_n_accepted`, summed over a
//! stage's successful requests ([`DraftCounts`]). The server's own counters over the stage are
//! telemetry's (`telemetry::SpecStageSummary`); where both are read, the run notes a stage
//! whose two disagree ([`disagreement`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ServerTimings;

/// Draft tokens the stage's responses said were proposed and accepted. *Added in schema 3.*
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DraftCounts {
    /// Successful requests whose timings carried both counters (and fewer accepted than
    /// proposed: a response that says otherwise is left out).
    pub requests: u64,
    pub draft_tokens: u64,
    pub accepted_tokens: u64,
}

impl DraftCounts {
    /// One successful request's timings.
    pub(super) fn record(&mut self, t: &ServerTimings) {
        if let (Some(d), Some(a)) = (t.draft_n, t.draft_n_accepted)
            && a <= d
        {
            self.requests += 1;
            self.draft_tokens = self.draft_tokens.saturating_add(d);
            self.accepted_tokens = self.accepted_tokens.saturating_add(a);
        }
    }

    /// Takes in another aggregator's counts.
    pub(super) fn merge(&mut self, o: &DraftCounts) {
        self.requests = self.requests.saturating_add(o.requests);
        self.draft_tokens = self.draft_tokens.saturating_add(o.draft_tokens);
        self.accepted_tokens = self.accepted_tokens.saturating_add(o.accepted_tokens);
    }

    /// The sum of several parts' counts (shards, rounds); `None` when none has any.
    pub fn sum<'a>(parts: impl Iterator<Item = Option<&'a DraftCounts>>) -> Option<DraftCounts> {
        parts.flatten().copied().reduce(|mut a, b| {
            a.merge(&b);
            a
        })
    }

    /// Accepted over proposed, 0..=1; `None` when nothing was proposed.
    pub fn acceptance_rate(&self) -> Option<f64> {
        (self.draft_tokens > 0).then(|| self.accepted_tokens as f64 / self.draft_tokens as f64)
    }
}

/// How far apart the two acceptance rates may be (a share) before the stage is noted.
pub const SPEC_RATE_TOLERANCE: f64 = 0.05;

/// How far apart the two counts of draft tokens may be (relative) before the stage is noted.
pub const SPEC_COUNT_TOLERANCE: f64 = 0.10;

/// The note when the responses' counters (`client`) and the server's over the stage
/// (`server_proposed`, `server_accepted`) disagree beyond the tolerances; `None` when they
/// agree or either has nothing to compare.
pub fn disagreement(
    client: &DraftCounts,
    server_proposed: f64,
    server_accepted: f64,
) -> Option<String> {
    let mine = client.acceptance_rate()?;
    if !(server_proposed > 0.0 && server_proposed.is_finite() && server_accepted.is_finite()) {
        return None;
    }
    let theirs = server_accepted / server_proposed;
    let proposed = client.draft_tokens as f64;
    let count_off = (proposed - server_proposed).abs() / server_proposed.max(proposed);
    if (mine - theirs).abs() <= SPEC_RATE_TOLERANCE && count_off <= SPEC_COUNT_TOLERANCE {
        return None;
    }
    Some(format!(
        "speculative decoding: the responses' counters (timings: {} of {} draft tokens \
         accepted, {:.1}%) and the server's /metrics over the stage ({} of {}, {:.1}%) \
         disagree beyond {:.0} points or {:.0}% of the tokens; another client may have \
         shared the server, or one of the counts is wrong",
        client.accepted_tokens,
        client.draft_tokens,
        mine * 100.0,
        server_accepted,
        server_proposed,
        theirs * 100.0,
        SPEC_RATE_TOLERANCE * 100.0,
        SPEC_COUNT_TOLERANCE * 100.0,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timings(d: Option<u64>, a: Option<u64>) -> ServerTimings {
        ServerTimings {
            draft_n: d,
            draft_n_accepted: a,
            ..ServerTimings::default()
        }
    }

    #[test]
    fn sums_what_responses_say_and_leaves_out_nonsense() {
        let mut c = DraftCounts::default();
        c.record(&timings(Some(12), Some(9)));
        c.record(&timings(Some(8), Some(3)));
        c.record(&timings(Some(1), Some(5)));
        c.record(&timings(None, Some(5)));
        c.record(&timings(Some(u64::MAX), Some(0)));
        assert_eq!(c.requests, 3);
        assert_eq!(c.accepted_tokens, 12);
        assert_eq!(c.draft_tokens, u64::MAX);
        assert!(DraftCounts::default().acceptance_rate().is_none());
    }

    #[test]
    fn a_disagreement_beyond_the_tolerance_is_noted() {
        let c = DraftCounts {
            requests: 10,
            draft_tokens: 200,
            accepted_tokens: 150,
        };
        assert_eq!(disagreement(&c, 200.0, 150.0), None);
        assert_eq!(disagreement(&c, 210.0, 155.0), None);
        let note = disagreement(&c, 200.0, 100.0).expect("75% against 50%");
        assert!(
            note.contains("150 of 200") && note.contains("50.0%"),
            "{note}"
        );
        assert!(disagreement(&c, 400.0, 300.0).is_some(), "twice the tokens");
        assert_eq!(disagreement(&c, 0.0, 0.0), None);
        assert_eq!(disagreement(&c, f64::NAN, 1.0), None);
    }
}
