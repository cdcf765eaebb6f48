//! A stage's latencies net of what its client may have added (`client_net` in
//! `results.json`): lower bounds on what the server took, which decide failures on a stage
//! whose client is flagged (`sla::trust`).

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dist::Dist;
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
        }
    }
}
