//! Load-profile markers on stages (which sweep or search a stage belongs to, at what load) and
//! the rate search's summary, plus the saturation check applied to every profile point.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{LatencyMetric, StageSummary};
pub use crate::arrival::{LoadPoint, PointKind};

/// Below this share of the offered rate, a point is called saturated (server) or client-bound
/// (client): 10 % slack absorbs Poisson noise over short stages.
pub const SATURATION_RATIO: f64 = 0.9;

/// Marks a stage as one point of a load profile, so reports can gather the points of a group.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProfilePoint {
    /// Which point of which profile, as planned.
    #[serde(flatten)]
    pub point: LoadPoint,
    /// Completed requests fell short of the offered rate: the server could not keep up.
    #[serde(default)]
    pub saturated: bool,
    /// The client could not send on time (send rate short of the offered rate, or the stage's
    /// validity check distrusts the client): the point says nothing about the server.
    #[serde(default)]
    pub client_bound: bool,
    /// A probe's verdict: did the stage's SLAs hold?
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
}

impl ProfilePoint {
    /// The point as planned, before it ran.
    pub fn planned(point: LoadPoint) -> Self {
        ProfilePoint {
            point,
            ..ProfilePoint::default()
        }
    }

    /// The point's load on one axis: offered rate, else clients.
    pub fn load(&self) -> f64 {
        self.point.load()
    }

    /// Sets `saturated` and `client_bound` from the measured stage.
    ///
    /// Completions are counted over the wall time less the median end-to-end latency: a
    /// server that keeps up finishes its last requests about one latency after the last send,
    /// so this is close to the sending time; a saturated one drains a backlog long after it.
    pub fn assess(&mut self, s: &StageSummary) {
        let ok = s.requests.ok as f64;
        self.client_bound = !s.validity.trusted;
        match self.point.offered_rate_per_s {
            Some(offered) if offered > 0.0 => {
                let sending = s
                    .planned
                    .duration_s
                    .unwrap_or(0.0)
                    .max(s.wall_time_s - s.latency[LatencyMetric::E2e].p50 / 1000.0)
                    .max(1e-3);
                let sending = sending.min(s.wall_time_s.max(1e-3));
                let achieved = ok / sending;
                let sent_rate = s.throughput.achieved_rate_per_s;
                if sent_rate > 0.0 && sent_rate < SATURATION_RATIO * offered {
                    self.client_bound = true;
                }
                // Compared with what the schedule actually held, not the nominal rate, so
                // that a Poisson draw below its mean does not read as saturation.
                let scheduled = match s.planned.duration_s {
                    Some(d) if d > 0.0 && s.requests.sent > 0 => s.requests.sent as f64 / d,
                    _ => offered,
                };
                self.saturated =
                    achieved < SATURATION_RATIO * scheduled || s.requests.failed as f64 > 0.1 * ok;
            }
            _ => {
                // Closed loop: the offered load adapts to the server, so only errors show it.
                self.saturated = s.requests.failed as f64 > 0.1 * ok.max(1.0);
            }
        }
    }
}

/// One probe of a rate search, with the metrics that decided it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProbeResult {
    /// Name of the probe's stage in `stages`.
    pub stage: String,
    /// The offered rate; for a concurrency probe, the request rate it achieved.
    pub rate_per_s: f64,
    /// A concurrency probe's closed-loop clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    pub passed: bool,
    pub saturated: bool,
    pub client_bound: bool,
    pub ttft_p99_ms: f64,
    pub itl_p99_ms: f64,
    pub output_tokens_per_s: f64,
    pub requests_per_s: f64,
    /// The assertions that failed, when it did not pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// What a rate (or concurrency) search found.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SearchSummary {
    /// The stage that declared the search.
    pub group: String,
    /// Highest probed rate at which the SLAs held; `None` when even `from` failed.
    pub answer_rate_per_s: Option<f64>,
    /// A concurrency search's answer: the most clients at which the SLAs held (then
    /// `answer_rate_per_s` is `None`, and bounds and bracket count clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_clients: Option<u32>,
    /// True for a search over closed-loop clients rather than the rate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub concurrency: bool,
    /// Highest passing rate and lowest failing rate: the answer lies between them.
    pub bracket_low: Option<f64>,
    pub bracket_high: Option<f64>,
    /// The requested tolerance (a fraction) and the bounds searched.
    pub tolerance: f64,
    pub from: f64,
    pub to: f64,
    /// Why the search ended.
    pub stop_reason: crate::arrival::StopReason,
    /// Seconds spent probing.
    pub elapsed_s: f64,
    /// Every probe in the order it ran.
    pub probes: Vec<ProbeResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(planned_s: f64, wall: f64, ok: u64, e2e_p50_ms: f64, sent_rate: f64) -> StageSummary {
        let mut s = StageSummary::default();
        s.planned.duration_s = Some(planned_s);
        s.wall_time_s = wall;
        s.requests.ok = ok;
        s.requests.sent = ok;
        s.latency[crate::metrics::LatencyMetric::E2e].p50 = e2e_p50_ms;
        s.throughput.achieved_rate_per_s = sent_rate;
        s
    }

    fn point(rate: f64) -> ProfilePoint {
        ProfilePoint::planned(LoadPoint {
            offered_rate_per_s: Some(rate),
            ..LoadPoint::default()
        })
    }

    #[test]
    fn keeping_up_is_not_saturated() {
        let mut p = point(10.0);
        p.assess(&stage(2.0, 2.3, 20, 250.0, 10.0));
        assert!(!p.saturated && !p.client_bound);
    }

    #[test]
    fn a_backlog_is_saturation() {
        // Offered 40/s for 2 s; served at 20/s, so the last of 80 ends at ~4 s.
        let mut p = point(40.0);
        p.assess(&stage(2.0, 4.0, 80, 1000.0, 40.0));
        assert!(p.saturated);
        assert!(!p.client_bound);
    }

    #[test]
    fn late_sends_are_client_bound() {
        let mut p = point(100.0);
        p.assess(&stage(2.0, 2.2, 120, 50.0, 60.0));
        assert!(p.client_bound);
    }
}
