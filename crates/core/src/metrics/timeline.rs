//! The stage's per-second timeline, filled as records arrive, and merged from shards' partial
//! aggregators (see [`Timeline::merge`]).

use hdrhistogram::Histogram;

use super::measure::{small_histogram, us};
use super::summary::TimelinePoint;

const S: u64 = 1_000_000_000;

/// How many seconds behind the newest one a merged timeline keeps its percentiles open (see
/// [`Timeline::merge`]): far more than a shard's partial lags (it is handed over once a second),
/// and few enough that the open histograms stay small (2 × about 32 KiB a second, 11 seconds).
pub(super) const MERGE_OPEN_S: usize = 10;

/// Per-second buckets. A second's TTFT and E2E histograms stay open until the second is sealed,
/// then are reduced to its point's percentiles. Records arrive in completion order (nearly), so
/// a folding aggregator seals every earlier second when a later one completes (`seal_on_record`):
/// only the newest keeps histograms. A partial (a shard's, to be merged) seals nothing, so
/// that its seconds' histograms merge exactly with the other shards'.
pub(super) struct Timeline {
    points: Vec<TimelinePoint>,
    /// Nanoseconds in flight in each second, summed over the requests (exact whatever the
    /// order, where an `f64` sum would differ in its last bits): `in_flight` at the end.
    busy_ns: Vec<u64>,
    /// The open seconds, ascending, with their TTFT and E2E histograms.
    open: Vec<(usize, Histogram<u64>, Histogram<u64>)>,
    /// Seconds below this are sealed: a request completing in one is counted, not in its
    /// percentiles (a straggler).
    sealed_below: usize,
    seal_on_record: bool,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            points: Vec::new(),
            busy_ns: Vec::new(),
            open: Vec::new(),
            sealed_below: 0,
            seal_on_record: true,
        }
    }
}

impl Timeline {
    /// An empty timeline that seals nothing until it is merged or finished: a shard's partial.
    pub(super) fn partial() -> Self {
        Timeline {
            seal_on_record: false,
            ..Timeline::default()
        }
    }

    fn point(&mut self, second: usize) -> &mut TimelinePoint {
        if self.points.len() <= second {
            self.points.resize_with(second + 1, TimelinePoint::default);
        }
        &mut self.points[second]
    }

    pub(super) fn sent(&mut self, sent_ns: u64) {
        self.point((sent_ns / S) as usize).sent += 1;
    }

    /// Adds a request's time in flight, `[sent, done)`, to the seconds it spans: each
    /// second's `in_flight` is then its mean number of requests in flight.
    pub(super) fn occupied(&mut self, sent_ns: u64, done_ns: u64) {
        let mut t = sent_ns;
        while t < done_ns {
            let second = t / S;
            let end = ((second + 1) * S).min(done_ns);
            let i = second as usize;
            self.point(i);
            if self.busy_ns.len() <= i {
                self.busy_ns.resize(i + 1, 0);
            }
            self.busy_ns[i] += end - t;
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
        let second = (done_ns / S) as usize;
        let p = self.point(second);
        if ok {
            p.completed += 1;
            p.output_tokens += tokens;
        } else {
            p.failed += 1;
            return;
        }
        if second < self.sealed_below {
            return; // a straggler: counted, not in percentiles
        }
        if self.seal_on_record {
            self.seal_below(second);
        }
        let (_, ttft, e2e) = self.open_second(second);
        if let Some(t) = ttft_ns {
            ttft.saturating_record(us(t));
        }
        e2e.saturating_record(us(e2e_ns));
    }

    /// The histograms of open second `second`, opened if need be (the newest, most often).
    fn open_second(&mut self, second: usize) -> &mut (usize, Histogram<u64>, Histogram<u64>) {
        let i = match self.open.iter().rposition(|(s, _, _)| *s <= second) {
            Some(i) if self.open[i].0 == second => i,
            found => {
                let i = found.map_or(0, |i| i + 1);
                self.open
                    .insert(i, (second, small_histogram(), small_histogram()));
                i
            }
        };
        &mut self.open[i]
    }

    /// Seals every second below `second`: their histograms become their points' percentiles.
    fn seal_below(&mut self, second: usize) {
        self.sealed_below = self.sealed_below.max(second);
        let n = self.open.partition_point(|(s, _, _)| *s < second);
        if n == 0 {
            return;
        }
        let sealed: Vec<_> = self.open.drain(..n).collect();
        for (s, ttft, e2e) in sealed {
            let p = self.point(s);
            if !ttft.is_empty() {
                p.ttft_p50_ms = ttft.value_at_quantile(0.5) as f64 / 1e3;
            }
            if !e2e.is_empty() {
                p.e2e_p99_ms = e2e.value_at_quantile(0.99) as f64 / 1e3;
            }
        }
    }

    /// Takes in a partial's seconds: counts and time in flight add up, and each open second's
    /// histograms merge into this one's, so its percentiles are those of all the requests that
    /// completed in it, as one timeline folding them all gives when they arrive in the order of
    /// their completion second. A second this timeline sealed already takes the partial's
    /// requests as stragglers, as one timeline would; seconds more than [`MERGE_OPEN_S`] behind
    /// the newest open one are sealed after the merge, to bound memory. A second the partial
    /// sealed itself (it was not made a partial) keeps its percentiles where this timeline has
    /// none for it.
    pub(super) fn merge(&mut self, other: Timeline) {
        if self.points.len() < other.points.len() {
            self.points
                .resize_with(other.points.len(), TimelinePoint::default);
        }
        for (i, o) in other.points.into_iter().enumerate() {
            let p = &mut self.points[i];
            p.sent += o.sent;
            p.completed += o.completed;
            p.failed += o.failed;
            p.output_tokens += o.output_tokens;
            // Only an aggregator that seals its seconds has percentiles here (a partial has
            // none, so this costs it nothing).
            let sealed = o.ttft_p50_ms != 0.0 || o.e2e_p99_ms != 0.0;
            if sealed
                && p.ttft_p50_ms == 0.0
                && p.e2e_p99_ms == 0.0
                && !self.open.iter().any(|(s, _, _)| *s == i)
            {
                p.ttft_p50_ms = o.ttft_p50_ms;
                p.e2e_p99_ms = o.e2e_p99_ms;
            }
        }
        if self.busy_ns.len() < other.busy_ns.len() {
            self.busy_ns.resize(other.busy_ns.len(), 0);
        }
        for (a, b) in self.busy_ns.iter_mut().zip(other.busy_ns) {
            *a += b;
        }
        for (s, ttft, e2e) in other.open {
            if s < self.sealed_below {
                continue;
            }
            let (_, t, e) = self.open_second(s);
            // Both have the small histograms' bounds, so adding cannot fail.
            let _ = t.add(&ttft);
            let _ = e.add(&e2e);
        }
        if let Some(newest) = self.open.last().map(|(s, _, _)| *s) {
            self.seal_below(newest.saturating_sub(MERGE_OPEN_S));
        }
    }

    pub(super) fn finish(mut self) -> Vec<TimelinePoint> {
        self.seal_below(usize::MAX);
        for (i, p) in self.points.iter_mut().enumerate() {
            p.t_s = i as f64;
            p.in_flight = self.busy_ns.get(i).map_or(0.0, |&ns| ns as f64 / S as f64);
        }
        self.points
    }
}
