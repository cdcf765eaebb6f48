//! The saturation check applied to every profile point: whether the server kept up with the
//! offered load, or the client could not offer it ([`ProfilePoint::assess`]).

use super::latency::LatencyMetric;
use super::profile::ProfilePoint;
use super::summary::StageSummary;

/// Below this share of the offered rate, a point is called saturated (server) or client-bound
/// (client): 10 % slack absorbs Poisson noise over short stages.
pub const SATURATION_RATIO: f64 = 0.9;

impl ProfilePoint {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::LoadPoint;

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
