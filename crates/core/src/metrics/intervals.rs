//! Confidence intervals of a distribution's figures, kept beside them in [`Dist`]: for one
//! run, distribution-free intervals of each percentile from the histogram's order statistics
//! and a normal interval of the mean; for a stage run in rounds, the interval of each figure's
//! median across rounds (which carries run-to-run variance too). See docs/statistics.md.

use super::dist::{Bound, Dist, Figure, IntervalMethod, Intervals};
use crate::stats::{QuantileCi, mean_interval, one_sided_bounds, quantile_interval, rounds_median};
use hdrhistogram::Histogram;

/// Intervals of a histogram of microseconds, in milliseconds; `None` when it is empty or the
/// confidence is not in [0.5, 1).
pub fn sample_intervals(h: &Histogram<u64>, confidence: f64) -> Option<Intervals> {
    sample_intervals_of(h, confidence, h.len())
}

/// [`sample_intervals`] for samples that are not independent: `independent` is how many
/// independent units they come from (the requests whose token gaps an ITL histogram holds —
/// gaps of one request move together). The ranks are taken as if there were only that many
/// samples, then read at the same quantiles of the whole histogram, which widens the interval
/// by about √(samples per unit), the design effect of clustered samples.
pub fn sample_intervals_of(
    h: &Histogram<u64>,
    confidence: f64,
    independent: u64,
) -> Option<Intervals> {
    if h.is_empty() || independent == 0 || !(0.5..1.0).contains(&confidence) {
        return None;
    }
    if independent < h.len() {
        return Some(clustered(h, confidence, independent));
    }
    let bound = |f: Figure| match f.quantile() {
        Some(q) => match quantile_interval(h, q, confidence) {
            Ok(QuantileCi::Interval(i)) => {
                let i = i.scaled(1e-3);
                Bound::Interval {
                    low: i.low,
                    high: i.high,
                    confidence: i.confidence,
                }
            }
            Ok(QuantileCi::Insufficient { needed_n, .. }) => {
                let (low, high) = one_sided_bounds(h, q, confidence).unwrap_or((None, None));
                Bound::Insufficient {
                    needed: needed_n,
                    low: low.map(|v| v / 1e3),
                    high: high.map(|v| v / 1e3),
                }
            }
            Err(_) => Bound::insufficient(0),
        },
        None => match mean_interval(h.mean(), h.stdev(), h.len(), confidence) {
            Ok(Some((low, high))) => Bound::Interval {
                low: low / 1e3,
                high: high / 1e3,
                confidence,
            },
            _ => Bound::insufficient(crate::stats::MEAN_MIN_N),
        },
    };
    Some(Intervals::from_fn(
        confidence,
        IntervalMethod::Samples,
        bound,
    ))
}

fn clustered(h: &Histogram<u64>, confidence: f64, units: u64) -> Intervals {
    use crate::stats::{Ranks, order_statistic_ranks};
    let bound = |f: Figure| match f.quantile() {
        Some(q) => match order_statistic_ranks(units, q, confidence) {
            Ok(Ranks::Interval {
                low,
                high,
                confidence,
            }) => {
                let n = units as f64;
                let low_value = h.lowest_equivalent(h.value_at_quantile((low as f64 - 1.0) / n));
                let high_value = h.highest_equivalent(h.value_at_quantile(high as f64 / n));
                Bound::Interval {
                    low: low_value as f64 / 1e3,
                    high: high_value as f64 / 1e3,
                    confidence,
                }
            }
            Ok(Ranks::Insufficient { needed_n }) => Bound::insufficient(needed_n),
            Err(_) => Bound::insufficient(0),
        },
        None => match mean_interval(h.mean(), h.stdev(), units, confidence) {
            Ok(Some((low, high))) => Bound::Interval {
                low: low / 1e3,
                high: high / 1e3,
                confidence,
            },
            _ => Bound::insufficient(crate::stats::MEAN_MIN_N),
        },
    };
    Intervals::from_fn(confidence, IntervalMethod::Samples, bound)
}

/// Intervals of the median across `rounds` of each figure; `None` without rounds.
pub fn rounds_intervals(rounds: &[Dist], confidence: f64) -> Option<Intervals> {
    let measured: Vec<&Dist> = rounds.iter().filter(|d| d.count > 0).collect();
    if measured.is_empty() || !(0.5..1.0).contains(&confidence) {
        return None;
    }
    let bound = |f: Figure| {
        let values: Vec<f64> = measured.iter().map(|d| f.of(d)).collect();
        match rounds_median(&values, confidence) {
            Ok(Some(r)) => Bound::Interval {
                low: r.low,
                high: r.high,
                confidence: r.confidence,
            },
            _ => Bound::insufficient(0),
        }
    };
    Some(Intervals::from_fn(
        confidence,
        IntervalMethod::Rounds,
        bound,
    ))
}

/// The median of each figure across rounds (the counts are summed, max and min taken whole),
/// with the across-rounds intervals.
pub fn median_of_rounds(rounds: &[Dist], confidence: f64) -> Dist {
    let measured: Vec<&Dist> = rounds.iter().filter(|d| d.count > 0).collect();
    if measured.is_empty() {
        return Dist::default();
    }
    let median = |f: Figure| {
        let values: Vec<f64> = measured.iter().map(|d| f.of(d)).collect();
        rounds_median(&values, 0.95)
            .ok()
            .flatten()
            .map_or(0.0, |r| r.median)
    };
    Dist {
        count: measured.iter().map(|d| d.count).sum(),
        p50: median(Figure::P50),
        p90: median(Figure::P90),
        p95: median(Figure::P95),
        p99: median(Figure::P99),
        p999: median(Figure::P999),
        max: measured.iter().map(|d| d.max).fold(f64::MIN, f64::max),
        min: measured.iter().map(|d| d.min).fold(f64::MAX, f64::min),
        mean: median(Figure::Mean),
        intervals: rounds_intervals(rounds, confidence),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(values_us: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 86_400_000_000, 3).unwrap();
        for v in values_us {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn every_percentile_gets_an_interval_around_it_or_says_how_many_samples() {
        let h = histogram((1..=200).map(|i| i * 1_000));
        let iv = sample_intervals(&h, 0.95).unwrap();
        let d = super::super::dist(&h);
        for f in [Figure::P50, Figure::P90, Figure::P95] {
            let (lo, hi) = iv.get(f).range().unwrap();
            assert!(
                lo <= f.of(&d) && f.of(&d) <= hi,
                "{f:?} {lo} {} {hi}",
                f.of(&d)
            );
        }
        // p99.9 of 200 samples has no 95 % interval: it would need 2,995.
        assert!(matches!(iv.p999, Bound::Insufficient { needed, .. } if needed > 200));
        let (lo, hi) = iv.mean.range().unwrap();
        assert!(lo < d.mean && d.mean < hi);
    }

    #[test]
    fn clustered_samples_get_wider_intervals() {
        let h = histogram((0..10_000).map(|i| 1_000 + (i * 37) % 5_000));
        let all = sample_intervals(&h, 0.95).unwrap();
        let per_request = sample_intervals_of(&h, 0.95, 100).unwrap();
        let width = |b: Bound| b.range().map(|(l, h)| h - l).unwrap();
        assert!(width(per_request.p50) > 3.0 * width(all.p50));
        // 100 requests are too few for a p99.9 interval however many gaps they hold.
        assert!(matches!(per_request.p999, Bound::Insufficient { .. }));
    }

    #[test]
    fn rounds_give_the_median_and_its_sign_test_interval() {
        let round = |p95: f64| Dist {
            count: 100,
            p95,
            max: p95 * 2.0,
            min: 1.0,
            ..Dist::default()
        };
        let rounds: Vec<Dist> = [40.0, 42.0, 41.0, 45.0, 39.0]
            .into_iter()
            .map(round)
            .collect();
        let d = median_of_rounds(&rounds, 0.95);
        assert_eq!(d.count, 500);
        assert_eq!(d.p95, 41.0);
        assert_eq!(d.max, 90.0);
        let iv = d.intervals.unwrap();
        assert_eq!(iv.method, IntervalMethod::Rounds);
        let Bound::Interval {
            low,
            high,
            confidence,
        } = iv.p95
        else {
            panic!("{iv:?}");
        };
        // Five rounds: [min, max] at 1 − 2/2⁵ = 93.75 %.
        assert_eq!((low, high), (39.0, 45.0));
        assert!((confidence - 0.9375).abs() < 1e-12);
    }

    #[test]
    fn bounds_round_trip_through_json() {
        let b = Bound::Interval {
            low: 1.0,
            high: 2.0,
            confidence: 0.96,
        };
        let text = serde_json::to_string(&b).unwrap();
        assert_eq!(text, r#"{"low":1.0,"high":2.0,"confidence":0.96}"#);
        assert_eq!(serde_json::from_str::<Bound>(&text).unwrap(), b);
        let i: Bound = serde_json::from_str(r#"{"needed":299}"#).unwrap();
        assert_eq!(i, Bound::insufficient(299));
    }
}
