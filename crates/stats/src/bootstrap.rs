//! Whether a percentile changed between two runs: a bootstrap confidence interval for the
//! relative change of the percentile from a baseline histogram to a current one, and the
//! verdict it supports against a tolerance (regressed, improved, unchanged, inconclusive).
//!
//! The bootstrap needs no resampling of samples. The k-th order statistic of a resample of
//! size n from the empirical distribution F_n is F_n⁻¹(U₍ₖ₎), with U₍ₖ₎ the k-th smallest of n
//! uniforms, which is Beta(k, n − k + 1). So one replicate of a histogram's percentile is one
//! Beta draw and one rank lookup, exact for any n: 2,000 replicates of two histograms of a
//! million samples each take well under a millisecond.

use hdrhistogram::Histogram;
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Beta, Distribution};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::binomial::{
    Ranks, check_confidence, check_quantile, estimate_rank, order_statistic_ranks,
};
use super::error::StatsError;
use super::quantile::RankIndex;

/// The seed [`BootstrapOptions::default`] uses, so that `compare` gives the same answer for the
/// same two results.
pub const DEFAULT_SEED: u64 = 0x1f5e_ed0f_c0de_2024;
/// Fewer replicates cannot place the ends of a 95 % interval; requests for fewer get this many.
pub const MIN_REPLICATES: u32 = 200;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapOptions {
    /// In [0.5, 1).
    pub confidence: f64,
    /// Bootstrap replicates, at least [`MIN_REPLICATES`].
    pub replicates: u32,
    pub seed: u64,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        BootstrapOptions {
            confidence: 0.95,
            replicates: 2_000,
            seed: DEFAULT_SEED,
        }
    }
}

/// The relative change of a percentile, current vs baseline: +0.10 is 10 % higher.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelativeChange {
    pub quantile: f64,
    /// The two percentiles, in the histograms' unit (as `value_at_quantile` gives them).
    pub baseline: f64,
    pub current: f64,
    /// (current − baseline) / baseline.
    pub estimate: f64,
    /// Bootstrap percentile interval of the change at `confidence`.
    pub low: f64,
    pub high: f64,
    pub confidence: f64,
    pub replicates: u32,
}

/// A percentile's change, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeCi {
    Change(RelativeChange),
    /// A histogram has too few samples to bound the percentile at this confidence
    /// distribution-free (see [`super::quantile_interval`]), so no change is claimed:
    /// `needed_n` samples in each would do.
    Insufficient {
        baseline_n: u64,
        current_n: u64,
        needed_n: u64,
    },
}

/// Which way is good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Latencies.
    LowerIsBetter,
    /// Throughputs.
    HigherIsBetter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The whole interval is worse than the tolerance.
    Regressed,
    /// The whole interval is better than the tolerance.
    Improved,
    /// The whole interval lies within ± the tolerance.
    Unchanged,
    /// The interval straddles a tolerance bound (or there were too few samples).
    Inconclusive,
}

/// The relative change of the p-quantile from `baseline` to `current`, with a bootstrap
/// interval. Deterministic: the same histograms and options give the same answer.
///
/// Each replicate draws both percentiles independently (the runs are independent samples) and
/// takes their ratio; the interval is the replicates' α/2 and 1 − α/2 quantiles (percentile
/// bootstrap). A percentile of 0 (the zero bucket: send lag) counts as one unit in the
/// denominator, so the change stays finite.
pub fn relative_change(
    baseline: &Histogram<u64>,
    current: &Histogram<u64>,
    p: f64,
    options: &BootstrapOptions,
) -> Result<ChangeCi, StatsError> {
    check_quantile(p)?;
    check_confidence(options.confidence)?;
    let (base, cur) = (RankIndex::new(baseline), RankIndex::new(current));
    let (base_n, cur_n) = (base.n(), cur.n());
    // The same floor as a percentile's own interval: where the order statistics cannot bound
    // each percentile, a resample of them says nothing about their difference either.
    for n in [base_n, cur_n] {
        if let Ranks::Insufficient { needed_n } = order_statistic_ranks(n, p, options.confidence)? {
            return Ok(ChangeCi::Insufficient {
                baseline_n: base_n,
                current_n: cur_n,
                needed_n,
            });
        }
    }
    let (base_draw, cur_draw) = (Replicate::new(&base, p)?, Replicate::new(&cur, p)?);
    let ratio = |c: u64, b: u64| (c as f64 - b as f64) / b.max(1) as f64;
    let (b0, c0) = (base_draw.point(), cur_draw.point());

    let replicates = options.replicates.max(MIN_REPLICATES);
    let mut rng = ChaCha8Rng::seed_from_u64(options.seed);
    let mut changes: Vec<f64> = (0..replicates)
        .map(|_| {
            let b = base_draw.sample(&mut rng);
            let c = cur_draw.sample(&mut rng);
            ratio(c, b)
        })
        .collect();
    changes.sort_by(f64::total_cmp);
    let alpha = 1.0 - options.confidence;
    let last = changes.len() - 1;
    let at = |q: f64| changes[((q * changes.len() as f64).floor() as usize).min(last)];
    let (mut low, mut high) = (at(alpha / 2.0), at(1.0 - alpha / 2.0));
    let estimate = ratio(c0, b0);
    // The point estimate is one of the replicates' possible values; keep it inside.
    low = low.min(estimate);
    high = high.max(estimate);
    Ok(ChangeCi::Change(RelativeChange {
        quantile: p,
        baseline: b0 as f64,
        current: c0 as f64,
        estimate,
        low,
        high,
        confidence: options.confidence,
        replicates,
    }))
}

impl ChangeCi {
    /// The verdict, [`Verdict::Inconclusive`] when the samples were too few.
    pub fn verdict(&self, tolerance: f64, direction: Direction) -> Verdict {
        match self {
            ChangeCi::Change(c) => decide(c, tolerance, direction),
            ChangeCi::Insufficient { .. } => Verdict::Inconclusive,
        }
    }
}

/// The verdict on a change, given a relative `tolerance` (0.05: ±5 %; a negative or NaN one
/// counts as 0) and which direction is good. Regressed or improved only when the whole
/// interval lies beyond the tolerance; unchanged only when it lies within it.
pub fn decide(change: &RelativeChange, tolerance: f64, direction: Direction) -> Verdict {
    let t = if tolerance > 0.0 { tolerance } else { 0.0 };
    // Orient so that positive is worse.
    let (low, high) = match direction {
        Direction::LowerIsBetter => (change.low, change.high),
        Direction::HigherIsBetter => (-change.high, -change.low),
    };
    if low > t {
        Verdict::Regressed
    } else if high < -t {
        Verdict::Improved
    } else if low >= -t && high <= t {
        Verdict::Unchanged
    } else {
        Verdict::Inconclusive
    }
}

/// One histogram's bootstrap replicates of its p-quantile.
struct Replicate<'a> {
    index: &'a RankIndex,
    n: u64,
    k: u64,
    order_statistic: Beta<f64>,
}

impl<'a> Replicate<'a> {
    fn new(index: &'a RankIndex, p: f64) -> Result<Replicate<'a>, StatsError> {
        let n = index.n();
        let k = estimate_rank(n, p);
        // k ≥ 1 and n − k + 1 ≥ 1, so both shapes are positive; the error cannot happen.
        let order_statistic =
            Beta::new(k as f64, (n - k + 1) as f64).map_err(|_| StatsError::OutOfRange {
                name: "quantile",
                value: p,
            })?;
        Ok(Replicate {
            index,
            n,
            k,
            order_statistic,
        })
    }

    /// The percentile itself: the highest value of the bucket holding rank k.
    fn point(&self) -> u64 {
        self.index.bucket(self.k).1
    }

    /// The k-th smallest of a size-n resample: F_n⁻¹(U), U ~ Beta(k, n − k + 1).
    fn sample(&self, rng: &mut ChaCha8Rng) -> u64 {
        let u = self.order_statistic.sample(rng);
        let u = if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.5
        };
        let rank = ((u * self.n as f64).ceil() as u64).clamp(1, self.n);
        self.index.bucket(rank).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::LogNormal;

    fn runner_histogram() -> Histogram<u64> {
        Histogram::new_with_bounds(1, 86_400_000_000, 3).unwrap()
    }

    /// n lognormal latencies around 80 ms (µs), multiplied by `scale`.
    fn latencies(n: usize, scale: f64, seed: u64) -> Histogram<u64> {
        let d = LogNormal::new((80_000f64).ln(), 0.5).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut h = runner_histogram();
        for _ in 0..n {
            h.saturating_record((d.sample(&mut rng) * scale) as u64);
        }
        h
    }

    fn change(base: &Histogram<u64>, cur: &Histogram<u64>, p: f64) -> RelativeChange {
        match relative_change(base, cur, p, &BootstrapOptions::default()).unwrap() {
            ChangeCi::Change(c) => c,
            other => panic!("{other:?}"),
        }
    }

    /// Two runs of the same distribution: at 95 % and tolerance 0, about 5 % of pairs (or
    /// fewer) may look changed, and no more.
    #[test]
    fn same_distribution_is_rarely_flagged() {
        const TRIALS: u64 = 400;
        for p in [0.5, 0.95] {
            let mut flagged = 0;
            for t in 0..TRIALS {
                let c = change(
                    &latencies(1_000, 1.0, 2 * t),
                    &latencies(1_000, 1.0, 2 * t + 1),
                    p,
                );
                assert!(c.low <= c.estimate && c.estimate <= c.high);
                if decide(&c, 0.0, Direction::LowerIsBetter) != Verdict::Inconclusive {
                    flagged += 1;
                }
            }
            let rate = flagged as f64 / TRIALS as f64;
            assert!(rate <= 0.075, "p {p}: {rate} of equal pairs flagged");
        }
    }

    /// A true 15 % slowdown with 1,200 requests a run (a minute at 20 req/s) is found.
    #[test]
    fn a_fifteen_percent_shift_is_detected() {
        const TRIALS: u64 = 200;
        for (p, tolerance, min_rate) in [(0.5, 0.0, 0.99), (0.9, 0.0, 0.97), (0.5, 0.05, 0.9)] {
            let mut found = 0;
            for t in 0..TRIALS {
                let base = latencies(1_200, 1.0, 1_000 + 2 * t);
                let cur = latencies(1_200, 1.15, 1_001 + 2 * t);
                let v = decide(&change(&base, &cur, p), tolerance, Direction::LowerIsBetter);
                assert_ne!(v, Verdict::Improved);
                if v == Verdict::Regressed {
                    found += 1;
                }
            }
            let rate = found as f64 / TRIALS as f64;
            assert!(rate >= min_rate, "p {p} ±{tolerance}: found {rate}");
        }
    }

    #[test]
    fn same_inputs_same_answer() {
        let (a, b) = (latencies(500, 1.0, 1), latencies(500, 1.1, 2));
        let opts = BootstrapOptions::default();
        let first = relative_change(&a, &b, 0.9, &opts).unwrap();
        assert_eq!(first, relative_change(&a, &b, 0.9, &opts).unwrap());
        let other_seed = BootstrapOptions { seed: 7, ..opts };
        let ChangeCi::Change(c) = relative_change(&a, &b, 0.9, &other_seed).unwrap() else {
            panic!()
        };
        let ChangeCi::Change(f) = first else { panic!() };
        // The seed moves the interval's ends a little, never the point estimate.
        assert_eq!(c.estimate, f.estimate);
        assert!((c.low - f.low).abs() < 0.03 && (c.high - f.high).abs() < 0.03);
    }

    #[test]
    fn tiny_inputs_are_insufficient() {
        let empty = runner_histogram();
        let mut one = runner_histogram();
        one.record(1_000).unwrap();
        let opts = BootstrapOptions::default();
        for (a, b) in [(&empty, &empty), (&one, &one), (&empty, &one)] {
            let r = relative_change(a, b, 0.5, &opts).unwrap();
            assert!(
                matches!(r, ChangeCi::Insufficient { needed_n: 6, .. }),
                "{r:?}"
            );
            assert_eq!(
                r.verdict(0.05, Direction::LowerIsBetter),
                Verdict::Inconclusive
            );
        }
        let few = latencies(100, 1.0, 3);
        let r = relative_change(&few, &few, 0.99, &opts).unwrap();
        assert!(matches!(r, ChangeCi::Insufficient { needed_n: 299, .. }));
        assert!(relative_change(&few, &few, 1.0, &opts).is_err());
        assert!(
            relative_change(
                &few,
                &few,
                0.5,
                &BootstrapOptions {
                    confidence: 1.0,
                    ..opts
                }
            )
            .is_err()
        );
    }

    #[test]
    fn zero_percentiles_and_huge_counts_stay_finite() {
        // Send lag: mostly the zero bucket.
        let mut zeros = runner_histogram();
        zeros.record_n(0, 1_000).unwrap();
        let mut some = runner_histogram();
        some.record_n(0, 900).unwrap();
        some.record_n(5, 100).unwrap();
        let c = change(&zeros, &zeros, 0.5);
        assert_eq!((c.estimate, c.low, c.high), (0.0, 0.0, 0.0));
        assert_eq!(
            decide(&c, 0.0, Direction::LowerIsBetter),
            Verdict::Unchanged
        );
        let c = change(&zeros, &some, 0.95);
        assert!(c.estimate.is_finite() && c.high.is_finite() && c.estimate == 5.0);

        let mut big = runner_histogram();
        for (v, n) in [
            (10_000, 4_000_000_000u64),
            (20_000, 3_000_000_000),
            (40_000, 10),
        ] {
            big.record_n(v, n).unwrap();
        }
        let c = change(&big, &big, 0.999);
        assert!(c.low.is_finite() && c.low <= 0.0 && 0.0 <= c.high, "{c:?}");
    }

    #[test]
    fn verdicts_follow_the_interval() {
        let c = |low, high| RelativeChange {
            quantile: 0.95,
            baseline: 100.0,
            current: 100.0,
            estimate: (low + high) / 2.0,
            low,
            high,
            confidence: 0.95,
            replicates: 2_000,
        };
        use Direction::*;
        use Verdict::*;
        let cases = [
            (0.06, 0.2, LowerIsBetter, Regressed),
            (0.06, 0.2, HigherIsBetter, Improved),
            (-0.2, -0.06, LowerIsBetter, Improved),
            (-0.2, -0.06, HigherIsBetter, Regressed),
            (-0.04, 0.05, LowerIsBetter, Unchanged),
            (-0.04, 0.05, HigherIsBetter, Unchanged),
            (0.02, 0.08, LowerIsBetter, Inconclusive),
            (-0.08, 0.2, LowerIsBetter, Inconclusive),
            (-0.08, -0.02, HigherIsBetter, Inconclusive),
        ];
        for (low, high, dir, want) in cases {
            assert_eq!(
                decide(&c(low, high), 0.05, dir),
                want,
                "[{low}, {high}] {dir:?}"
            );
        }
        // A NaN or negative tolerance counts as zero.
        assert_eq!(decide(&c(0.01, 0.02), f64::NAN, LowerIsBetter), Regressed);
        assert_eq!(decide(&c(0.0, 0.0), -1.0, LowerIsBetter), Unchanged);
    }
}
