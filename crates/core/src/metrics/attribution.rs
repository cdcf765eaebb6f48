//! Where a stage's latency went, by the server's own account beside the client's: per request
//! from llama.cpp's `timings` (prompt and decode time of each response), and per stage from a
//! Prometheus source's latency histograms (vLLM's queue, prefill, decode, TTFT and inter-token
//! histograms, SGLang's equivalents), as the increase of each histogram between the stage's
//! start and end. See `docs/metrics.md` ("Where the latency went").

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dist::Dist;
use super::measure::{absorb, histogram};

/// A distribution of a duration, in milliseconds. From per-request timings its percentiles
/// are exact (HDR histogram, 3 significant digits); from Prometheus buckets they are
/// interpolated within the bucket they fall in (as PromQL's `histogram_quantile` does), only
/// as fine as the server's bucket bounds, which `buckets` gives (one in the first bucket is
/// its upper bound, one past the last finite bound that bound); `mean` (sum over count) is
/// exact either way. A percentile is absent where it cannot be known (the difference of two
/// bucketed distributions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerDist {
    pub count: u64,
    pub mean: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    /// From Prometheus buckets: the bucket each percentile fell in, `[low, high]` in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<PercentileBuckets>,
}

/// The Prometheus bucket each percentile of a [`ServerDist`] fell in, `[low, high]` in ms
/// (`high` is infinite past the last finite bound, serialised as `null`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PercentileBuckets {
    pub p50: [Option<f64>; 2],
    pub p90: [Option<f64>; 2],
    pub p99: [Option<f64>; 2],
}

/// Where the figures of an [`Attribution`] come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttributionSource {
    /// llama.cpp's per-request `timings` on each response.
    #[default]
    Timings,
    /// A `prometheus` telemetry source's histograms, over the stage.
    Prometheus,
    /// The server's own span of each request (vLLM's `llm_request`, received over OTLP by
    /// `otlp-receive`), joined to the client's requests by trace id. *Added in schema 3.*
    Spans,
}

/// The client's TTFT beside the server's and its parts. Each part is present when the server
/// reports it. Times are milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Attribution {
    pub source: AttributionSource,
    /// The Prometheus source's URL, for `prometheus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The client's TTFT (from the scheduled send instant), as in `latency.ttft_ms`.
    pub client_ttft_ms: ServerDist,
    /// The server's time to the first token: `vllm:time_to_first_token_seconds`; from llama.cpp
    /// timings, `prompt_ms` (its prompt processing, after the request got a slot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ttft_ms: Option<ServerDist>,
    /// Waiting in the server's queue before being scheduled (`vllm:request_queue_time_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_ms: Option<ServerDist>,
    /// Prompt processing (`vllm:request_prefill_time_seconds`; llama.cpp `prompt_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_ms: Option<ServerDist>,
    /// The rest of the server's TTFT, beside its queue and prefill: `server_ttft − queue −
    /// prefill` (means only). In vLLM the engine core times the queue and the prefill (from
    /// being scheduled to the first token), while its TTFT runs from the API server's arrival
    /// to the first token's return there: the rest is the API server's input processing (chat
    /// template, tokenizing), the hand-offs to the engine core and back, and detokenizing.
    /// So `queue + prefill + server_other + outside` is the client's TTFT mean. *Added in
    /// schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_other_ms: Option<ServerDist>,
    /// Generating after the first token (`vllm:request_decode_time_seconds`; llama.cpp
    /// `predicted_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ms: Option<ServerDist>,
    /// The server's time per output token (`vllm:request_time_per_output_token_seconds`;
    /// llama.cpp `predicted_ms / (predicted_n − 1)`), beside the client's TPOT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_tpot_ms: Option<ServerDist>,
    /// The client's TPOT, as in `latency.tpot_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_tpot_ms: Option<ServerDist>,
    /// The server's arrival to last token (`vllm:e2e_request_latency_seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_e2e_ms: Option<ServerDist>,
    /// The client's E2E, as in `latency.e2e_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_e2e_ms: Option<ServerDist>,
    /// Client TTFT minus the server's: the network, the HTTP and API layers in front of the
    /// engine, and the client. Per request from timings (exact percentiles); from Prometheus,
    /// the difference of the two distributions' figures, one by one (a percentile of a
    /// difference is not the difference of percentiles, so only `mean` is exact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_ms: Option<ServerDist>,
    /// Client E2E minus the server's: the time a response spent outside the engine from the
    /// scheduled send to its last byte. Request by request from spans; from Prometheus, for
    /// answers that came whole (no TTFT to split), the difference of the means. *Added in
    /// schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside_e2e_ms: Option<ServerDist>,
    /// Requests the server counted in its histograms during the stage, beside the client's
    /// `requests.ok`: a large difference means other traffic shared the server, or a scrape
    /// missed the stage's edges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_requests: Option<u64>,
}

impl ServerDist {
    /// A client-side distribution (HDR, µs) in the same shape.
    pub fn of_us(h: &Histogram<u64>) -> ServerDist {
        if h.is_empty() {
            return ServerDist::default();
        }
        let ms = |q: f64| Some(h.value_at_quantile(q) as f64 / 1e3);
        ServerDist {
            count: h.len(),
            mean: h.mean() / 1e3,
            p50: ms(0.5),
            p90: ms(0.9),
            p99: ms(0.99),
            buckets: None,
        }
    }

    /// From a stage's summary distribution.
    pub fn of_dist(d: &Dist) -> ServerDist {
        ServerDist {
            count: d.count,
            mean: d.mean,
            p50: Some(d.p50),
            p90: Some(d.p90),
            p99: Some(d.p99),
            buckets: None,
        }
    }

    /// `self − other`: the means' difference (exact: a mean of differences is the difference
    /// of means over the same requests); percentiles of a difference are not the difference of
    /// percentiles, so they are left out.
    pub fn mean_minus(&self, other: &ServerDist) -> ServerDist {
        ServerDist {
            count: self.count.min(other.count),
            mean: self.mean - other.mean,
            ..ServerDist::default()
        }
    }
}

/// The part of `server_ttft` that `parts` (its queue and prefill) leave: the difference of the
/// means; `None` without a server TTFT or without any part to take from it.
pub fn rest_of(
    server_ttft: Option<ServerDist>,
    parts: &[Option<ServerDist>],
) -> Option<ServerDist> {
    let ttft = server_ttft?;
    let known: Vec<&ServerDist> = parts.iter().flatten().collect();
    if known.is_empty() {
        return None;
    }
    let mean = known.iter().fold(ttft.mean, |m, p| m - p.mean);
    Some(ServerDist {
        count: ttft.count,
        mean,
        ..ServerDist::default()
    })
}

/// The per-request part, folded by the stage's aggregator from llama.cpp's `timings`.
#[derive(Debug)]
pub(super) struct TimingsAcc {
    prompt: Histogram<u64>,
    predicted: Histogram<u64>,
    per_token: Histogram<u64>,
    outside: Histogram<u64>,
}

impl Default for TimingsAcc {
    fn default() -> Self {
        TimingsAcc {
            prompt: histogram(),
            predicted: histogram(),
            per_token: histogram(),
            outside: histogram(),
        }
    }
}

impl TimingsAcc {
    /// One successful request with timings; `ttft_ns` is the client's TTFT.
    pub(super) fn record(&mut self, t: &super::ServerTimings, ttft_ns: Option<u64>) {
        let us = |ms: f64| (ms.max(0.0) * 1e3).round() as u64;
        if let Some(p) = t.prompt_ms.filter(|v| v.is_finite()) {
            self.prompt.saturating_record(us(p));
            if let Some(ttft) = ttft_ns {
                let outside = (ttft as f64 / 1e6 - p).max(0.0);
                self.outside.saturating_record(us(outside));
            }
        }
        if let Some(d) = t.predicted_ms.filter(|v| v.is_finite()) {
            self.predicted.saturating_record(us(d));
            // `predicted_ms` runs from the first token (free: it comes from the prompt's last
            // batch) to the last, so it spans n − 1 decode steps, as TPOT does.
            if let Some(n) = t.predicted_n.filter(|n| *n >= 2) {
                self.per_token.saturating_record(us(d / (n - 1) as f64));
            }
        }
    }

    /// Takes in another aggregator's timings: the histograms add up, exactly.
    pub(super) fn merge(&mut self, other: &TimingsAcc) {
        absorb(&mut self.prompt, &other.prompt);
        absorb(&mut self.predicted, &other.predicted);
        absorb(&mut self.per_token, &other.per_token);
        absorb(&mut self.outside, &other.outside);
    }

    /// `None` when no response carried timings.
    pub(super) fn finish(&self, ttft: &Dist, tpot: &Dist) -> Option<Attribution> {
        if self.prompt.is_empty() && self.predicted.is_empty() {
            return None;
        }
        let some = |h: &Histogram<u64>| (!h.is_empty()).then(|| ServerDist::of_us(h));
        Some(Attribution {
            source: AttributionSource::Timings,
            server: None,
            client_ttft_ms: ServerDist::of_dist(ttft),
            server_ttft_ms: some(&self.prompt),
            queue_ms: None,
            prefill_ms: some(&self.prompt),
            server_other_ms: None,
            decode_ms: some(&self.predicted),
            server_tpot_ms: some(&self.per_token),
            client_tpot_ms: (tpot.count > 0).then(|| ServerDist::of_dist(tpot)),
            server_e2e_ms: None,
            client_e2e_ms: None,
            outside_ms: some(&self.outside),
            outside_e2e_ms: None,
            server_requests: None,
        })
    }
}

/// A note when the client's TPOT and the server's differ by more than 10 %, with the delivery
/// delays that explain it when both E2Es are known: `TPOT_client − TPOT_server` is exactly
/// `((E2E_client − E2E_server) − (TTFT_client − TTFT_server)) / (n − 1)`, how much later the
/// last token reached the client (after the engine produced it) than the first did.
pub fn tpot_note(a: &Attribution, mean_output_tokens: f64) -> Option<String> {
    let (client, server) = (a.client_tpot_ms?, a.server_tpot_ms?);
    if server.mean <= 0.0 || (client.mean / server.mean - 1.0).abs() <= 0.1 {
        return None;
    }
    let pct = (client.mean / server.mean - 1.0) * 100.0;
    let side = if pct < 0.0 { "below" } else { "above" };
    let mut note = format!(
        "the client's TPOT mean {:.2} ms is {:.0}% {side} the server's {:.2} ms",
        client.mean,
        pct.abs(),
        server.mean
    );
    if let (Some(st), Some(ce), Some(se)) = (a.server_ttft_ms, a.client_e2e_ms, a.server_e2e_ms) {
        let ttft_gap = a.client_ttft_ms.mean - st.mean;
        let e2e_gap = ce.mean - se.mean;
        let lag = ttft_gap - e2e_gap;
        note.push_str(&format!(
            ": the first token reached the client {:.1} ms {} after the engine made it than the \
             last did (TTFT {:.1} ms over the server's, E2E {:.1} ms over; {:.1} ms over {:.0} \
             tokens is {:.2} ms a token)",
            lag.abs(),
            if lag >= 0.0 { "later" } else { "sooner" },
            ttft_gap,
            e2e_gap,
            lag.abs(),
            (mean_output_tokens - 1.0).max(1.0),
            lag.abs() / (mean_output_tokens - 1.0).max(1.0),
        ));
        if lag > 0.0 {
            note.push_str(
                ", so tokens arrived bunched: the server's figure is the decode pace, the \
                 client's the pace of delivery (a CPU-starved API server delays each request's \
                 first chunks)",
            );
        }
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Dist, ServerTimings};

    fn d(mean: f64) -> ServerDist {
        ServerDist {
            count: 10,
            mean,
            ..ServerDist::default()
        }
    }

    #[test]
    fn llama_timings_give_per_step_decode_time_and_what_lies_outside() {
        let mut acc = TimingsAcc::default();
        for _ in 0..4 {
            let t = ServerTimings {
                prompt_ms: Some(40.0),
                predicted_ms: Some(62.0),
                predicted_n: Some(32),
                ..ServerTimings::default()
            };
            acc.record(&t, Some(50_000_000));
        }
        let ttft = Dist {
            count: 4,
            mean: 50.0,
            ..Dist::default()
        };
        let a = acc.finish(&ttft, &Dist::default()).unwrap();
        // 62 ms over 31 decode steps: the first token is free.
        assert!((a.server_tpot_ms.unwrap().mean - 2.0).abs() < 0.01, "{a:?}");
        assert!((a.outside_ms.unwrap().mean - 10.0).abs() < 0.01);
        assert_eq!(a.server_ttft_ms.unwrap().count, 4);
        assert!(a.client_tpot_ms.is_none());
    }

    #[test]
    fn a_tpot_gap_is_explained_by_delivery_lags() {
        let mut a = Attribution {
            client_ttft_ms: d(90.0),
            server_ttft_ms: Some(d(50.0)),
            client_e2e_ms: Some(d(200.0)),
            server_e2e_ms: Some(d(191.0)),
            client_tpot_ms: Some(d(3.0)),
            server_tpot_ms: Some(d(4.0)),
            ..Attribution::default()
        };
        let note = tpot_note(&a, 32.0).unwrap();
        assert!(note.contains("25% below"), "{note}");
        assert!(note.contains("31.0 ms later"), "{note}");
        assert!(note.contains("1.00 ms a token"), "{note}");
        a.client_tpot_ms = Some(d(4.2));
        assert!(tpot_note(&a, 32.0).is_none(), "within 10 %");
    }
}
