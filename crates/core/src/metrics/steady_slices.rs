//! What the steady-state window needs of a stage's requests, in memory that does not grow with
//! them. The window is known only once the stage has ended, so its requests cannot be picked as
//! they arrive; keeping a few numbers per request (as this once did, up to a million requests,
//! then no window) grows with the run. Instead, time is cut into slices, and each slice holds:
//!
//! - for the requests scheduled in it, split by the slice their end rounds up to (a window keeps
//!   only the requests that both began and ended inside it): their counts, and their latencies
//!   as sparse HDR histograms with the stage's own buckets (3 significant digits), so that the
//!   window's histogram, merged from its slices, is the one its requests would have filled;
//! - what ended in it (successes, good ones, their tokens) and the first turns scheduled in it.
//!
//! Slices start a quarter second wide. When they would pass [`MAX_SLICES`], or their size on
//! the heap [`MAX_BYTES`], neighbours merge and the width doubles: memory is bounded whatever
//! the number of requests, and the window is the one a per-request record gives while the slices
//! are at most a second wide (edges on whole seconds).

use std::mem::size_of;

use super::latency::{LatencyMetric, Sample};
use super::measure::MAX_US;
use super::record::RequestRecord;

/// The first slices' width: a quarter second, so that the shortest window (3 s) still has 12
/// slices to batch its intervals from, and a second is a whole number of slices.
pub const BASE_WIDTH_NS: u64 = 250_000_000;
/// Slices at most before neighbours merge: ~17 minutes of quarter seconds, ~68 minutes of
/// whole seconds.
pub const MAX_SLICES: usize = 4096;
/// The slices' size on the heap at most (bytes) before neighbours merge.
pub const MAX_BYTES: usize = 16 << 20;

/// One request's latency bucket with its metric: `metric << 16 | bucket`.
type Key = u32;

/// The requests scheduled in one slice that ended by the start of slice `ends_by`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cell {
    pub(super) ends_by: u64,
    pub(super) sent: u64,
    pub(super) ok: u64,
    pub(super) good: u64,
    /// Their latencies: (metric and bucket, count), sorted by key.
    hist: Vec<(Key, u32)>,
}

impl Cell {
    /// The values recorded for `metric` (each its bucket's lowest value, in µs) and their
    /// counts: recorded again into a histogram of the stage's shape, each lands in its bucket.
    pub(super) fn values(&self, metric: LatencyMetric) -> impl Iterator<Item = (u64, u64)> + '_ {
        let m = metric as u32;
        let lo = self.hist.partition_point(|(k, _)| k >> 16 < m);
        let hi = self.hist.partition_point(|(k, _)| k >> 16 <= m);
        self.hist[lo..hi]
            .iter()
            .map(|&(k, n)| (bucket_value(k & 0xffff), u64::from(n)))
    }

    /// The buckets recorded for `metric` (see [`bucket`]) and their counts.
    pub(super) fn buckets(&self, metric: LatencyMetric) -> impl Iterator<Item = (u32, u64)> + '_ {
        let m = metric as u32;
        let lo = self.hist.partition_point(|(k, _)| k >> 16 < m);
        let hi = self.hist.partition_point(|(k, _)| k >> 16 <= m);
        self.hist[lo..hi]
            .iter()
            .map(|&(k, n)| (k & 0xffff, u64::from(n)))
    }

    /// Values recorded for `metric`.
    pub(super) fn count(&self, metric: LatencyMetric) -> u64 {
        self.values(metric).map(|(_, n)| n).sum()
    }

    fn add(&mut self, key: Key) {
        match self.hist.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(i) => self.hist[i].1 = self.hist[i].1.saturating_add(1),
            Err(i) => self.hist.insert(i, (key, 1)),
        }
    }

    fn absorb(&mut self, other: Cell) {
        self.sent += other.sent;
        self.ok += other.ok;
        self.good += other.good;
        let (a, b) = (std::mem::take(&mut self.hist), other.hist);
        let mut merged = Vec::with_capacity(a.len() + b.len());
        let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    let n = x.1.saturating_add(y.1);
                    let k = x.0;
                    a.next();
                    b.next();
                    (k, n)
                }
                (Some(x), Some(y)) if x.0 < y.0 => a.next().expect("peeked"),
                (_, Some(_)) => b.next().expect("peeked"),
                (Some(_), None) => a.next().expect("peeked"),
                (None, None) => break,
            };
            merged.push(next);
        }
        merged.shrink_to_fit();
        self.hist = merged;
    }
}

/// One slice of the stage's time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Slice {
    /// The requests scheduled in it, by the slice their end rounds up to (a few: a request
    /// rarely lasts many slices).
    pub(super) cells: Vec<Cell>,
    /// Successful requests that ended in it, the good ones among them, and their tokens.
    pub(super) ended_ok: u64,
    pub(super) ended_good: u64,
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
    /// First turns scheduled in it.
    pub(super) arrivals: u64,
}

impl Slice {
    /// Takes in `other`, its neighbour, once the width has doubled: each cell's end rounds up
    /// to a slice of the new width, and cells that now end by the same slice merge.
    fn absorb(&mut self, other: Slice) {
        self.add(other, |ends_by| ends_by.div_ceil(2));
    }

    /// Takes in `other`'s counts and cells, each cell's end slice mapped by `ends_by` (to the
    /// new width when neighbours merge, unchanged when slices of the same time merge).
    fn add(&mut self, other: Slice, ends_by: impl Fn(u64) -> u64) {
        self.ended_ok += other.ended_ok;
        self.ended_good += other.ended_good;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.arrivals += other.arrivals;
        for mut c in other.cells {
            c.ends_by = ends_by(c.ends_by);
            match self.cells.iter_mut().find(|x| x.ends_by == c.ends_by) {
                Some(x) => x.absorb(c),
                None => {
                    // Spare room left by inserts is given back as the slices merge.
                    c.hist.shrink_to_fit();
                    self.cells.push(c);
                }
            }
        }
        self.cells.shrink_to_fit();
    }
}

/// The stage's slices, filled as records arrive.
#[derive(Debug, Clone)]
pub(super) struct SteadySlices {
    width_ns: u64,
    slices: Vec<Slice>,
    /// Room for cells and for histogram entries, over all slices (capacities, not lengths:
    /// what the heap holds).
    cells: usize,
    entries: usize,
    max_slices: usize,
    max_bytes: usize,
}

impl Default for SteadySlices {
    fn default() -> Self {
        SteadySlices::with_limits(MAX_SLICES, MAX_BYTES)
    }
}

impl SteadySlices {
    /// Slices bounded by `max_slices` and `max_bytes` (tests use small ones).
    pub(super) fn with_limits(max_slices: usize, max_bytes: usize) -> Self {
        SteadySlices {
            width_ns: BASE_WIDTH_NS,
            slices: Vec::new(),
            cells: 0,
            entries: 0,
            max_slices: max_slices.max(1),
            max_bytes,
        }
    }

    pub(super) fn width_ns(&self) -> u64 {
        self.width_ns
    }

    pub(super) fn slices(&self) -> &[Slice] {
        &self.slices
    }

    /// The slices' size on the heap (bytes): what [`MAX_BYTES`] bounds.
    pub(super) fn bytes(&self) -> usize {
        self.slices.capacity() * size_of::<Slice>()
            + self.cells * size_of::<Cell>()
            + self.entries * size_of::<(Key, u32)>()
    }

    /// Adds what request `r` gives the window (`good`: it met the goodput SLO).
    pub(super) fn record(&mut self, r: &RequestRecord, good: bool) {
        let last = r.scheduled_ns.max(r.done_ns);
        while last / self.width_ns >= self.max_slices as u64 {
            self.double();
        }
        let w = self.width_ns;
        let (s, d) = ((r.scheduled_ns / w) as usize, (r.done_ns / w) as usize);
        if self.slices.len() <= s.max(d) {
            self.slices.resize_with(s.max(d) + 1, Slice::default);
        }
        if r.opens_arrival() {
            self.slices[s].arrivals += 1;
        }
        let ok = r.ok();
        if ok {
            let e = &mut self.slices[d];
            e.ended_ok += 1;
            e.ended_good += u64::from(good);
            e.input_tokens += u64::from(r.input_tokens);
            e.output_tokens += u64::from(r.output_tokens);
        }
        let ends_by = r.done_ns.div_ceil(w);
        let cells = &mut self.slices[s].cells;
        let i = match cells.iter().position(|c| c.ends_by == ends_by) {
            Some(i) => i,
            None => {
                let room = cells.capacity();
                cells.push(Cell {
                    ends_by,
                    sent: 0,
                    ok: 0,
                    good: 0,
                    hist: Vec::new(),
                });
                self.cells += cells.capacity() - room;
                cells.len() - 1
            }
        };
        let cell = &mut cells[i];
        cell.sent += 1;
        cell.ok += u64::from(ok);
        cell.good += u64::from(good);
        let room = cell.hist.capacity();
        for m in LatencyMetric::ALL {
            if let Sample::Ns(ns) = m.measure(r) {
                cell.add((m as u32) << 16 | bucket(ns / 1_000));
            }
        }
        self.entries += cell.hist.capacity() - room;
        while self.bytes() > self.max_bytes && self.slices.len() > 1 {
            self.double();
        }
    }

    /// Doubles the width: each pair of neighbours becomes one slice.
    fn double(&mut self) {
        self.width_ns *= 2;
        let old = std::mem::take(&mut self.slices);
        let mut merged: Vec<Slice> = Vec::with_capacity(old.len().div_ceil(2));
        for (i, slice) in old.into_iter().enumerate() {
            if i % 2 == 0 {
                merged.push(Slice::default());
            }
            merged.last_mut().expect("pushed").absorb(slice);
        }
        self.slices = merged;
        self.recount();
    }

    /// Counts the room the slices hold again (see [`SteadySlices::bytes`]).
    fn recount(&mut self) {
        self.cells = self.slices.iter().map(|s| s.cells.capacity()).sum();
        self.entries = self
            .slices
            .iter()
            .flat_map(|s| &s.cells)
            .map(|c| c.hist.capacity())
            .sum();
    }

    /// Empty slices with the same limits.
    pub(super) fn empty_like(&self) -> Self {
        SteadySlices::with_limits(self.max_slices, self.max_bytes)
    }

    /// Takes in another aggregator's slices. Both are brought to the wider width first (the
    /// narrower doubles, as a later record would have made it), then slices of the same time
    /// merge, and their cells by the slice they end by: the slices one aggregator folding both
    /// sets of records holds, as a slice's width follows from the latest instant recorded
    /// alone. Not so where [`MAX_BYTES`] widened them: the heap's size counts capacities, which
    /// depend on the order of the records, so one aggregator may double at another time than
    /// the merged slices do (never before 16 MiB of slices; documented in the merge tests).
    pub(super) fn merge(&mut self, mut other: SteadySlices) {
        while self.width_ns < other.width_ns {
            self.double();
        }
        while other.width_ns < self.width_ns {
            other.double();
        }
        if self.slices.len() < other.slices.len() {
            self.slices.resize_with(other.slices.len(), Slice::default);
        }
        for (a, b) in self.slices.iter_mut().zip(other.slices) {
            a.add(b, |ends_by| ends_by);
        }
        self.recount();
        while self.bytes() > self.max_bytes && self.slices.len() > 1 {
            self.double();
        }
    }

    /// The slices `[from, to)` inside the whole seconds `[from_s, to_s)` whose edges lie
    /// nearest them: the same instants while a slice is at most a second wide, else inward
    /// (the window never takes in a second the rule left out); `None` when no whole slice fits.
    pub(super) fn span(&self, from_s: usize, to_s: usize) -> Option<(usize, usize)> {
        let (w, s) = (self.width_ns, 1_000_000_000);
        let from = (from_s as u64 * s).div_ceil(w) as usize;
        let to = (to_s as u64 * s / w) as usize;
        (from < to).then_some((from, to))
    }
}

/// The bucket of `us` (µs) in the stage's histograms (HDR, 3 significant digits, lowest value
/// 1, highest [`MAX_US`]): 2,048 buckets of 1 µs, then 1,024 per doubling.
pub(super) fn bucket(us: u64) -> u32 {
    let v = us.min(MAX_US);
    let shift = 63 - (v | 2047).leading_zeros() - 10;
    (u64::from(shift) * 1024 + (v >> shift)) as u32
}

/// How many values bucket `i` holds (see [`bucket`]).
pub(super) fn bucket_width(i: u32) -> u64 {
    if i < 2048 { 1 } else { 1 << (i / 1024 - 1) }
}

/// The lowest value of bucket `i` (see [`bucket`]).
pub(super) fn bucket_value(i: u32) -> u64 {
    let i = u64::from(i);
    if i < 2048 {
        i
    } else {
        let shift = i / 1024 - 1;
        (i - shift * 1024) << shift
    }
}

#[cfg(test)]
#[path = "steady_slices_tests.rs"]
mod tests;
