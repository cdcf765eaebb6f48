//! The validator's rules for a stage's steady-state window (`steady`, schema 3): its bounds
//! inside the stage, its requests a part of the stage's, its figures finite, in order and
//! counted by its requests. A result whose window breaks them would put a window's figures
//! where they were never measured (a negative length, more requests than the stage sent).

use super::Checker;
use crate::metrics::{LatencyMetric, StageSummary};

impl Checker {
    pub(super) fn steady(&mut self, at: &str, s: &StageSummary) {
        let Some(w) = &s.steady else { return };
        let at = format!("{at}.steady");
        self.non_negative(&format!("{at}.from_s"), w.from_s);
        self.non_negative(&format!("{at}.to_s"), w.to_s);
        if w.from_s.partial_cmp(&w.to_s) != Some(std::cmp::Ordering::Less) {
            self.fail(
                format!("{at}.to_s"),
                w.to_s,
                format!("not after from_s ({})", w.from_s),
            );
        }
        if w.to_s > s.wall_time_s + 1e-9 {
            self.fail(
                format!("{at}.to_s"),
                w.to_s,
                format!("after the stage's end ({} s)", s.wall_time_s),
            );
        }
        if w.ratio.is_nan() || w.ratio <= 0.0 || w.ratio > 1.0 {
            self.fail(format!("{at}.ratio"), w.ratio, "a share in (0, 1]");
        }
        self.non_negative(&format!("{at}.peak_in_flight"), w.peak_in_flight);
        self.non_negative(&format!("{at}.mean_in_flight"), w.mean_in_flight);
        let q = &w.requests;
        for (name, n) in [("sent", q.sent), ("ok", q.ok), ("failed", q.failed)] {
            self.count(&format!("{at}.requests.{name}"), n);
        }
        if q.ok.checked_add(q.failed) != Some(q.sent) {
            self.fail(
                format!("{at}.requests.failed"),
                q.failed,
                format!("ok ({}) + failed ≠ sent ({})", q.ok, q.sent),
            );
        }
        self.at_most(
            &format!("{at}.requests.sent"),
            q.sent,
            s.requests.sent,
            "the stage's sent",
        );
        for (m, d) in w.latency.iter() {
            let field = format!("{at}.latency.{}", m.key());
            self.dist(&field, d);
            let limit = if m == LatencyMetric::Itl { 0 } else { q.ok };
            self.at_most(
                &format!("{field}.count"),
                d.count,
                limit,
                "the window's ok requests",
            );
        }
        self.throughput(&format!("{at}.throughput"), &w.throughput);
    }
}
