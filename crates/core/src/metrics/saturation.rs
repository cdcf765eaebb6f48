//! The saturation check applied to every profile point: whether the server kept up with the
//! offered load, or the client could not offer it ([`ProfilePoint::assess`]).

use super::latency::LatencyMetric;
use super::profile::ProfilePoint;
use super::summary::StageSummary;
use super::validity::ValidityRules;

/// Below this share of the offered rate, a point is called saturated (server) or client-bound
/// (client): 10 % slack absorbs Poisson noise over short stages.
pub const SATURATION_RATIO: f64 = 0.9;

impl ProfilePoint {
    /// Sets `saturated` and `client_bound` from the measured stage.
    ///
    /// Saturated: the server completed fewer requests than the schedule sent. Completions are
    /// counted over the wall time less the median end-to-end latency (a server that keeps up
    /// finishes its last requests about one latency after the last send); and, since that
    /// reads a saturated stage of long answers as keeping up (its median latency is most of
    /// the wall time), also over the whole seconds in which the server was answering while the
    /// client still sent.
    ///
    /// Client-bound: the client could not deliver the load — it sent at under 90 % of the
    /// schedule's rate, or fell behind it by more than the mean gap between two sends (and by
    /// more than the validity rule's send-lag bound) at p99. A client flagged for anything
    /// else (the hypervisor's steal, say) still delivered the load: that is the stage's
    /// validity, not this flag.
    pub fn assess(&mut self, s: &StageSummary) {
        let ok = s.requests.ok as f64;
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
                // Compared with what the schedule actually held, not the nominal rate, so
                // that a Poisson draw below its mean does not read as saturation.
                let scheduled = match s.planned.duration_s {
                    Some(d) if d > 0.0 && s.requests.sent > 0 => s.requests.sent as f64 / d,
                    _ => offered,
                };
                // The client is held to the schedule's own rate (the draw it planned), or
                // the offered rate when the summary does not say how many were planned.
                let planned = match (s.planned.requests, s.planned.duration_s) {
                    (Some(n), Some(d)) if d > 0.0 && n > 0 => n as f64 / d,
                    _ => offered,
                };
                let sent_rate = s.throughput.achieved_rate_per_s;
                let gap_ms = 1000.0 / planned.max(1e-9);
                let lag_bound = gap_ms.max(
                    ValidityRules::default().send_lag_limit_ms(s.latency[LatencyMetric::Ttft].p50),
                );
                self.client_bound = (sent_rate > 0.0 && sent_rate < SATURATION_RATIO * planned)
                    || s.client.send_lag_ms.p99 > lag_bound;
                self.saturated = achieved < SATURATION_RATIO * scheduled
                    || answered_share(s).is_some_and(|share| share < BACKLOG_SHARE)
                    || s.requests.failed as f64 > 0.1 * ok;
            }
            _ => {
                // Closed loop: the offered load adapts to the server, so only errors show it;
                // the client is the bound when it used every CPU it had.
                self.saturated = s.requests.failed as f64 > 0.1 * ok.max(1.0);
                let ceiling = f64::from(s.client.cores) * 100.0;
                self.client_bound =
                    ceiling > 0.0 && s.client.cpu_percent >= SATURATION_RATIO * ceiling;
            }
        }
    }
}

/// Below this share of the requests sent in the same seconds, completions show a backlog
/// growing: well under [`SATURATION_RATIO`], since the two counts are noisy apart.
const BACKLOG_SHARE: f64 = 0.75;
/// Sends the seconds [`answered_share`] reads must hold for their counts to say anything.
const BACKLOG_MIN_SENT: u64 = 100;

/// Requests completed over requests sent, in the whole seconds after the first completion
/// and before the schedule ended: a server that keeps up completes about as many as were sent
/// (those sent a latency earlier), one falling behind only as many as it can. `None` when
/// those seconds are fewer than 2 or hold too few sends.
fn answered_share(s: &StageSummary) -> Option<f64> {
    let end = s.planned.duration_s?;
    let first = s.timeline.iter().position(|p| p.completed > 0)?;
    let seconds: Vec<_> = s.timeline[first + 1..]
        .iter()
        .filter(|p| p.t_s + 1.0 <= end)
        .collect();
    let sent: u64 = seconds.iter().map(|p| p.sent).sum();
    let completed: u64 = seconds.iter().map(|p| p.completed).sum();
    (seconds.len() >= 2 && sent >= BACKLOG_MIN_SENT).then(|| completed as f64 / sent as f64)
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

    #[test]
    fn an_untrusted_client_that_kept_to_the_schedule_is_not_client_bound() {
        let mut p = point(10.0);
        let mut s = stage(2.0, 2.3, 20, 250.0, 10.0);
        s.validity.trusted = false;
        s.validity.reasons = vec!["the hypervisor stole 3 %".into()];
        s.client.send_lag_ms.p99 = 0.27;
        p.assess(&s);
        assert!(!p.client_bound);
        // A lag past the mean gap between sends (100 ms at 10/s) is.
        s.client.send_lag_ms.p99 = 150.0;
        p.assess(&s);
        assert!(p.client_bound);
    }

    fn second(t_s: f64, sent: u64, completed: u64) -> crate::metrics::TimelinePoint {
        crate::metrics::TimelinePoint {
            t_s,
            sent,
            completed,
            ..Default::default()
        }
    }

    #[test]
    fn a_backlog_of_long_answers_is_saturation() {
        // 80/s offered for 10 s against a server that completes 40/s, with answers so long
        // that the median latency is most of the wall time: the old rule alone read it as
        // keeping up.
        let mut p = point(80.0);
        let mut s = stage(10.0, 30.0, 800, 25_000.0, 80.0);
        s.timeline = (0..30)
            .map(|t| {
                second(
                    f64::from(t),
                    if t < 10 { 80 } else { 0 },
                    if t >= 3 { 40 } else { 0 },
                )
            })
            .collect();
        p.assess(&s);
        assert!(p.saturated);
        // The same stage against a server that keeps up is not.
        s.timeline = (0..30)
            .map(|t| {
                second(
                    f64::from(t),
                    if t < 10 { 80 } else { 0 },
                    if (3..13).contains(&t) { 80 } else { 0 },
                )
            })
            .collect();
        s.wall_time_s = 13.0;
        s.latency[crate::metrics::LatencyMetric::E2e].p50 = 3000.0;
        let mut q = point(80.0);
        q.assess(&s);
        assert!(!q.saturated);
    }
}
