//! The stage's per-second timeline, filled as records arrive.

use hdrhistogram::Histogram;

use super::measure::{small_histogram, us};
use super::summary::TimelinePoint;

/// Per-second buckets. Records arrive in completion order (nearly), so only the newest
/// bucket keeps histograms; older buckets are reduced to their point.
#[derive(Default)]
pub(super) struct Timeline {
    points: Vec<TimelinePoint>,
    current: Option<(usize, Histogram<u64>, Histogram<u64>)>,
}

impl Timeline {
    pub(super) fn point(&mut self, second: usize) -> &mut TimelinePoint {
        if self.points.len() <= second {
            self.points.resize_with(second + 1, TimelinePoint::default);
        }
        &mut self.points[second]
    }

    pub(super) fn sent(&mut self, sent_ns: u64) {
        self.point((sent_ns / 1_000_000_000) as usize).sent += 1;
    }

    /// Adds a request's time in flight, `[sent, done)`, to the seconds it spans: each
    /// second's `in_flight` is then its mean number of requests in flight.
    pub(super) fn occupied(&mut self, sent_ns: u64, done_ns: u64) {
        const S: u64 = 1_000_000_000;
        let mut t = sent_ns;
        while t < done_ns {
            let second = t / S;
            let end = ((second + 1) * S).min(done_ns);
            self.point(second as usize).in_flight += (end - t) as f64 / S as f64;
            t = end;
        }
    }

    pub(super) fn completed(
        &mut self,
        done_ns: u64,
        ok: bool,
        tokens: u64,
        ttft_ns: Option<u64>,
        e2e_ns: u64,
    ) {
        let second = (done_ns / 1_000_000_000) as usize;
        let p = self.point(second);
        if ok {
            p.completed += 1;
            p.output_tokens += tokens;
        } else {
            p.failed += 1;
            return;
        }
        match &self.current {
            Some((s, _, _)) if *s > second => return, // a straggler: counted, not in percentiles
            Some((s, _, _)) if *s == second => {}
            _ => {
                self.close_current();
                self.current = Some((second, small_histogram(), small_histogram()));
            }
        }
        if let Some((_, ttft, e2e)) = &mut self.current {
            if let Some(t) = ttft_ns {
                ttft.saturating_record(us(t));
            }
            e2e.saturating_record(us(e2e_ns));
        }
    }

    fn close_current(&mut self) {
        if let Some((s, ttft, e2e)) = self.current.take() {
            let p = self.point(s);
            if !ttft.is_empty() {
                p.ttft_p50_ms = ttft.value_at_quantile(0.5) as f64 / 1e3;
            }
            if !e2e.is_empty() {
                p.e2e_p99_ms = e2e.value_at_quantile(0.99) as f64 / 1e3;
            }
        }
    }

    pub(super) fn finish(mut self) -> Vec<TimelinePoint> {
        self.close_current();
        for (i, p) in self.points.iter_mut().enumerate() {
            p.t_s = i as f64;
        }
        self.points
    }
}
