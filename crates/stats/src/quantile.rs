//! A percentile of a histogram with its distribution-free confidence interval: the ranks from
//! [`super::binomial`] read through the histogram's cumulative counts. Also owns the estimate
//! of how many more samples would settle an interval that straddles a threshold.
//!
//! Values are in the histogram's unit (µs for the runner's); [`QuantileInterval::scaled`]
//! converts. HDR buckets are 0.1 % wide at 3 significant digits, so a rank names a bucket,
//! not a value: the lower bound is the lowest value of its bucket and the upper bound the
//! highest, which keeps the interval's coverage at least that of the exact order statistics.

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::binomial::{Ranks, estimate_rank, order_statistic_ranks};
use super::error::StatsError;

/// A percentile and the interval that holds the true one with probability `confidence`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QuantileInterval {
    /// The quantile, in (0, 1): 0.95 for p95.
    pub quantile: f64,
    /// The sample percentile, as hdrhistogram's `value_at_quantile` gives it (the highest
    /// value of the bucket holding rank ⌈p·n⌉), so it equals the stage's `Dist` figure.
    pub estimate: f64,
    /// Lowest value of the bucket holding the `low_rank`-th smallest sample.
    pub low: f64,
    /// Highest value of the bucket holding the `high_rank`-th smallest sample.
    pub high: f64,
    /// Coverage achieved by the ranks, P(low_rank ≤ B < high_rank) for B ~ Binomial(n, p):
    /// at least the confidence asked for (discreteness makes it a little more).
    pub confidence: f64,
    pub n: u64,
    pub low_rank: u64,
    pub high_rank: u64,
    /// Lowest value of the estimate's bucket: however many samples come, the lower bound
    /// cannot rise above it.
    pub bucket_low: f64,
}

impl QuantileInterval {
    /// The same interval with its values multiplied by `factor` (1e-3: µs → ms).
    pub fn scaled(self, factor: f64) -> QuantileInterval {
        QuantileInterval {
            estimate: self.estimate * factor,
            low: self.low * factor,
            high: self.high * factor,
            bucket_low: self.bucket_low * factor,
            ..self
        }
    }

    /// Whether `threshold` lies strictly inside the interval, so that the data cannot say on
    /// which side of it the true percentile is.
    pub fn straddles(&self, threshold: f64) -> bool {
        self.low < threshold && threshold < self.high
    }
}

/// A percentile's interval, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuantileCi {
    Interval(QuantileInterval),
    /// No interval of the asked confidence exists with `n` samples; `needed_n` would give one
    /// (p99 at 95 %: 299 samples).
    Insufficient {
        n: u64,
        needed_n: u64,
    },
}

/// The p-quantile of `h` with a distribution-free interval at `confidence` (in [0.5, 1)).
///
/// Assumes the recorded samples are i.i.d. draws from one distribution (docs/statistics.md
/// says what that means for requests of one run). Errors only for p outside (0, 1) or a
/// confidence outside [0.5, 1).
pub fn quantile_interval(
    h: &Histogram<u64>,
    p: f64,
    confidence: f64,
) -> Result<QuantileCi, StatsError> {
    let index = RankIndex::new(h);
    let n = index.n();
    match order_statistic_ranks(n, p, confidence)? {
        Ranks::Insufficient { needed_n } => Ok(QuantileCi::Insufficient { n, needed_n }),
        Ranks::Interval {
            low,
            high,
            confidence,
        } => {
            let k = estimate_rank(n, p);
            let (est_low, estimate) = index.bucket(k);
            Ok(QuantileCi::Interval(QuantileInterval {
                quantile: p,
                estimate: estimate as f64,
                low: index.bucket(low).0 as f64,
                high: index.bucket(high).1 as f64,
                confidence,
                n,
                low_rank: low,
                high_rank: high,
                bucket_low: est_low as f64,
            }))
        }
    }
}

/// The one-sided bounds of the p-quantile of `h` (lower, upper), each at (1 + confidence)/2,
/// for when [`quantile_interval`] finds too few samples for both: lowest value of the lower
/// bound's bucket, highest of the upper's.
pub fn one_sided_bounds(
    h: &Histogram<u64>,
    p: f64,
    confidence: f64,
) -> Result<(Option<f64>, Option<f64>), StatsError> {
    let index = RankIndex::new(h);
    let (low, high) = super::binomial::one_sided_ranks(index.n(), p, confidence)?;
    Ok((
        low.map(|r| index.bucket(r).0 as f64),
        high.map(|r| index.bucket(r).1 as f64),
    ))
}

/// What more sampling could do for an interval and a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SamplesToDecide {
    /// The threshold is outside the interval already (or on one of its ends).
    Decided,
    /// About this many samples more would likely move the interval's end past the threshold.
    More(u64),
    /// The threshold lies in the estimate's own bucket (or is not a number): no number of
    /// samples can separate them at this resolution.
    Undecidable,
}

/// How many more samples would likely make an interval that straddles `threshold` fall on one
/// side of it.
///
/// The interval's half-width on the threshold's side, h (high − estimate above, estimate −
/// low below), shrinks about as 1/√n: the ranks are n·p ± z·√(n·p·(1−p)), so in value the
/// half-width is z·√(p·(1−p)/n)/f(q_p). Holding the estimate where it is, the half-width falls
/// under the distance d = |threshold − estimate| once n' > n·(h/d)²; the answer is n' − n. It
/// is an estimate: the percentile moves as samples come, and if it moves towards the
/// threshold more samples are needed.
pub fn samples_to_decide(interval: &QuantileInterval, threshold: f64) -> SamplesToDecide {
    if !threshold.is_finite() {
        return SamplesToDecide::Undecidable;
    }
    if !interval.straddles(threshold) {
        return SamplesToDecide::Decided;
    }
    let est = interval.estimate;
    let (half_width, distance) = if threshold > est {
        (interval.high - est, threshold - est)
    } else {
        // The lower bound is a bucket's lowest value and cannot pass the estimate's bucket.
        if threshold >= interval.bucket_low {
            return SamplesToDecide::Undecidable;
        }
        (est - interval.low, est - threshold)
    };
    let n = interval.n as f64;
    let more = (n * (half_width / distance).powi(2) - n).ceil().max(1.0);
    // `as` saturates: an absurd distance gives u64::MAX, not a wrapped number.
    SamplesToDecide::More(more as u64)
}

/// Rank → bucket lookups over a histogram's recorded buckets, in order: the k-th smallest
/// recorded sample lies in the first bucket whose cumulative count reaches k.
pub(super) struct RankIndex {
    cumulative: Vec<u64>,
    lowest: Vec<u64>,
    highest: Vec<u64>,
}

impl RankIndex {
    pub(super) fn new(h: &Histogram<u64>) -> RankIndex {
        let mut index = RankIndex {
            cumulative: Vec::new(),
            lowest: Vec::new(),
            highest: Vec::new(),
        };
        let mut total = 0u64;
        for v in h.iter_recorded() {
            // Saturating: a decoded histogram's counts could sum past u64 (none recorded can).
            total = total.saturating_add(v.count_at_value());
            let top = v.value_iterated_to();
            index.cumulative.push(total);
            index.lowest.push(h.lowest_equivalent(top));
            index.highest.push(top);
        }
        index
    }

    /// Samples indexed.
    pub(super) fn n(&self) -> u64 {
        self.cumulative.last().copied().unwrap_or(0)
    }

    /// (lowest, highest) value of the bucket holding the `rank`-th smallest sample (1-based,
    /// clamped to the samples there are). (0, 0) for an empty histogram.
    pub(super) fn bucket(&self, rank: u64) -> (u64, u64) {
        if self.cumulative.is_empty() {
            return (0, 0);
        }
        let i = self
            .cumulative
            .partition_point(|&c| c < rank)
            .min(self.cumulative.len() - 1);
        (self.lowest[i], self.highest[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binomial::samples_needed;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;
    use rand_distr::{Distribution, LogNormal};

    /// Like the runner's: µs, 1 µs .. 1 day, 3 significant digits (metrics/aggregate.rs).
    fn runner_histogram() -> Histogram<u64> {
        Histogram::new_with_bounds(1, 86_400_000_000, 3).unwrap()
    }

    fn interval(h: &Histogram<u64>, p: f64) -> QuantileInterval {
        match quantile_interval(h, p, 0.95).unwrap() {
            QuantileCi::Interval(iv) => iv,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ranks_read_through_the_histogram() {
        // Values below 2048 have buckets of width 1: the k-th smallest sample is k itself.
        let mut h = runner_histogram();
        for v in 1..=1000 {
            h.record(v).unwrap();
        }
        let iv = interval(&h, 0.5);
        let Ranks::Interval { low, high, .. } = order_statistic_ranks(1000, 0.5, 0.95).unwrap()
        else {
            panic!()
        };
        assert_eq!((iv.low_rank, iv.high_rank), (low, high));
        assert_eq!((iv.low, iv.high), (low as f64, high as f64));
        assert_eq!(iv.estimate, h.value_at_quantile(0.5) as f64);
        assert_eq!(iv.n, 1000);
        assert!(iv.low < iv.estimate && iv.estimate < iv.high);
        let ms = iv.scaled(1e-3);
        assert!((ms.estimate - 0.5).abs() < 1e-12 && ms.n == 1000);
    }

    #[test]
    fn bounds_take_the_outer_edges_of_their_buckets() {
        // One value in a 512-µs-wide bucket: the interval is that whole bucket.
        let mut h = runner_histogram();
        h.record_n(1_000_000, 100).unwrap();
        let iv = interval(&h, 0.9);
        assert_eq!(iv.low, h.lowest_equivalent(1_000_000) as f64);
        assert_eq!(iv.high, h.highest_equivalent(1_000_000) as f64);
        assert_eq!(iv.estimate, h.value_at_quantile(0.9) as f64);
        assert_eq!(iv.bucket_low, iv.low);
        assert!(iv.low < 1e6 && 1e6 <= iv.high);
    }

    #[test]
    fn too_few_samples_are_insufficient() {
        let mut h = runner_histogram();
        for v in 0..60 {
            h.record(1_000 + v).unwrap();
        }
        assert_eq!(
            quantile_interval(&h, 0.99, 0.95).unwrap(),
            QuantileCi::Insufficient {
                n: 60,
                needed_n: 299
            }
        );
        let empty = runner_histogram();
        assert_eq!(
            quantile_interval(&empty, 0.5, 0.95).unwrap(),
            QuantileCi::Insufficient { n: 0, needed_n: 6 }
        );
        assert!(quantile_interval(&empty, 1.0, 0.95).is_err());
    }

    /// The 95 % interval covers the true quantile of a continuous distribution in 95 % of
    /// trials (a little more: the ranks' achieved coverage, plus the buckets' width).
    #[test]
    fn coverage_on_a_known_distribution() {
        const TRIALS: u64 = 1_000;
        // ln N(ln 80 ms, 0.5): true quantiles exp(μ + σ·z_p).
        let (mu, sigma) = ((80_000f64).ln(), 0.5);
        let d = LogNormal::new(mu, sigma).unwrap();
        for (p, z, n) in [
            (0.5, 0.0, 200usize),
            (0.9, 1.281_551_565_544_600_4, 500),
            (0.99, 2.326_347_874_040_840_8, 1_000),
        ] {
            let truth = (mu + sigma * z).exp();
            let mut covered = 0u64;
            let mut achieved = 0.0;
            let mut h = runner_histogram();
            for trial in 0..TRIALS {
                let mut rng = ChaCha8Rng::seed_from_u64(trial * 7 + n as u64);
                h.reset();
                for _ in 0..n {
                    // Truncated to whole µs, as the runner records ns / 1000.
                    h.saturating_record(d.sample(&mut rng) as u64);
                }
                let iv = interval(&h, p);
                achieved = iv.confidence;
                // A sample truncated to `high` was below high + 1.
                if iv.low <= truth && truth < iv.high + 1.0 {
                    covered += 1;
                }
            }
            let rate = covered as f64 / TRIALS as f64;
            let sd = (achieved * (1.0 - achieved) / TRIALS as f64).sqrt();
            assert!(
                (0.95 - 3.0 * sd..=achieved + 0.005 + 3.0 * sd).contains(&rate),
                "p {p}, n {n}: covered {rate}, ranks promise {achieved}"
            );
        }
    }

    #[test]
    fn samples_to_decide_follows_the_square_root_law() {
        let iv = QuantileInterval {
            quantile: 0.95,
            estimate: 100.0,
            low: 90.0,
            high: 110.0,
            confidence: 0.95,
            n: 1_000,
            low_rank: 930,
            high_rank: 965,
            bucket_low: 100.0,
        };
        // Half-width 10, distance 5: n' = n·(10/5)² = 4000, so 3000 more.
        assert_eq!(samples_to_decide(&iv, 105.0), SamplesToDecide::More(3_000));
        assert_eq!(samples_to_decide(&iv, 95.0), SamplesToDecide::More(3_000));
        assert_eq!(samples_to_decide(&iv, 109.0), SamplesToDecide::More(235));
        for decided in [110.0, 120.0, 90.0, 0.0] {
            assert_eq!(samples_to_decide(&iv, decided), SamplesToDecide::Decided);
        }
        for never in [100.0, f64::NAN, f64::INFINITY] {
            assert_eq!(samples_to_decide(&iv, never), SamplesToDecide::Undecidable);
        }
        let far = QuantileInterval {
            low: 0.0,
            high: 1e300,
            ..iv
        };
        assert_eq!(
            samples_to_decide(&far, 100.0 + 1e-9),
            SamplesToDecide::More(u64::MAX)
        );
    }

    /// The law `samples_to_decide` rests on: four times the samples, half the width.
    #[test]
    fn interval_half_width_shrinks_as_one_over_root_n() {
        let d = LogNormal::new((80_000f64).ln(), 0.5).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut h = runner_histogram();
        let mut widths = Vec::new();
        for n in [2_500, 10_000, 40_000] {
            while h.len() < n {
                h.saturating_record(d.sample(&mut rng) as u64);
            }
            let iv = interval(&h, 0.95);
            widths.push(iv.high - iv.low);
        }
        for pair in widths.windows(2) {
            let ratio = pair[0] / pair[1];
            assert!((1.6..2.5).contains(&ratio), "{widths:?}");
        }
        assert_eq!(samples_needed(0.95, 0.95).unwrap(), 59);
    }
}
