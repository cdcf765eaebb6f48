//! vLLM's request-latency histograms (`metrics-histograms`), with vLLM's names and bucket
//! boundaries (`vllm/v1/metrics/loggers.py`). Only the scheduler task observes, so the
//! atomics are never contended; a scrape reads them without a lock (a scrape racing a step may
//! see a count one observation ahead of a sum, as with any Prometheus client).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
const TOKEN_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
const REQUEST_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// One cumulative histogram of durations.
#[derive(Debug)]
struct Histogram {
    bounds: &'static [f64],
    /// Per-bucket (not cumulative) counts; the last one is `+Inf`.
    counts: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        // Prometheus buckets are `le`: a value equal to a bound falls in that bound's bucket.
        let i = self.bounds.partition_point(|&b| b < secs);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str, model: &str) {
        let _ = writeln!(out, "# HELP vllm:{name} {help}");
        let _ = writeln!(out, "# TYPE vllm:{name} histogram");
        let mut cumulative = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            cumulative += c.load(Ordering::Relaxed);
            let le = match self.bounds.get(i) {
                // Python's float repr, as prometheus_client writes bounds: 0.001, 1.0, 2560.0.
                Some(b) => format!("{b:?}"),
                None => "+Inf".into(),
            };
            let _ = writeln!(
                out,
                "vllm:{name}_bucket{{le=\"{le}\",model_name=\"{model}\"}} {:?}",
                cumulative as f64
            );
        }
        let label = format!("{{model_name=\"{model}\"}}");
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "vllm:{name}_sum{label} {sum:?}");
        let count = self.count.load(Ordering::Relaxed) as f64;
        let _ = writeln!(out, "vllm:{name}_count{label} {count:?}");
    }
}

/// The times of one finished request, from the scheduler's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestTimes {
    /// Arrival → admission (vLLM's WAITING phase).
    pub queue: Duration,
    /// Admission → first token.
    pub prefill: Duration,
    /// First token → last token.
    pub decode: Duration,
    /// Arrival → done.
    pub e2e: Duration,
    pub completion_tokens: u64,
}

/// Every latency histogram the simulator exports.
#[derive(Debug)]
pub(crate) struct LatencyHistograms {
    ttft: Histogram,
    itl: Histogram,
    e2e: Histogram,
    queue: Histogram,
    inference: Histogram,
    prefill: Histogram,
    decode: Histogram,
    request_tpot: Histogram,
}

impl Default for LatencyHistograms {
    fn default() -> Self {
        LatencyHistograms {
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(TOKEN_BUCKETS),
            e2e: Histogram::new(REQUEST_BUCKETS),
            queue: Histogram::new(REQUEST_BUCKETS),
            inference: Histogram::new(REQUEST_BUCKETS),
            prefill: Histogram::new(REQUEST_BUCKETS),
            decode: Histogram::new(REQUEST_BUCKETS),
            request_tpot: Histogram::new(TOKEN_BUCKETS),
        }
    }
}

impl LatencyHistograms {
    /// A first token, `ttft` after the request arrived.
    pub(crate) fn first_token(&self, ttft: Duration) {
        self.ttft.observe(ttft);
    }

    /// A later token, `itl` after the sequence's previous one.
    pub(crate) fn next_token(&self, itl: Duration) {
        self.itl.observe(itl);
    }

    /// A request that completed.
    pub(crate) fn finished(&self, t: RequestTimes) {
        self.e2e.observe(t.e2e);
        self.queue.observe(t.queue);
        self.prefill.observe(t.prefill);
        self.decode.observe(t.decode);
        self.inference.observe(t.prefill + t.decode);
        // vLLM's mean_time_per_output_token: decode time over the tokens after the first.
        let tpot = match t.completion_tokens {
            0 | 1 => Duration::ZERO,
            n => t.decode / u32::try_from(n - 1).unwrap_or(u32::MAX),
        };
        self.request_tpot.observe(tpot);
    }

    /// The exposition text; `model` is already escaped.
    pub(crate) fn render(&self, out: &mut String, model: &str) {
        self.ttft.render(
            out,
            "time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            model,
        );
        self.itl.render(
            out,
            "inter_token_latency_seconds",
            "Histogram of inter-token latency in seconds.",
            model,
        );
        // The name before vLLM 0.11, the same observations; kept for older dashboards.
        self.itl.render(
            out,
            "time_per_output_token_seconds",
            "Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead.",
            model,
        );
        self.request_tpot.render(
            out,
            "request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            model,
        );
        self.e2e.render(
            out,
            "e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            model,
        );
        self.queue.render(
            out,
            "request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            model,
        );
        self.inference.render(
            out,
            "request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.",
            model,
        );
        self.prefill.render(
            out,
            "request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.",
            model,
        );
        self.decode.render(
            out,
            "request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.",
            model,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_le_inclusive() {
        let h = Histogram::new(&[0.01, 0.1]);
        h.observe(Duration::from_millis(10));
        h.observe(Duration::from_millis(50));
        h.observe(Duration::from_secs(3));
        let mut out = String::new();
        h.render(&mut out, "x_seconds", "help", "m");
        assert!(out.contains("vllm:x_seconds_bucket{le=\"0.01\",model_name=\"m\"} 1.0\n"));
        assert!(out.contains("vllm:x_seconds_bucket{le=\"0.1\",model_name=\"m\"} 2.0\n"));
        assert!(out.contains("vllm:x_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 3.0\n"));
        assert!(out.contains("vllm:x_seconds_sum{model_name=\"m\"} 3.06\n"));
        assert!(out.contains("vllm:x_seconds_count{model_name=\"m\"} 3.0\n"));
        assert!(out.contains("# TYPE vllm:x_seconds histogram\n"));
    }

    #[test]
    fn request_times_feed_every_request_histogram() {
        let hs = LatencyHistograms::default();
        hs.finished(RequestTimes {
            queue: Duration::from_millis(100),
            prefill: Duration::from_millis(200),
            decode: Duration::from_millis(900),
            e2e: Duration::from_millis(1200),
            completion_tokens: 10,
        });
        let mut out = String::new();
        hs.render(&mut out, "m");
        for (name, sum) in [
            ("request_queue_time_seconds", "0.1"),
            ("request_prefill_time_seconds", "0.2"),
            ("request_decode_time_seconds", "0.9"),
            ("request_inference_time_seconds", "1.1"),
            ("e2e_request_latency_seconds", "1.2"),
            ("request_time_per_output_token_seconds", "0.1"),
        ] {
            assert!(
                out.contains(&format!("vllm:{name}_sum{{model_name=\"m\"}} {sum}\n")),
                "{name}: {out}"
            );
            assert!(out.contains(&format!("vllm:{name}_count{{model_name=\"m\"}} 1.0\n")));
        }
        assert!(out.contains("vllm:time_to_first_token_seconds_count{model_name=\"m\"} 0.0\n"));
    }
}
