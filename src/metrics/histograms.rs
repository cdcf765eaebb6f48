//! A stage's latency histograms kept whole in its summary (and so in `results.json`), encoded
//! with [`crate::stats::hist`], so that confidence intervals, `compare`'s bootstrap and any
//! percentile can be computed from a stored result exactly as from the live run. `Dist` stays
//! the readable summary; these are the data behind it.

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::{StatsError, hist};

/// The latency metrics a stage keeps a histogram of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LatencyMetric {
    Ttft,
    Itl,
    Tpot,
    E2e,
    Ntpot,
    Ttfa,
    SendLag,
}

impl LatencyMetric {
    pub const ALL: [LatencyMetric; 7] = [
        LatencyMetric::Ttft,
        LatencyMetric::Itl,
        LatencyMetric::Tpot,
        LatencyMetric::E2e,
        LatencyMetric::Ntpot,
        LatencyMetric::Ttfa,
        LatencyMetric::SendLag,
    ];

    /// Its key in `latency`, `histograms` (and `client` for send lag): `ttft_ms`…
    pub fn key(self) -> &'static str {
        match self {
            LatencyMetric::Ttft => "ttft_ms",
            LatencyMetric::Itl => "itl_ms",
            LatencyMetric::Tpot => "tpot_ms",
            LatencyMetric::E2e => "e2e_ms",
            LatencyMetric::Ntpot => "ntpot_ms",
            LatencyMetric::Ttfa => "ttfa_ms",
            LatencyMetric::SendLag => "send_lag_ms",
        }
    }
}

/// Every latency histogram of a stage, each as `stats::hist::encode` writes it: base64 of the HDR
/// V2 deflate form. Recorded values are **microseconds** (1 µs .. 1 day, 3 significant
/// digits); the keys end in `_ms` after the `latency` fields they back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageHistograms {
    pub ttft_ms: String,
    pub itl_ms: String,
    pub tpot_ms: String,
    pub e2e_ms: String,
    pub ntpot_ms: String,
    pub ttfa_ms: String,
    pub send_lag_ms: String,
}

impl StageHistograms {
    /// Encodes the histogram `get` gives for each metric.
    pub fn encode<'a>(
        get: impl Fn(LatencyMetric) -> &'a Histogram<u64>,
    ) -> Result<StageHistograms, StatsError> {
        let e = |m| hist::encode(get(m));
        Ok(StageHistograms {
            ttft_ms: e(LatencyMetric::Ttft)?,
            itl_ms: e(LatencyMetric::Itl)?,
            tpot_ms: e(LatencyMetric::Tpot)?,
            e2e_ms: e(LatencyMetric::E2e)?,
            ntpot_ms: e(LatencyMetric::Ntpot)?,
            ttfa_ms: e(LatencyMetric::Ttfa)?,
            send_lag_ms: e(LatencyMetric::SendLag)?,
        })
    }

    /// The encoded histogram of a metric.
    pub fn encoded(&self, metric: LatencyMetric) -> &str {
        match metric {
            LatencyMetric::Ttft => &self.ttft_ms,
            LatencyMetric::Itl => &self.itl_ms,
            LatencyMetric::Tpot => &self.tpot_ms,
            LatencyMetric::E2e => &self.e2e_ms,
            LatencyMetric::Ntpot => &self.ntpot_ms,
            LatencyMetric::Ttfa => &self.ttfa_ms,
            LatencyMetric::SendLag => &self.send_lag_ms,
        }
    }

    /// The histogram of a metric, in µs.
    pub fn decode(&self, metric: LatencyMetric) -> Result<Histogram<u64>, StatsError> {
        hist::decode(self.encoded(metric))
    }
}

/// A turn index's histograms (µs, as `StageHistograms`): TTFT and E2E, the metrics kept per
/// turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnHistograms {
    pub ttft_ms: String,
    pub e2e_ms: String,
}

impl TurnHistograms {
    pub fn encode(ttft: &Histogram<u64>, e2e: &Histogram<u64>) -> Result<Self, StatsError> {
        Ok(TurnHistograms {
            ttft_ms: hist::encode(ttft)?,
            e2e_ms: hist::encode(e2e)?,
        })
    }

    /// The histogram of TTFT or E2E; `None` for the metrics not kept per turn.
    pub fn decode(&self, metric: LatencyMetric) -> Option<Result<Histogram<u64>, StatsError>> {
        match metric {
            LatencyMetric::Ttft => Some(hist::decode(&self.ttft_ms)),
            LatencyMetric::E2e => Some(hist::decode(&self.e2e_ms)),
            _ => None,
        }
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
        assert!(l.itl_ms.count > 10_000 && s.requests.failed > 0);
        for (m, want) in [
            (LatencyMetric::Ttft, l.ttft_ms),
            (LatencyMetric::Itl, l.itl_ms),
            (LatencyMetric::Tpot, l.tpot_ms),
            (LatencyMetric::E2e, l.e2e_ms),
            (LatencyMetric::Ntpot, l.ntpot_ms),
            (LatencyMetric::Ttfa, l.ttfa_ms),
        ] {
            // The intervals are read from the same histograms; the figures must match exactly.
            let want = Dist {
                intervals: None,
                ..want
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
            assert_eq!((ttft, e2e), (t.ttft_ms, t.e2e_ms), "turn {}", t.turn);
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
        let (a, b) = (s.per_turn[0].ttft_ms.p50, s.per_turn[1].ttft_ms.p50);
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
