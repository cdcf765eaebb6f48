//! Metrics per turn index of multi-turn sessions: counts and TTFT/E2E distributions (and their
//! whole histograms) for each turn index below [`MAX_TURN_INDICES`] (later turns count in the
//! stage totals only), so memory stays bounded whatever the sessions' length: 2 histograms of
//! 224 KiB (µs, 3 significant digits, as the stage's) per turn index seen.

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dist::Dist;
use super::histograms::HistogramCodec;
use super::histograms::TurnHistograms;
use super::latency::LatencyMetric;
use super::measure::{absorb, dist, histogram, record};
use super::per_metric::{MetricSet, PerMetric, PerTurn};
use super::record::RequestRecord;

/// Turn indices with their own metrics.
pub const MAX_TURN_INDICES: usize = 32;

/// One turn index of a stage's sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnSummary {
    /// 0 for a session's first request.
    pub turn: u32,
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// Mean input tokens of the successful requests (the history grows turn over turn).
    pub mean_input_tokens: f64,
    /// Prompt tokens the server served from its prefix cache over the prompt tokens of the
    /// turn's successful requests (`usage.prompt_tokens_details.cached_tokens`), 0..=1: how
    /// far the conversation so far was reused. Absent when no response said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_share: Option<f64>,
    /// Mean body size of the turn's successful requests, in bytes: what a turn sends (a
    /// resent history grows it turn over turn; a session the server keeps does not). Absent
    /// when no body was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_request_bytes: Option<f64>,
    /// A session the server keeps (`state="previous-response-id"`): mean prompt tokens the
    /// turn's successful requests carried themselves, where `mean_input_tokens` is what the
    /// server says it processed (the stored conversation with them). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_sent_input_tokens: Option<f64>,
    /// The distributions of the metrics kept per turn (`ttft_ms`, `e2e_ms`), members of the
    /// turn's object.
    #[serde(flatten)]
    pub latency: PerMetric<Dist, PerTurn>,
    /// The TTFT and E2E histograms whole (µs); absent from results written before they were
    /// kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<TurnHistograms>,
}

impl TurnSummary {
    /// The turn's histogram of a metric kept per turn (µs), decoded; `None` for other
    /// metrics, or when none is stored.
    pub fn histogram(
        &self,
        metric: LatencyMetric,
    ) -> Option<Result<Histogram<u64>, crate::stats::StatsError>> {
        self.histograms.as_ref()?.decode(metric)
    }
}

/// The requests of one slot (a turn index, a URL): counts, tokens, the prefix cache's
/// say, and the histograms of the metrics kept per slot.
pub(super) struct Tally {
    pub(super) sent: u64,
    pub(super) ok: u64,
    pub(super) failed: u64,
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) cached_tokens: u64,
    /// Ok requests whose response said how many prompt tokens were cached.
    pub(super) cache_reported: u64,
    /// The ok requests' body bytes, and how many of them had one measured.
    pub(super) request_bytes: u64,
    pub(super) bytes_reported: u64,
    /// The ok requests' own prompt tokens where a session the server keeps said, and how many.
    pub(super) sent_input_tokens: u64,
    pub(super) sent_reported: u64,
    /// Indexed by latency metric; only those kept per turn are filled.
    pub(super) hists: [Histogram<u64>; LatencyMetric::COUNT],
}

impl Tally {
    /// The slot `k` of `slots`, made (with those before it) when first seen.
    pub(super) fn slot(slots: &mut Vec<Tally>, k: usize) -> &mut Tally {
        while slots.len() <= k {
            slots.push(Tally {
                sent: 0,
                ok: 0,
                failed: 0,
                input_tokens: 0,
                output_tokens: 0,
                cached_tokens: 0,
                cache_reported: 0,
                request_bytes: 0,
                bytes_reported: 0,
                sent_input_tokens: 0,
                sent_reported: 0,
                hists: std::array::from_fn(|_| histogram()),
            });
        }
        &mut slots[k]
    }

    pub(super) fn record(&mut self, r: &RequestRecord) {
        self.sent += 1;
        if !r.ok() {
            self.failed += 1;
            return;
        }
        self.ok += 1;
        self.input_tokens += u64::from(r.input_tokens);
        self.output_tokens += u64::from(r.output_tokens);
        if let Some(c) = r.cached_tokens {
            self.cached_tokens += u64::from(c);
            self.cache_reported += 1;
        }
        if r.request_bytes > 0 {
            self.request_bytes = self.request_bytes.saturating_add(r.request_bytes);
            self.bytes_reported += 1;
        }
        if let Some(n) = r.sent_input_tokens {
            self.sent_input_tokens += u64::from(n);
            self.sent_reported += 1;
        }
        for m in PerTurn::metrics() {
            record(&mut self.hists[m as usize], m.measure(r));
        }
    }

    /// Takes in the same slot of another aggregator: sums and histograms add up.
    pub(super) fn merge(&mut self, o: &Tally) {
        self.sent += o.sent;
        self.ok += o.ok;
        self.failed += o.failed;
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cached_tokens += o.cached_tokens;
        self.cache_reported += o.cache_reported;
        self.request_bytes = self.request_bytes.saturating_add(o.request_bytes);
        self.bytes_reported += o.bytes_reported;
        self.sent_input_tokens += o.sent_input_tokens;
        self.sent_reported += o.sent_reported;
        for (h, oh) in self.hists.iter_mut().zip(&o.hists) {
            if !oh.is_empty() {
                absorb(h, oh);
            }
        }
    }

    /// Takes in another aggregator's slots, slot by slot (made where this one lacks them).
    pub(super) fn merge_slots(slots: &mut Vec<Tally>, other: &[Tally]) {
        for (k, o) in other.iter().enumerate() {
            Tally::slot(slots, k).merge(o);
        }
    }

    /// Mean body bytes and mean sent prompt tokens of the ok requests, where measured.
    fn sent_means(&self) -> (Option<f64>, Option<f64>) {
        let mean = |sum: u64, n: u64| (n > 0).then(|| sum as f64 / n as f64);
        (
            mean(self.request_bytes, self.bytes_reported),
            mean(self.sent_input_tokens, self.sent_reported),
        )
    }

    /// The share of prompt tokens served from cache, when any response said.
    pub(super) fn cached_share(&self) -> Option<f64> {
        cached_share(self.cache_reported, self.cached_tokens, self.input_tokens)
    }
}

/// Folds records by turn index; reports nothing for a stage without later turns.
#[derive(Default)]
pub(super) struct TurnAggregator {
    turns: Vec<Tally>,
    later_turns: bool,
}

impl TurnAggregator {
    pub(super) fn record(&mut self, r: &RequestRecord) {
        if r.depth > 0 {
            // A subagent's turns count by depth (`depths.rs`), not beside the root's.
            return;
        }
        self.later_turns |= r.turn > 0;
        let k = r.turn as usize;
        if k >= MAX_TURN_INDICES {
            return;
        }
        Tally::slot(&mut self.turns, k).record(r);
    }

    /// Takes in another aggregator's turns.
    pub(super) fn merge(&mut self, other: &TurnAggregator) {
        self.later_turns |= other.later_turns;
        Tally::merge_slots(&mut self.turns, &other.turns);
    }

    pub(super) fn finish(self) -> Vec<TurnSummary> {
        if !self.later_turns {
            return Vec::new();
        }
        self.turns
            .iter()
            .enumerate()
            .map(|(k, t)| TurnSummary {
                turn: k as u32,
                sent: t.sent,
                ok: t.ok,
                failed: t.failed,
                mean_input_tokens: if t.ok == 0 {
                    0.0
                } else {
                    t.input_tokens as f64 / t.ok as f64
                },
                cached_share: t.cached_share(),
                mean_request_bytes: t.sent_means().0,
                mean_sent_input_tokens: t.sent_means().1,
                latency: PerMetric::from_fn(|m| dist(&t.hists[m as usize])),
                histograms: TurnHistograms::encode(|m| &t.hists[m as usize]).ok(),
            })
            .collect()
    }
}

/// The share of prompt tokens served from cache, when any response said.
pub fn cached_share(said: u64, cached: u64, input: u64) -> Option<f64> {
    (said > 0 && input > 0).then(|| (cached as f64 / input as f64).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(turn: u32, ok: bool, e2e_ms: u64) -> RequestRecord {
        RequestRecord {
            turn,
            scheduled_ns: 1_000_000,
            done_ns: 1_000_000 + e2e_ms * 1_000_000,
            first_token_ns: Some(1_000_000 + e2e_ms * 500_000),
            input_tokens: 10 * (turn + 1),
            error: (!ok).then_some(super::super::ErrorKind::Timeout),
            ..RequestRecord::default()
        }
    }

    #[test]
    fn single_turn_stages_report_nothing() {
        let mut a = TurnAggregator::default();
        a.record(&rec(0, true, 10));
        assert!(a.finish().is_empty());
    }

    #[test]
    fn folds_by_turn_index() {
        let mut a = TurnAggregator::default();
        for turn in 0..3 {
            a.record(&rec(turn, true, 10 * u64::from(turn + 1)));
        }
        a.record(&rec(1, false, 5));
        a.record(&rec(40, true, 5));
        let s = a.finish();
        assert_eq!(s.len(), 3);
        assert_eq!((s[1].sent, s[1].ok, s[1].failed), (2, 1, 1));
        let e2e = s[2].latency[LatencyMetric::E2e];
        assert_eq!(e2e.count, 1);
        assert!((e2e.p50 - 30.0).abs() < 0.5);
        assert!((s[1].mean_input_tokens - 20.0).abs() < 1e-9);
        assert_eq!(s[1].cached_share, None, "no response said");
    }

    #[test]
    fn cached_share_is_per_turn_index() {
        let mut a = TurnAggregator::default();
        for turn in 0..3u32 {
            let mut r = rec(turn, true, 10);
            r.cached_tokens = Some(5 * turn);
            a.record(&r);
        }
        let s = a.finish();
        let shares: Vec<Option<f64>> = s.iter().map(|t| t.cached_share).collect();
        // Inputs 10, 20, 30 tokens; cached 0, 5, 10.
        assert_eq!(shares[0], Some(0.0));
        assert!((shares[1].unwrap() - 0.25).abs() < 1e-9);
        assert!((shares[2].unwrap() - 10.0 / 30.0).abs() < 1e-9);
    }

    #[test]
    fn request_bytes_and_sent_tokens_are_means_of_the_ok_requests_that_had_them() {
        let mut a = TurnAggregator::default();
        for (turn, bytes, sent) in [(0, 100, None), (1, 300, Some(7)), (1, 500, Some(9))] {
            let mut r = rec(turn, true, 10);
            r.request_bytes = bytes;
            r.sent_input_tokens = sent;
            a.record(&r);
        }
        let mut failed = rec(1, false, 10);
        failed.request_bytes = 9_999;
        a.record(&failed);
        let s = a.finish();
        assert_eq!(s[0].mean_request_bytes, Some(100.0));
        assert_eq!(
            s[0].mean_sent_input_tokens, None,
            "a resent session says nothing"
        );
        assert_eq!(s[1].mean_request_bytes, Some(400.0));
        assert_eq!(s[1].mean_sent_input_tokens, Some(8.0));
    }
}
