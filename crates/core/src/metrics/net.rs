//! A stage's latencies net of what its client may have added (`client_net` in
//! `results.json`): lower bounds on what the server took, which decide failures on a stage
//! whose client is flagged (`sla::trust`); and the least time the server could have needed
//! for the stage had the client sent and read on time ([`ServedSpan`]), which decides its
//! rates' failures the same way (`sla::credit`).

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dist::Dist;
use super::histograms::HistogramCodec;
use super::measure::metric_dist;
use super::per_metric::{MetricSet, Net, PerMetric};
use crate::stats::hist;

/// A stage's latencies net of what its client may have added: for each request, the metric
/// measured from its actual send (its send lag taken off) less a bound on how late the client
/// read the event that ends it (see `runner::probe`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientNet {
    pub latency: PerMetric<Dist, Net>,
    /// Their histograms (µs), as `histograms` keeps the measured ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<PerMetric<String, Net>>,
    /// The least wall time (s) the stage could have taken had the client sent every request
    /// on time and read every answer at once (`docs/sla.md`). Its rates over it are the
    /// most the server can be credited with. Open-loop stages without sessions only (absent
    /// where the client's delays compound, or rounds and shards were merged). *Added in
    /// schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_s: Option<f64>,
}

/// Accumulates [`ClientNet::served_s`] over a stage's requests. A request sent up to `L` late
/// reached the server up to `L` late; had every request arrived on time, no completion could
/// have come more than the longest lag `L` sooner (arrivals moved earlier by at most `L` move
/// the completions of a server that does not favour late arrivals — a FIFO queue, a batch
/// that admits in order — earlier by at most `L`). Each answer was complete at the latest
/// when it was read less how late the client may have read it. So a punctual client's stage
/// ends no sooner than the last such completion less `L`, nor before its last planned send.
/// Failures the client declares itself (timeouts, cancellations) say nothing of when the
/// server finished, and are left out (which only credits the server more).
#[derive(Debug, Clone, Copy, Default)]
pub struct ServedSpan {
    /// The latest completion net of the read bound, ns since the stage start.
    end_ns: u64,
    /// The longest send lag, ns.
    lag_ns: u64,
    /// A request was recorded without a read bound, or was a session's later turn (sent
    /// after the client read the previous answer: its delays compound): no bound.
    unbounded: bool,
}

impl ServedSpan {
    /// Takes one request, with the bound on how late the client read (`None`: not measured).
    pub fn record(&mut self, r: &super::RequestRecord, read: Option<&dyn Fn(u64) -> u64>) {
        let Some(read) = read.filter(|_| r.opens_arrival()) else {
            self.unbounded = true;
            return;
        };
        self.lag_ns = self.lag_ns.max(r.sent_ns.saturating_sub(r.scheduled_ns));
        if r.error.is_none_or(|k| !k.client_side()) {
            let done = r.done_ns.saturating_sub(read(r.done_ns));
            self.end_ns = self.end_ns.max(done);
        }
    }

    /// Takes in another aggregator's span: the latest end, the largest lag, and unbounded if
    /// either is.
    pub fn merge(&mut self, o: &ServedSpan) {
        self.end_ns = self.end_ns.max(o.end_ns);
        self.lag_ns = self.lag_ns.max(o.lag_ns);
        self.unbounded |= o.unbounded;
    }

    /// The least wall time, s, given the stage's planned sending span; `None` when unbounded
    /// or nothing was recorded.
    pub fn served_s(&self, planned_span_ns: Option<u64>) -> Option<f64> {
        let span = self
            .end_ns
            .saturating_sub(self.lag_ns)
            .max(planned_span_ns.unwrap_or(0));
        (!self.unbounded && span > 0).then(|| span as f64 / 1e9)
    }
}

/// Decoded net histograms (µs), one per metric of [`Net`].
pub type NetHistograms = PerMetric<Option<Histogram<u64>>, Net>;

impl ClientNet {
    /// The net histograms of stages (`client_net` of each) added together; `None` when one of
    /// them has none (a result from before they were kept) or one cannot be read.
    pub fn union<'a>(
        nets: impl IntoIterator<Item = Option<&'a ClientNet>>,
    ) -> Option<NetHistograms> {
        let mut total = NetHistograms::default();
        for net in nets {
            let hists = net?.histograms.as_ref()?;
            for m in Net::metrics() {
                let h = hists.decode(m)?.ok()?;
                match &mut total[m] {
                    Some(t) => t.add(&h).ok()?,
                    slot => *slot = Some(h),
                }
            }
        }
        Some(total)
    }

    /// The distributions of `hists` (with intervals at `confidence`, a clustered metric's
    /// counted over `ok` requests) and the histograms themselves, encoded.
    pub fn from_histograms(hists: &NetHistograms, confidence: f64, ok: u64) -> ClientNet {
        ClientNet {
            latency: PerMetric::from_fn(|m| {
                hists[m]
                    .as_ref()
                    .map_or_else(Dist::default, |h| metric_dist(m, h, confidence, ok))
            }),
            histograms: PerMetric::try_from_fn(|m| match &hists[m] {
                Some(h) => hist::encode(h),
                None => Ok(String::new()),
            })
            .ok(),
            served_s: None,
        }
    }
}
