//! A stage's latency histograms kept whole in its summary (and so in `results.json`), encoded
//! with [`crate::stats::hist`], so that confidence intervals, `compare`'s bootstrap and any
//! percentile can be computed from a stored result exactly as from the live run. `Dist` stays
//! the readable summary; these are the data behind it.

use hdrhistogram::Histogram;

use super::latency::LatencyMetric;
use super::per_metric::{MetricSet, PerMetric, PerTurnRecorded, Recorded};
use crate::stats::{StatsError, hist};

/// Every latency histogram of a stage, each as `stats::hist::encode` writes it: base64 of the HDR
/// V2 deflate form. Recorded values are **microseconds** (1 µs .. 1 day, 3 significant
/// digits); the keys end in `_ms` after the `latency` fields they back.
pub type StageHistograms = PerMetric<String, Recorded>;

/// A turn index's histograms (µs, as [`StageHistograms`]) of the metrics kept per turn.
pub type TurnHistograms = PerMetric<String, PerTurnRecorded>;

/// Encoding and decoding a set of histograms. A trait because [`PerMetric`] is the
/// vocabulary's (`infermeter-words`), which does not depend on the statistics crate.
pub trait HistogramCodec: Sized {
    /// Encodes the histogram `get` gives for each metric of the set.
    fn encode<'a>(get: impl Fn(LatencyMetric) -> &'a Histogram<u64>) -> Result<Self, StatsError>;

    /// The histogram of a metric, in µs; `None` for a metric the set does not keep, or one
    /// this result has none of (a metric added after it was written).
    fn decode(&self, metric: LatencyMetric) -> Option<Result<Histogram<u64>, StatsError>>;
}

impl<S: MetricSet> HistogramCodec for PerMetric<String, S> {
    fn encode<'a>(get: impl Fn(LatencyMetric) -> &'a Histogram<u64>) -> Result<Self, StatsError> {
        Self::try_from_fn(|m| hist::encode(get(m)))
    }

    fn decode(&self, metric: LatencyMetric) -> Option<Result<Histogram<u64>, StatsError>> {
        self.get(metric)
            .filter(|h| !h.is_empty())
            .map(|h| hist::decode(h))
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::ChaCha8Rng;
    use rand::{RngExt, SeedableRng};

    use super::*;
    use crate::metrics::{
        Dist, ErrorKind, GoodputSlo, PlannedLoad, RequestRecord, StageAggregator, StageClock,
        StageSummary, ValidityRules, dist,
    };

    /// A request of `turn` whose latencies come from `rng`: TTFT 20..200 ms, 1..40 gaps of
    /// 5..30 ms, a late send now and then, a failure one time in 20.
    fn record(rng: &mut ChaCha8Rng, index: u64, turn: u32) -> RequestRecord {
        let scheduled = index * 50_000_000;
        let ttft = rng.random_range(20_000_000..200_000_000u64);
        let gaps: Vec<u32> = (0..rng.random_range(0..40))
            .map(|_| rng.random_range(5_000..30_000))
            .collect();
        let first = scheduled + ttft;
        let done = first + gaps.iter().map(|g| u64::from(*g) * 1_000).sum::<u64>();
        let lag = if rng.random_bool(0.1) {
            rng.random_range(0..3_000_000)
        } else {
            20_000
        };
        RequestRecord {
            index,
            turn,
            scheduled_ns: scheduled,
            sent_ns: scheduled + lag,
            done_ns: done,
            first_token_ns: Some(first),
            first_answer_ns: Some(first + rng.random_range(0..5_000_000)),
            chunks: gaps.len() as u32 + 1,
            output_tokens: gaps.len() as u32 + 1,
            itl_us: gaps,
            input_tokens: 100,
            error: rng.random_bool(0.05).then_some(ErrorKind::Timeout),
            // The third turn of each session completes it as an agentic task would.
            task_ns: (turn == 2).then_some(done.saturating_sub(scheduled) + 100_000_000),
            ..RequestRecord::default()
        }
    }

    fn stage(records: u64) -> StageSummary {
        let mut rng = ChaCha8Rng::seed_from_u64(19);
        let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
        for i in 0..records {
            agg.record(&record(&mut rng, i / 3, (i % 3) as u32));
        }
        let clock = StageClock {
            wall_ns: 60_000_000_000,
            cores: 2,
            ..StageClock::default()
        };
        agg.finish(clock, &ValidityRules::default())
    }

    fn decoded(s: &StageSummary, m: LatencyMetric) -> Dist {
        dist(&s.histogram(m).expect("histograms stored").unwrap())
    }

    #[test]
    fn decoded_histograms_give_the_summary_exactly() {
        let s = stage(3_000);
        let l = &s.latency;
        assert!(l[LatencyMetric::Itl].count > 10_000 && s.requests.failed > 0);
        for (m, want) in l.iter() {
            // The intervals are read from the same histograms; the figures must match exactly.
            let want = Dist {
                intervals: None,
                ..*want
            };
            assert_eq!(decoded(&s, m), want, "{}", m.key());
        }
        let lag = decoded(&s, LatencyMetric::SendLag);
        let c = &s.client.send_lag_ms;
        assert_eq!((lag.p50, lag.p99, lag.max), (c.p50, c.p99, c.max));
        assert_eq!(lag.count, s.requests.sent);

        assert_eq!(s.per_turn.len(), 3);
        for t in &s.per_turn {
            let ttft = dist(&t.histogram(LatencyMetric::Ttft).unwrap().unwrap());
            let e2e = dist(&t.histogram(LatencyMetric::E2e).unwrap().unwrap());
            let want = (
                t.latency[LatencyMetric::Ttft],
                t.latency[LatencyMetric::E2e],
            );
            assert_eq!((ttft, e2e), want, "turn {}", t.turn);
            assert!(t.histogram(LatencyMetric::Itl).is_none());
        }
    }

    #[test]
    fn summaries_round_trip_through_json_and_old_ones_still_load() {
        let s = stage(300);
        let json = serde_json::to_value(&s).unwrap();
        assert!(json["histograms"]["ttft_ms"].is_string());
        assert!(json["per_turn"][0]["histograms"]["e2e_ms"].is_string());
        let back: StageSummary = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, s);

        // The current format, without histograms.
        let mut old = json;
        old.as_object_mut().unwrap().remove("histograms");
        for t in old["per_turn"].as_array_mut().unwrap() {
            t.as_object_mut().unwrap().remove("histograms");
        }
        let back: StageSummary = serde_json::from_value(old.clone()).unwrap();
        assert!(back.histograms.is_none() && back.histogram(LatencyMetric::Ttft).is_none());
        assert!(back.per_turn[0].histogram(LatencyMetric::Ttft).is_none());
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            old,
            "absent stays absent"
        );
    }

    /// Issue 19: per-turn histograms kept 2 significant digits, so turns 0.3 % apart showed
    /// the same p50. They keep 3, like the stage's.
    #[test]
    fn turns_keep_three_significant_digits() {
        let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
        for (turn, ttft_us) in [(0u32, 100_000u64), (1, 100_300)] {
            agg.record(&RequestRecord {
                turn,
                first_token_ns: Some(ttft_us * 1_000),
                done_ns: ttft_us * 1_000 + 1,
                ..RequestRecord::default()
            });
        }
        let s = agg.finish(StageClock::default(), &ValidityRules::default());
        let p50 = |t: usize| s.per_turn[t].latency[LatencyMetric::Ttft].p50;
        let (a, b) = (p50(0), p50(1));
        assert!(
            a < b && (a - 100.0).abs() < 0.1 && (b - 100.3).abs() < 0.1,
            "{a} {b}"
        );
        let h = s.per_turn[0]
            .histogram(LatencyMetric::Ttft)
            .unwrap()
            .unwrap();
        assert_eq!(h.sigfig(), 3);
    }

    #[test]
    fn keys_match_the_latency_fields() {
        let s = stage(30);
        let json = serde_json::to_value(&s).unwrap();
        for m in LatencyMetric::ALL {
            assert!(json["histograms"][m.key()].is_string(), "{}", m.key());
            if m != LatencyMetric::SendLag {
                assert!(json["latency"][m.key()].is_object(), "{}", m.key());
            }
        }
    }
}
