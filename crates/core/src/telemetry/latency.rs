//! A server's own latency histograms (vLLM's queue, prefill, decode, TTFT, inter-token and
//! per-output-token histograms; SGLang's equivalents), read from a scrape, and their increase
//! over a stage as distributions: the server's side of "where the latency went".
//!
//! A Prometheus histogram is cumulative since the server started, so a stage's distribution is
//! the difference between the scrape at its end and the one at its start (taken at the stage's
//! edges, see `record.rs`). Percentiles are interpolated linearly within the bucket they fall
//! in, as PromQL's `histogram_quantile` does: they are only as fine as the server's bucket
//! bounds. One that falls in the first bucket, or past the last finite bound, is that bound:
//! interpolating from zero would invent a value (a queue p50 of 150 ms beside a mean of
//! 0.02 ms, from a first bucket of 300 ms). The mean (sum over count) is exact.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::expo::Exposition;
use super::kind::PrometheusKind;
use crate::metrics::{PercentileBuckets, ServerDist};

/// One cumulative histogram, summed over label sets (engines, models).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromHistogram {
    /// `(le, cumulative count)` in increasing `le`, `+Inf` last.
    pub buckets: Vec<(f64, f64)>,
    /// Sum of the observations, in seconds.
    pub sum: f64,
    pub count: f64,
}

impl PromHistogram {
    /// `name`'s histogram in `e` (`name_bucket`, `name_sum`, `name_count`), when present.
    pub fn read(e: &Exposition, name: &str) -> Option<PromHistogram> {
        let bucket = format!("{name}_bucket");
        let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for s in e.named(&bucket) {
            let Some(le) = s.labels.get("le").and_then(|v| parse_le(v)) else {
                continue;
            };
            // Ordered by the bound's bits: non-negative floats sort as their bits do.
            let entry = by_le.entry(le.to_bits()).or_insert((le, 0.0));
            entry.1 += s.value;
        }
        if by_le.is_empty() {
            return None;
        }
        Some(PromHistogram {
            buckets: by_le.into_values().collect(),
            sum: e.sum_first(&[&format!("{name}_sum")]).unwrap_or(0.0),
            count: e.sum_first(&[&format!("{name}_count")]).unwrap_or(0.0),
        })
    }

    /// What was observed after `earlier` (the same histogram at an earlier scrape); a counter
    /// that went back (a server restart) counts from zero, as PromQL's `increase` does.
    pub fn since(&self, earlier: &PromHistogram) -> PromHistogram {
        if self.count < earlier.count || self.buckets.len() != earlier.buckets.len() {
            return self.clone();
        }
        PromHistogram {
            buckets: self
                .buckets
                .iter()
                .zip(&earlier.buckets)
                .map(|(&(le, now), &(_, then))| (le, (now - then).max(0.0)))
                .collect(),
            sum: (self.sum - earlier.sum).max(0.0),
            count: self.count - earlier.count,
        }
    }

    /// The value below which a share `q` of the observations fall, in seconds.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        self.locate(q).map(|(v, _, _)| v)
    }

    /// The interpolated quantile and the bounds of the bucket it fell in (`high` infinite past
    /// the last finite bound, where the estimate is that bound; in the first bucket the
    /// estimate is its upper bound, all that is known of it).
    fn locate(&self, q: f64) -> Option<(f64, f64, f64)> {
        let total = self.buckets.last().map(|b| b.1)?;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let mut lower = (0.0, 0.0);
        for &(le, cum) in &self.buckets {
            if cum >= rank {
                if le.is_infinite() {
                    // Beyond the last finite bound: that bound is all that is known.
                    return Some((lower.0, lower.0, le));
                }
                if lower == (0.0, 0.0) {
                    // The first bucket: no observation is known to lie above zero, so only
                    // its bound is (report.md shows it as `≤ 300`).
                    return Some((le, 0.0, le));
                }
                let width = cum - lower.1;
                let into = if width > 0.0 {
                    (rank - lower.1) / width
                } else {
                    1.0
                };
                return Some((lower.0 + (le - lower.0) * into, lower.0, le));
            }
            lower = (le, cum);
        }
        Some((lower.0, lower.0, f64::INFINITY))
    }

    /// As a distribution in milliseconds; `None` without observations.
    pub fn dist_ms(&self) -> Option<ServerDist> {
        if self.count < 1.0 {
            return None;
        }
        let at = |q: f64| {
            self.locate(q)
                .map(|(v, lo, hi)| (v * 1e3, lo * 1e3, hi * 1e3))
        };
        let (p50, p90, p99) = (at(0.5), at(0.9), at(0.99));
        let bounds = |p: Option<(f64, f64, f64)>| match p {
            Some((_, lo, hi)) => [Some(lo), hi.is_finite().then_some(hi)],
            None => [None, None],
        };
        Some(ServerDist {
            count: self.count.round() as u64,
            mean: self.sum / self.count * 1e3,
            p50: p50.map(|p| p.0),
            p90: p90.map(|p| p.0),
            p99: p99.map(|p| p.0),
            buckets: Some(PercentileBuckets {
                p50: bounds(p50),
                p90: bounds(p90),
                p99: bounds(p99),
            }),
        })
    }
}

fn parse_le(v: &str) -> Option<f64> {
    match v {
        "+Inf" | "Inf" | "inf" => Some(f64::INFINITY),
        _ => v.parse().ok().filter(|x: &f64| *x >= 0.0),
    }
}

/// A server's latency histograms at one scrape, by the part of a request they time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyHistograms {
    pub ttft: Option<PromHistogram>,
    pub queue: Option<PromHistogram>,
    pub prefill: Option<PromHistogram>,
    pub decode: Option<PromHistogram>,
    pub itl: Option<PromHistogram>,
    pub e2e: Option<PromHistogram>,
    pub tpot: Option<PromHistogram>,
}

impl LatencyHistograms {
    /// The histograms `kind` exports (each name with the ones it had in earlier versions).
    pub fn read(kind: PrometheusKind, e: &Exposition) -> Option<LatencyHistograms> {
        let first = |names: &[&str]| names.iter().find_map(|n| PromHistogram::read(e, n));
        let h = match kind {
            PrometheusKind::Vllm => LatencyHistograms {
                ttft: first(&["vllm:time_to_first_token_seconds"]),
                queue: first(&["vllm:request_queue_time_seconds"]),
                prefill: first(&["vllm:request_prefill_time_seconds"]),
                decode: first(&["vllm:request_decode_time_seconds"]),
                itl: first(&[
                    "vllm:inter_token_latency_seconds",
                    "vllm:time_per_output_token_seconds",
                ]),
                e2e: first(&["vllm:e2e_request_latency_seconds"]),
                tpot: first(&["vllm:request_time_per_output_token_seconds"]),
            },
            PrometheusKind::Sglang => LatencyHistograms {
                ttft: first(&["sglang:time_to_first_token_seconds"]),
                queue: first(&["sglang:queue_time_seconds"]),
                prefill: None,
                decode: None,
                itl: first(&[
                    "sglang:inter_token_latency_seconds",
                    "sglang:time_per_output_token_seconds",
                ]),
                e2e: first(&["sglang:e2e_request_latency_seconds"]),
                tpot: None,
            },
            PrometheusKind::LlamaCpp | PrometheusKind::DcgmExporter => return None,
        };
        (h != LatencyHistograms::default()).then_some(h)
    }

    /// The stage's increase of each histogram present at both scrapes.
    pub fn since(&self, earlier: &LatencyHistograms) -> ServerLatency {
        let d = |now: &Option<PromHistogram>, then: &Option<PromHistogram>| match (now, then) {
            (Some(n), Some(t)) => n.since(t).dist_ms(),
            _ => None,
        };
        ServerLatency {
            ttft_ms: d(&self.ttft, &earlier.ttft),
            queue_ms: d(&self.queue, &earlier.queue),
            prefill_ms: d(&self.prefill, &earlier.prefill),
            decode_ms: d(&self.decode, &earlier.decode),
            itl_ms: d(&self.itl, &earlier.itl),
            e2e_ms: d(&self.e2e, &earlier.e2e),
            tpot_ms: d(&self.tpot, &earlier.tpot),
        }
    }
}

/// A stage's distributions from the server's latency histograms (milliseconds; see
/// [`ServerDist`] for how fine they are).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerLatency {
    /// Arrival in the engine to the first token (`vllm:time_to_first_token_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<ServerDist>,
    /// Queued before first scheduled (`vllm:request_queue_time_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<ServerDist>,
    /// Scheduled to the first token (`vllm:request_prefill_time_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_ms: Option<ServerDist>,
    /// First to last token (`vllm:request_decode_time_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ms: Option<ServerDist>,
    /// Between consecutive tokens (`vllm:inter_token_latency_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_ms: Option<ServerDist>,
    /// Arrival to the last token (`vllm:e2e_request_latency_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_ms: Option<ServerDist>,
    /// Per request, decode time over output tokens − 1
    /// (`vllm:request_time_per_output_token_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<ServerDist>,
}

impl ServerLatency {
    pub fn is_empty(&self) -> bool {
        *self == ServerLatency::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::expo::parse_exposition;

    const AT_START: &str = r#"
vllm:time_to_first_token_seconds_bucket{le="0.01",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{le="1.0",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 2.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.06
vllm:time_to_first_token_seconds_count{model_name="m"} 2.0
"#;
    const AT_END: &str = r#"
vllm:time_to_first_token_seconds_bucket{le="0.01",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 6.0
vllm:time_to_first_token_seconds_bucket{le="1.0",model_name="m"} 12.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 12.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 3.06
vllm:time_to_first_token_seconds_count{model_name="m"} 12.0
"#;

    #[test]
    fn a_stage_is_the_increase_between_its_edges() {
        let read = |t| LatencyHistograms::read(PrometheusKind::Vllm, &parse_exposition(t));
        let (a, b) = (read(AT_START).unwrap(), read(AT_END).unwrap());
        let s = b.since(&a);
        let ttft = s.ttft_ms.unwrap();
        // 10 observations in the stage: 4 in (0.01, 0.1], 6 in (0.1, 1.0]; 3 s in all.
        assert_eq!(ttft.count, 10);
        assert!((ttft.mean - 300.0).abs() < 1e-9, "{ttft:?}");
        // The median is the 5th: 1 into the (0.1, 1.0] bucket's 6, linearly.
        assert!(
            (ttft.p50.unwrap() - (100.0 + 900.0 / 6.0)).abs() < 1e-6,
            "{ttft:?}"
        );
        assert_eq!(ttft.buckets.unwrap().p50, [Some(100.0), Some(1000.0)]);
        assert!(s.queue_ms.is_none());
    }

    #[test]
    fn beyond_the_last_bound_is_the_last_bound() {
        let h = PromHistogram {
            buckets: vec![(0.5, 1.0), (f64::INFINITY, 10.0)],
            sum: 20.0,
            count: 10.0,
        };
        assert_eq!(h.quantile(0.99), Some(0.5));
        // In the first bucket: its bound, not a point interpolated from zero.
        assert_eq!(h.quantile(0.05), Some(0.5));
    }

    /// The issue's queue: 40 requests queued 0.022 ms on average, all in vLLM's first bucket
    /// (≤ 0.3 s): its p50 read 150 ms, interpolated from zero. It is the bound.
    #[test]
    fn a_percentile_in_the_first_bucket_is_its_bound() {
        let h = PromHistogram {
            buckets: vec![(0.3, 40.0), (0.5, 40.0), (f64::INFINITY, 40.0)],
            sum: 40.0 * 0.022e-3,
            count: 40.0,
        };
        let d = h.dist_ms().unwrap();
        assert!((d.mean - 0.022).abs() < 1e-9, "{d:?}");
        assert_eq!(d.p50, Some(300.0));
        assert_eq!(d.p99, Some(300.0));
        assert_eq!(d.buckets.unwrap().p50, [Some(0.0), Some(300.0)]);
    }

    #[test]
    fn a_restarted_server_counts_from_zero() {
        let now = PromHistogram {
            buckets: vec![(1.0, 2.0), (f64::INFINITY, 2.0)],
            sum: 1.0,
            count: 2.0,
        };
        let then = PromHistogram {
            buckets: vec![(1.0, 5.0), (f64::INFINITY, 5.0)],
            sum: 3.0,
            count: 5.0,
        };
        assert_eq!(now.since(&then), now);
    }
}
