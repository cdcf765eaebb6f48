//! The steady-state window of a stage: the span where the load held near its peak, found from
//! the requests in flight each second, and the stage's figures over that span alone, so that a
//! ramp's and a drain's requests neither inflate the tail nor thin the throughput.
//!
//! The rule: a second is loaded when the mean number of requests in flight during it is at
//! least [`STEADY_RATIO`] of the stage's peak (the most in any full second); the window runs
//! from the first loaded second to the end of the last. It is a rule on the *load*, not on
//! the latencies: a server that degrades while the load is steady stays in the window (that
//! is what a gate must see), where a change-point test on latency would cut it out as "not
//! steady". The requests in flight are what both an open loop (rate × latency) and a closed
//! loop (its clients) ramp up and drain down, so one rule serves both.
//!
//! The window's latencies are those of the requests that were scheduled and finished inside
//! it; its throughput counts what finished inside it over its length. Their intervals are
//! batch intervals (`stats::batch_interval_of`) over the window's time slices in send order,
//! since neighbouring requests share the server's queue and are not independent. What the
//! window needs of each request is kept in time slices (`steady_slices.rs`), in memory that
//! does not grow with the requests.

use std::ops::Range;

use hdrhistogram::Histogram;

use super::dist::{Bound, Dist, Figure, IntervalMethod, Intervals};
use super::latency::LatencyMetric;
use super::measure::{dist, histogram};
use super::steady_slices::{Cell, Slice, SteadySlices, bucket_value, bucket_width};
use super::summary::{
    Latency, RequestCounts, StageSummary, SteadyState, Throughput, TimelinePoint,
};
use crate::stats::{BatchCi, MAX_BATCHES, MIN_BATCHES, batch_interval_of, batch_size_for};

/// A second is in the window when its mean in flight is at least this share of the peak.
pub const STEADY_RATIO: f64 = 0.8;
/// Shorter than this (in whole seconds) and a stage has no window.
pub const MIN_WINDOW_S: usize = 3;

/// The window `[from, to)` in whole seconds of the per-second mean in flight `in_flight`,
/// counting only its first `full` seconds (the last one of a stage is partial), and the
/// peak; `None` when nothing was in flight or the window is shorter than [`MIN_WINDOW_S`].
///
/// The peak is taken over the series smoothed across [`SMOOTH_S`] seconds: one second's
/// count is noisy (Poisson arrivals put a plateau of 10 in flight anywhere from 5 to 15), and
/// 80 % of a noisy maximum would cut into the plateau it tops.
pub fn steady_window(in_flight: &[f64], full: usize) -> Option<(usize, usize, f64)> {
    let full = &in_flight[..full.min(in_flight.len())];
    let peak = smoothed(full).into_iter().fold(0.0, f64::max);
    if peak <= 0.0 {
        return None;
    }
    let loaded = |v: &f64| v.is_finite() && *v >= STEADY_RATIO * peak;
    let from = full.iter().position(loaded)?;
    let to = full.iter().rposition(loaded)? + 1;
    (to - from >= MIN_WINDOW_S).then_some((from, to, peak))
}

/// Seconds averaged (centred; fewer at the stage's edges) for the peak.
pub const SMOOTH_S: usize = 5;

/// Each second's centred mean over [`SMOOTH_S`] seconds, non-finite values left out.
fn smoothed(series: &[f64]) -> Vec<f64> {
    let r = SMOOTH_S / 2;
    (0..series.len())
        .map(|k| {
            let span = &series[k.saturating_sub(r)..(k + r + 1).min(series.len())];
            let finite: Vec<f64> = span.iter().copied().filter(|v| v.is_finite()).collect();
            if finite.is_empty() {
                0.0
            } else {
                finite.iter().sum::<f64>() / finite.len() as f64
            }
        })
        .collect()
}

const S: u64 = 1_000_000_000;

/// The stage's window from its timeline and slices; `None` when the load held at
/// [`STEADY_RATIO`] of its peak for less than [`MIN_WINDOW_S`] full seconds.
pub(super) fn window(
    timeline: &[TimelinePoint],
    wall_ns: u64,
    slices: &SteadySlices,
    confidence: f64,
) -> Option<SteadyState> {
    let full = (wall_ns / S) as usize;
    let in_flight: Vec<f64> = timeline.iter().map(|p| p.in_flight).collect();
    let (from, to, peak) = steady_window(&in_flight, full)?;
    // `from` and `to` themselves while a slice is at most a second wide; past that, the
    // slice edges inside them (whole seconds still: the width is then a whole number of them).
    let span = slices.span(from, to)?;
    let w = slices.width_ns();
    let (from_ns, to_ns) = (span.0 as u64 * w, span.1 as u64 * w);
    let secs = (to_ns - from_ns) as f64 / 1e9;
    let seconds = &in_flight[((from_ns / S) as usize).min(in_flight.len())
        ..((to_ns / S) as usize).min(in_flight.len())];
    let (requests, latency, throughput) = figures(slices, span, secs, confidence);
    Some(SteadyState {
        from_s: from_ns as f64 / 1e9,
        to_s: to_ns as f64 / 1e9,
        ratio: STEADY_RATIO,
        peak_in_flight: peak,
        mean_in_flight: seconds.iter().sum::<f64>() / secs,
        requests,
        latency,
        throughput,
    })
}

/// The window's requests, latencies and throughput over slices `from..to`, `secs` long.
pub(super) fn figures(
    slices: &SteadySlices,
    (from, to): (usize, usize),
    secs: f64,
    confidence: f64,
) -> (RequestCounts, Latency, Throughput) {
    let all = slices.slices();
    let window = &all[from.min(all.len())..to.min(all.len())];
    let to = to as u64;
    let cells = || window.iter().flat_map(move |s| inside(s, to));
    let sum = |f: fn(&Cell) -> u64| cells().map(f).sum::<u64>();
    let (sent, ok, good) = (sum(|c| c.sent), sum(|c| c.ok), sum(|c| c.good));
    let ended = |f: fn(&Slice) -> u64| window.iter().map(f).sum::<u64>() as f64 / secs;
    let requests = RequestCounts {
        sent,
        ok,
        failed: sent - ok,
        ..RequestCounts::default()
    };
    let throughput = Throughput {
        requests_per_s: ended(|s| s.ended_ok),
        output_tokens_per_s: ended(|s| s.output_tokens),
        input_tokens_per_s: ended(|s| s.input_tokens),
        goodput_per_s: ended(|s| s.ended_good),
        goodput_ratio: if sent == 0 {
            0.0
        } else {
            good as f64 / sent as f64
        },
        achieved_rate_per_s: ended(|s| s.arrivals),
        // The window's inputs are not kept; the stage's figure stands.
        inputs_per_s: None,
    };
    let latency = Latency::from_fn(|m| window_dist(m, window, to, confidence));
    (requests, latency, throughput)
}

/// The cells of `slice` that ended by slice `to`: its requests inside a window ending there.
fn inside(slice: &Slice, to: u64) -> impl Iterator<Item = &Cell> {
    slice.cells.iter().filter(move |c| c.ends_by <= to)
}

/// Records `metric`'s values of the window's requests scheduled in `slices` into `h`.
fn fill(h: &mut Histogram<u64>, slices: &[Slice], to: u64, metric: LatencyMetric) {
    for (v, n) in slices
        .iter()
        .flat_map(|s| inside(s, to))
        .flat_map(|c| c.values(metric))
    {
        h.saturating_record_n(v, n);
    }
}

/// One metric over the window (`window`, its slices, ending at slice `to`): the figures from
/// the merged histogram, as the stage's are; the intervals from batches of whole slices in
/// send order, each batch's figure read from its own merged histogram.
fn window_dist(metric: LatencyMetric, window: &[Slice], to: u64, confidence: f64) -> Dist {
    let mut h: Histogram<u64> = histogram();
    fill(&mut h, window, to, metric);
    let d = dist(&h);
    if h.is_empty() {
        return d;
    }
    let counts: Vec<u64> = window
        .iter()
        .map(|s| inside(s, to).map(|c| c.count(metric)).sum())
        .collect();
    let bound = |f: Figure| {
        let per = batch_size_for(f.quantile());
        let b = (h.len() as usize / per).min(MAX_BATCHES);
        if b < MIN_BATCHES {
            return Bound::insufficient((per * MIN_BATCHES) as u64);
        }
        let mut held = Vec::new();
        let figures: Vec<f64> = batches(&counts, b)
            .into_iter()
            .map(|r| {
                held.clear();
                held.extend(
                    window[r]
                        .iter()
                        .flat_map(|s| inside(s, to))
                        .flat_map(|c| c.buckets(metric)),
                );
                batch_figure(&mut held, f.quantile())
            })
            .collect();
        match batch_interval_of(&figures, f.of(&d) * 1e3, confidence) {
            Ok(BatchCi::Interval { low, high, .. }) => Bound::Interval {
                low: low.max(0.0) / 1e3,
                high: high / 1e3,
                confidence,
            },
            Ok(BatchCi::Insufficient { needed }) => Bound::insufficient(needed),
            Err(_) => Bound::insufficient(0),
        }
    };
    let intervals = (0.5..1.0)
        .contains(&confidence)
        .then(|| Intervals::from_fn(confidence, IntervalMethod::Batches, bound));
    Dist { intervals, ..d }
}

/// A batch's figure (µs) from its buckets and their counts (in any order; at least one
/// value), read as the stage's histograms read theirs: quantile `q` is the highest value of
/// the bucket holding the ⌈q·n⌉-th value, the mean counts each value at its bucket's middle.
/// Read from the sparse buckets, not a dense histogram: a dense one's every read scans its
/// 27,648 counters, which for 20 batches of every figure of every metric cost more than a
/// long stage's whole fold.
fn batch_figure(buckets: &mut [(u32, u64)], q: Option<f64>) -> f64 {
    let n: u64 = buckets.iter().map(|b| b.1).sum();
    let highest = |i: u32| (bucket_value(i) + bucket_width(i) - 1) as f64;
    let Some(q) = q else {
        let middle = |i: u32| (bucket_value(i) + bucket_width(i) / 2) as f64;
        return buckets
            .iter()
            .map(|&(i, c)| middle(i) * c as f64)
            .sum::<f64>()
            / n.max(1) as f64;
    };
    // Runs of sorted buckets, one per cell: a stable sort merges them.
    buckets.sort_by_key(|b| b.0);
    let rank = ((q * n as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for &(i, c) in buckets.iter() {
        seen += c;
        if seen >= rank {
            return highest(i);
        }
    }
    buckets.last().map_or(0.0, |&(i, _)| highest(i))
}

/// Consecutive slices (their values' `counts`) cut into at most `b` batches of about equal
/// counts: a batch closes once the count so far reaches its share of the whole, and holds at
/// least one value (a slice is not split, so a batch may hold more than its share).
fn batches(counts: &[u64], b: usize) -> Vec<Range<usize>> {
    let total: u64 = counts.iter().sum();
    let mut out: Vec<Range<usize>> = Vec::with_capacity(b);
    let (mut start, mut run, mut held) = (0, 0u64, 0u64);
    for (i, &c) in counts.iter().enumerate() {
        run += c;
        held += c;
        if held > 0 && out.len() + 1 < b && run * b as u64 >= (out.len() as u64 + 1) * total {
            out.push(start..i + 1);
            (start, held) = (i + 1, 0);
        }
    }
    match out.last_mut() {
        Some(last) if held == 0 => last.end = counts.len(),
        _ => out.push(start..counts.len()),
    }
    out
}

impl StageSummary {
    /// The stage as its steady-state window saw it: its requests, latencies and throughput
    /// in place of the whole stage's (the rest, validity included, kept), for judging an
    /// assertion with `window "steady"`. `None` when the stage has no window.
    pub fn steady_view(&self) -> Option<StageSummary> {
        let w = self.steady.as_ref()?;
        Some(StageSummary {
            name: self.name.clone(),
            planned: self.planned.clone(),
            wall_time_s: w.to_s - w.from_s,
            requests: w.requests.clone(),
            latency: w.latency,
            tokens: self.tokens.clone(),
            throughput: w.throughput.clone(),
            client: self.client.clone(),
            validity: self.validity.clone(),
            notes: self.notes.clone(),
            ..StageSummary::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_skips_a_ramp_and_a_drain() {
        // A ramp over four seconds, six seconds near 8, a drain, then a partial second.
        let load = [
            1.0, 2.5, 4.0, 6.0, 7.5, 8.0, 7.8, 8.1, 7.0, 7.9, 3.0, 0.5, 99.0,
        ];
        let (from, to, peak) = steady_window(&load, 12).unwrap();
        assert_eq!((from, to), (4, 10));
        // The peak is the plateau's (seconds 5 to 9 average 7.76), not one second's, and
        // not the partial last second's.
        assert!((peak - 7.76).abs() < 1e-9, "{peak}");
    }

    #[test]
    fn one_noisy_second_does_not_raise_the_bar_above_the_plateau() {
        // A plateau of 10 in flight with one second at 16: 80 % of 16 would cut most of it.
        let load = [2.0, 10.0, 9.0, 11.0, 16.0, 10.0, 9.0, 10.0, 11.0, 1.0];
        let (from, to, _) = steady_window(&load, 10).unwrap();
        assert_eq!((from, to), (1, 9));
    }

    #[test]
    fn a_dip_inside_the_plateau_does_not_split_it() {
        let (from, to, _) = steady_window(&[8.0, 8.0, 2.0, 8.0, 8.0], 5).unwrap();
        assert_eq!((from, to), (0, 5));
    }

    #[test]
    fn a_batch_figure_is_what_its_histogram_reads() {
        let values: Vec<u64> = (0..3_000u64)
            .map(|i| (i * 7_919) % 90_000 + i % 13)
            .collect();
        let mut h: Histogram<u64> = histogram();
        let mut buckets: Vec<(u32, u64)> = Vec::new();
        for v in &values {
            h.saturating_record(*v);
            buckets.push((super::super::steady_slices::bucket(*v), 1));
        }
        for q in [0.5, 0.9, 0.95, 0.99, 0.999] {
            let got = batch_figure(&mut buckets, Some(q));
            assert_eq!(got, h.value_at_quantile(q) as f64, "q {q}");
        }
        assert!((batch_figure(&mut buckets, None) - h.mean()).abs() < 1e-6);
    }

    #[test]
    fn batches_cut_slices_at_equal_shares_of_the_values() {
        assert_eq!(batches(&[10; 20], 5), [0..4, 4..8, 8..12, 12..16, 16..20]);
        // Empty slices join a neighbour; a batch never holds no value.
        assert_eq!(batches(&[0, 5, 5, 0, 5, 5, 0, 0], 2), [0..3, 3..8]);
        // A lump takes more than its share; the count is at most `b`.
        assert_eq!(batches(&[1, 100, 1, 1, 1], 4), [0..2, 2..3, 3..4, 4..5]);
        assert_eq!(batches(&[100, 1, 1], 5), [0..1, 1..2, 2..3]);
        assert_eq!(batches(&[0, 0, 3, 0], 5), vec![0..4]);
    }

    #[test]
    fn no_window_without_load_or_time() {
        assert_eq!(steady_window(&[], 0), None);
        assert_eq!(steady_window(&[0.0, 0.0, 0.0, 0.0], 4), None);
        // A spike: one loaded second is no plateau.
        assert_eq!(
            steady_window(&[1.0, 1.0, 1.0, 30.0, 1.0, 1.0, 1.0], 7),
            None
        );
        // Garbage in the series is neither a peak nor loaded.
        assert_eq!(
            steady_window(&[f64::NAN, f64::INFINITY, 2.0, 2.0, 2.0], 5),
            Some((2, 5, 2.0))
        );
        // More full seconds claimed than the series holds.
        assert_eq!(steady_window(&[2.0, 2.0, 2.0], 99), Some((0, 3, 2.0)));
    }
}
