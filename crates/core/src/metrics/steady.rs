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
//! batch intervals (`stats::batch_interval`) over the requests in send order, since
//! neighbouring requests share the server's queue and are not independent.

use hdrhistogram::Histogram;

use super::dist::{Bound, Dist, Figure, IntervalMethod, Intervals};
use super::latency::LatencyMetric;
use super::measure::{dist, histogram};
use super::record::RequestRecord;
use super::summary::{
    Latency, RequestCounts, StageSummary, SteadyState, Throughput, TimelinePoint,
};
use crate::stats::{BatchCi, batch_interval};

/// A second is in the window when its mean in flight is at least this share of the peak.
pub const STEADY_RATIO: f64 = 0.8;
/// Shorter than this (in whole seconds) and a stage has no window.
pub const MIN_WINDOW_S: usize = 3;
/// Requests a stage keeps the few numbers of (about 50 bytes each) for its window; past it,
/// the stage has no window (a note says so) and memory stops growing.
pub const MAX_KEPT: usize = 1_000_000;

const NONE: u32 = u32::MAX;

/// What one request contributes to the window: when, how it ended, its per-request latencies.
#[derive(Debug, Clone, Copy)]
pub(super) struct Kept {
    scheduled_ns: u64,
    done_ns: u64,
    /// Latencies in µs, indexed by [`LatencyMetric`]; [`NONE`] where it has none.
    us: [u32; LatencyMetric::COUNT],
    input_tokens: u32,
    output_tokens: u32,
    ok: bool,
    good: bool,
    first_turn: bool,
}

impl Kept {
    pub(super) fn of(r: &RequestRecord, good: bool) -> Kept {
        let us = std::array::from_fn(|i| match LatencyMetric::ALL[i].measure(r) {
            super::Sample::Ns(ns) => u32::try_from(ns / 1_000).unwrap_or(NONE - 1),
            _ => NONE,
        });
        Kept {
            scheduled_ns: r.scheduled_ns,
            done_ns: r.done_ns,
            us,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            ok: r.ok(),
            good,
            first_turn: r.opens_arrival(),
        }
    }
}

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

/// The stage's window from its timeline and kept requests; `None` when the load held at
/// [`STEADY_RATIO`] of its peak for less than [`MIN_WINDOW_S`] full seconds.
pub(super) fn window(
    timeline: &[TimelinePoint],
    wall_ns: u64,
    kept: &[Kept],
    confidence: f64,
) -> Option<SteadyState> {
    let full = (wall_ns / 1_000_000_000) as usize;
    let in_flight: Vec<f64> = timeline.iter().map(|p| p.in_flight).collect();
    let (from, to, peak) = steady_window(&in_flight, full)?;
    let (from_ns, to_ns) = (from as u64 * 1_000_000_000, to as u64 * 1_000_000_000);
    let mut inside: Vec<&Kept> = kept
        .iter()
        .filter(|k| k.scheduled_ns >= from_ns && k.done_ns <= to_ns)
        .collect();
    inside.sort_by_key(|k| k.scheduled_ns);
    let secs = (to - from) as f64;
    let latency = Latency::from_fn(|m| window_dist(m, &inside, confidence));
    let ended: Vec<&Kept> = kept
        .iter()
        .filter(|k| (from_ns..to_ns).contains(&k.done_ns))
        .collect();
    let ok_ended = ended.iter().filter(|k| k.ok);
    let sum = |f: fn(&Kept) -> u32| ok_ended.clone().map(|k| u64::from(f(k))).sum::<u64>();
    let good = inside.iter().filter(|k| k.good).count() as u64;
    let ok = inside.iter().filter(|k| k.ok).count() as u64;
    let sent = inside.len() as u64;
    let arrivals = kept
        .iter()
        .filter(|k| k.first_turn && (from_ns..to_ns).contains(&k.scheduled_ns))
        .count();
    Some(SteadyState {
        from_s: from as f64,
        to_s: to as f64,
        ratio: STEADY_RATIO,
        peak_in_flight: peak,
        mean_in_flight: in_flight[from..to].iter().sum::<f64>() / secs,
        requests: RequestCounts {
            sent,
            ok,
            failed: sent - ok,
            ..RequestCounts::default()
        },
        latency,
        throughput: Throughput {
            requests_per_s: ok_ended.clone().count() as f64 / secs,
            output_tokens_per_s: sum(|k| k.output_tokens) as f64 / secs,
            input_tokens_per_s: sum(|k| k.input_tokens) as f64 / secs,
            goodput_per_s: ended.iter().filter(|k| k.good).count() as f64 / secs,
            goodput_ratio: if sent == 0 {
                0.0
            } else {
                good as f64 / sent as f64
            },
            achieved_rate_per_s: arrivals as f64 / secs,
            // The window's inputs are not kept per request; the stage's figure stands.
            inputs_per_s: None,
        },
    })
}

/// One metric over the window's requests (in send order): the figures from a histogram as the
/// stage's are, the intervals from batches.
fn window_dist(metric: LatencyMetric, inside: &[&Kept], confidence: f64) -> Dist {
    let values: Vec<f64> = inside
        .iter()
        .map(|k| k.us[metric as usize])
        .filter(|v| *v != NONE)
        .map(f64::from)
        .collect();
    let mut h: Histogram<u64> = histogram();
    for v in &values {
        h.saturating_record(*v as u64);
    }
    let d = dist(&h);
    if values.is_empty() {
        return d;
    }
    let bound = |f: Figure| {
        let centre = f.of(&d) * 1e3;
        match batch_interval(&values, f.quantile(), centre, confidence) {
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
