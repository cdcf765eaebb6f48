//! Confidence sequences: intervals that hold at every sample size at once, so a stage may look
//! at its numbers as often as it likes and stop when they decide (`until-decided`), and the
//! interval at the stop is still valid. A fixed-sample interval looked at after every request
//! is not: with enough looks it excludes the truth somewhere almost surely.
//!
//! All three rest on Ville's inequality: a non-negative martingale with mean 1 ever reaches
//! 1/α with probability at most α. The martingales are mixtures of likelihood ratios (Robbins
//! 1970):
//!
//! - a proportion (error rate, goodput): the beta-binomial mixture. For a Bernoulli(p)
//!   sequence with k successes in n, M_n(p) = B(a + k, b + n − k)/B(a, b) / (pᵏ(1 − p)ⁿ⁻ᵏ)
//!   is a martingale under p; the sequence is {p : M_n(p) < 1/α};
//! - a quantile q_p (Howard & Ramdas 2022, "Sequential estimation of quantiles with
//!   applications to A/B-testing and best-arm identification", Bernoulli 28, 2022): the
//!   number of samples at or below q_p is such a Bernoulli(p) count, so the same boundary
//!   bounds it for all n at once, [k_lo(n), k_hi(n)], and the order statistics
//!   [X₍k_lo₎, X₍k_hi+1₎] hold q_p at every n;
//! - a mean: Robbins' normal mixture with the sample standard deviation plugged in, the
//!   asymptotic confidence sequence of Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas (2024,
//!   "Time-uniform central limit theory and asymptotic confidence sequences", Ann. Statist.):
//!   as asymptotic as the fixed-sample normal interval of a mean.
//!
//! Each mixture is tuned to be tightest at `tuned_for` samples (the stage's planned count):
//! its spread ρ solves x = −2 ln α + ln(1 + x) for x = n·ρ, at n = `tuned_for` (the tuning
//! rule of Howard, Ramdas, McAuliffe & Sekhon 2021, "Time-uniform, nonparametric,
//! nonasymptotic confidence sequences", Ann. Statist. 49). Any fixed tuning is valid; it only
//! moves where the sequence is tightest. docs/statistics.md states the assumptions.

use hdrhistogram::Histogram;

use super::binomial::{check_confidence, check_quantile};
use super::error::StatsError;
use super::quantile::RankIndex;

/// The fewest samples a sequence is tuned for: below, the mixture is too broad to decide
/// anything soon.
const MIN_TUNING: u64 = 30;

/// What a stage's sequences are tuned for when nothing says how many requests it sends (a
/// closed loop with a `duration` minimum and maximum).
pub const DEFAULT_TUNING: u64 = 1_000;

/// The number of requests an `until-decided` stage's confidence sequences are tightest at,
/// from its minimum and maximum counts where known: the geometric mean of the two, so that
/// neither a stage that decides at its minimum nor one that needs its maximum pays much for
/// the other (the width grows only with the log of the distance from it).
pub fn sequence_tuning(min: Option<u64>, max: Option<u64>) -> u64 {
    let n = match (min, max) {
        (Some(a), Some(b)) => ((a as f64) * (b.max(a) as f64)).sqrt() as u64,
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => DEFAULT_TUNING,
    };
    n.max(MIN_TUNING)
}

/// A Beta(a, b) mixture over the Bernoulli parameter, centred on `centre`, with the spread
/// that makes the boundary tightest at `tuned_for` samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BetaMixture {
    a: f64,
    b: f64,
    /// ln(1/α).
    log_level: f64,
}

impl BetaMixture {
    /// The mixture for a Bernoulli parameter near `centre` (in (0, 1)), at `confidence`,
    /// tightest around `tuned_for` samples.
    pub fn new(centre: f64, confidence: f64, tuned_for: u64) -> Result<BetaMixture, StatsError> {
        check_quantile(centre)?;
        check_confidence(confidence)?;
        let alpha = 1.0 - confidence;
        // Prior variance ρ·σ², σ² = c(1 − c): Beta(c·s, (1 − c)·s) has variance
        // c(1 − c)/(s + 1), so s + 1 = 1/ρ = n*/x.
        let x = optimal_x(alpha);
        let s = (tuned_for.max(MIN_TUNING) as f64 / x - 1.0).max(1.0);
        Ok(BetaMixture {
            a: centre * s,
            b: (1.0 - centre) * s,
            log_level: -alpha.ln(),
        })
    }

    /// ln M_n(p) for k successes in n; +∞ where p is impossible (k > 0 at p = 0).
    fn log_martingale(&self, k: f64, n: f64, p: f64) -> f64 {
        let (a, b) = (self.a, self.b);
        let ln_beta = |x: f64, y: f64| libm::lgamma(x) + libm::lgamma(y) - libm::lgamma(x + y);
        let mixed = ln_beta(a + k, b + n - k) - ln_beta(a, b);
        let likelihood = xlogy(k, p) + xlogy(n - k, 1.0 - p);
        mixed - likelihood
    }

    /// Whether `p` is still in the sequence after k successes in n.
    fn keeps(&self, k: f64, n: f64, p: f64) -> bool {
        self.log_martingale(k, n, p) < self.log_level
    }

    /// The sequence's interval for the Bernoulli parameter after `k` successes in `n` (as
    /// fractions): every p whose mixture martingale is under 1/α. k may be fractional (the
    /// expected count of a hypothetical n, for `stats::need`).
    pub fn proportion(&self, k: f64, n: f64) -> (f64, f64) {
        if n <= 0.0 {
            return (0.0, 1.0);
        }
        let k = k.clamp(0.0, n);
        let p_hat = k / n;
        // ln M_n is convex in p with its minimum (≤ 0) at k/n: one crossing on each side.
        let low = if k <= 0.0 {
            0.0
        } else {
            bisect(0.0, p_hat, |p| self.keeps(k, n, p))
        };
        let high = if k >= n {
            1.0
        } else {
            1.0 - bisect(0.0, 1.0 - p_hat, |q| self.keeps(k, n, 1.0 - q))
        };
        (low, high)
    }

    /// [k_lo, k_hi]: the counts of successes in `n` trials of a Bernoulli(`p`) sequence that
    /// the boundary keeps; the true count lies in it at every n with probability 1 − α.
    pub fn count_bounds(&self, n: u64, p: f64) -> (u64, u64) {
        let nf = n as f64;
        let keeps = |k: u64| self.keeps(k as f64, nf, p);
        // ln M_n is convex in k too; its minimum is near n·p.
        let mode = ((nf * p).round() as u64).min(n);
        let centre = [mode, mode.saturating_sub(1), (mode + 1).min(n)]
            .into_iter()
            .find(|&k| keeps(k))
            .unwrap_or(mode);
        let low = if keeps(0) {
            0
        } else {
            first_true(0, centre, keeps)
        };
        let high = if keeps(n) {
            n
        } else {
            first_true(centre, n, |k| !keeps(k)) - 1
        };
        (low, high)
    }
}

/// x = nρ at the tightest point: the root of x = L + ln(1 + x), L = −2 ln α.
fn optimal_x(alpha: f64) -> f64 {
    let l = -2.0 * alpha.ln();
    let mut x = l + (1.0 + l).ln();
    for _ in 0..50 {
        x = l + (1.0 + x).ln();
    }
    x
}

/// x·ln(y), 0 when x is 0 (the likelihood of no success at p = 0 is 1).
fn xlogy(x: f64, y: f64) -> f64 {
    if x == 0.0 { 0.0 } else { x * y.ln() }
}

/// The point in [lo, hi] where `inside` turns from false (at lo) to true (at hi), to 1e-12.
fn bisect(mut lo: f64, mut hi: f64, inside: impl Fn(f64) -> bool) -> f64 {
    for _ in 0..200 {
        if hi - lo <= 1e-12 * hi.max(1e-300) {
            break;
        }
        let mid = lo + (hi - lo) / 2.0;
        if inside(mid) { hi = mid } else { lo = mid }
    }
    lo
}

/// The smallest k in (lo, hi] with `f(k)`, given !f(lo) and f(hi) (and f monotone between).
fn first_true(mut lo: u64, mut hi: u64, f: impl Fn(u64) -> bool) -> u64 {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if f(mid) { hi = mid } else { lo = mid }
    }
    hi
}

/// The 1-based ranks of a quantile's confidence sequence among n samples: the lower bound is
/// the `low`-th smallest (`None`: no lower bound yet), the upper the `high`-th (`None`: none yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequentialRanks {
    pub low: Option<u64>,
    pub high: Option<u64>,
}

/// The ranks bounding the p-quantile at n samples, valid at every n at once with
/// `confidence`, tightest near `tuned_for` samples.
pub fn quantile_ranks(
    n: u64,
    p: f64,
    confidence: f64,
    tuned_for: u64,
) -> Result<SequentialRanks, StatsError> {
    let mixture = BetaMixture::new(p, confidence, tuned_for)?;
    if n == 0 {
        return Ok(SequentialRanks {
            low: None,
            high: None,
        });
    }
    let (k_lo, k_hi) = mixture.count_bounds(n, p);
    Ok(SequentialRanks {
        // At least k_lo samples lie at or below q_p, so the k_lo-th smallest does.
        low: (k_lo >= 1).then_some(k_lo),
        // At most k_hi lie below it, so the (k_hi + 1)-th smallest is at or above it.
        high: (k_hi < n).then_some(k_hi + 1),
    })
}

/// The interval of a proportion `k` of `n` (as fractions) valid at every n at once, tightest
/// near `tuned_for` samples, for a proportion judged against `centre` (its threshold).
pub fn proportion_sequence(
    k: u64,
    n: u64,
    centre: f64,
    confidence: f64,
    tuned_for: u64,
) -> Result<(f64, f64), StatsError> {
    let mixture = BetaMixture::new(centre.clamp(1e-6, 1.0 - 1e-6), confidence, tuned_for)?;
    Ok(mixture.proportion(k.min(n) as f64, n as f64))
}

/// The half-width of the asymptotic confidence sequence of a mean after n samples with
/// standard deviation `sd`: σ̂·√(2(nρ² + 1)/(n²ρ²) · ln(√(nρ² + 1)/α)), ρ² = x/n* (two-sided,
/// Waudby-Smith et al. 2024). `None` under [`super::MEAN_MIN_N`] samples.
pub fn mean_sequence_half_width(
    sd: f64,
    n: u64,
    confidence: f64,
    tuned_for: u64,
) -> Result<Option<f64>, StatsError> {
    check_confidence(confidence)?;
    if n < super::MEAN_MIN_N || !sd.is_finite() {
        return Ok(None);
    }
    let alpha = 1.0 - confidence;
    let rho2 = optimal_x(alpha) / tuned_for.max(MIN_TUNING) as f64;
    let nf = n as f64;
    let v = nf * rho2 + 1.0;
    Ok(Some(
        sd * (2.0 * v / (nf * nf * rho2) * (v.sqrt() / alpha).ln()).sqrt(),
    ))
}

/// A quantile's confidence sequence read from a histogram (values in its unit): the lowest value
/// of the bucket holding the lower rank, the highest of the bucket holding the upper, each
/// `None` while the sequence has no bound on that side. `units` is how many independent units
/// the samples come from (the requests whose token gaps an ITL histogram holds): with fewer
/// units than samples the ranks are taken among the units and read at the same quantiles of
/// the whole histogram, as the fixed-sample intervals are (`metrics::sample_intervals_of`).
///
/// `pending` more units are part of the sample but not yet in `h` (requests in flight at a
/// look): their values may be anything, so they are taken as 0 for the lower bound and as
/// unbounded for the upper, and the bounds hold whatever they turn out to be.
pub fn quantile_sequence(
    h: &Histogram<u64>,
    p: f64,
    confidence: f64,
    tuned_for: u64,
    (units, pending): (u64, u64),
) -> Result<(Option<f64>, Option<f64>), StatsError> {
    let index = RankIndex::new(h);
    let n = index.n();
    let units = units.min(n);
    let ranks = quantile_ranks(units + pending, p, confidence, tuned_for)?;
    // Ranks among the known units: the pending ones sort first for the lower bound (a rank
    // among them bounds at 0) and last for the upper (a rank among them bounds nothing).
    let low_rank = ranks
        .low
        .map(|l| l.checked_sub(pending).filter(|&k| k >= 1));
    let high_rank = ranks.high.filter(|&r| r <= units);
    if units < n {
        let u = units as f64;
        let low = low_rank.map(|k| {
            k.map_or(0.0, |k| {
                h.lowest_equivalent(h.value_at_quantile((k as f64 - 1.0) / u)) as f64
            })
        });
        let high =
            high_rank.map(|r| h.highest_equivalent(h.value_at_quantile(r as f64 / u)) as f64);
        return Ok((low, high));
    }
    Ok((
        low_rank.map(|k| k.map_or(0.0, |k| index.bucket(k).0 as f64)),
        high_rank.map(|r| index.bucket(r).1 as f64),
    ))
}

/// A mean's asymptotic confidence sequence from a histogram of `units` independent units:
/// mean ± [`mean_sequence_half_width`]; `None` under [`super::MEAN_MIN_N`] units.
pub fn mean_sequence(
    h: &Histogram<u64>,
    confidence: f64,
    tuned_for: u64,
    units: u64,
) -> Result<Option<(f64, f64)>, StatsError> {
    let half = mean_sequence_half_width(h.stdev(), units.min(h.len()), confidence, tuned_for)?;
    Ok(half.map(|w| (h.mean() - w, h.mean() + w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;
    use rand_distr::{Distribution, LogNormal, Uniform};

    #[test]
    fn the_tuning_solves_its_equation() {
        let x = optimal_x(0.05);
        assert!((x - (-2.0 * 0.05f64.ln() + (1.0 + x).ln())).abs() < 1e-9);
        assert!((8.0..8.5).contains(&x), "{x}");
    }

    #[test]
    fn a_proportion_sequence_holds_the_estimate_and_narrows() {
        let m = BetaMixture::new(0.01, 0.95, 400).unwrap();
        let (lo, hi) = m.proportion(0.0, 100.0);
        assert_eq!(lo, 0.0);
        assert!(hi > 0.01, "100 clean requests cannot show < 1 %: {hi}");
        let (lo2, hi2) = m.proportion(0.0, 1_000.0);
        assert!(hi2 < 0.01 && hi2 < hi, "{hi2}");
        assert_eq!(lo2, 0.0);
        let (lo, hi) = m.proportion(50.0, 1_000.0);
        assert!(lo < 0.05 && 0.05 < hi, "{lo} {hi}");
        // Wider than the fixed-sample Wilson interval: that is the price of looking always.
        let (wl, wh) = crate::wilson(50, 1_000, 0.95).unwrap().unwrap();
        assert!(lo < wl && wh < hi, "[{lo}, {hi}] vs Wilson [{wl}, {wh}]");
        assert_eq!(m.proportion(0.0, 0.0), (0.0, 1.0));
        // Tuned for proportions near 1 %, the mixture says little far from it, but enough.
        let (lo, hi) = m.proportion(10.0, 10.0);
        assert_eq!(hi, 1.0);
        assert!(lo > 0.01, "{lo}");
    }

    #[test]
    fn count_bounds_are_the_kept_counts() {
        let m = BetaMixture::new(0.95, 0.95, 200).unwrap();
        for n in [1u64, 10, 59, 100, 500, 5_000] {
            let (lo, hi) = m.count_bounds(n, 0.95);
            let nf = n as f64;
            for k in 0..=n {
                let kept = m.keeps(k as f64, nf, 0.95);
                assert_eq!(kept, (lo..=hi).contains(&k), "n {n} k {k}: [{lo}, {hi}]");
            }
        }
    }

    /// The defining property: over whole sequences, the truth leaves the interval at any look
    /// in at most α of them (checked after every sample, not at one n).
    #[test]
    fn coverage_holds_uniformly_over_time() {
        const RUNS: u64 = 400;
        const N: u64 = 2_000;
        let p = 0.05;
        let m = BetaMixture::new(p, 0.95, 200).unwrap();
        let mut missed_p = 0;
        let mut missed_q = 0;
        let d = LogNormal::new(0.0, 1.0).unwrap();
        // True p95 of lognormal(0, 1): e^1.6449.
        let q95 = 1.644_853_626_951_472_2f64.exp();
        for run in 0..RUNS {
            let mut rng = ChaCha8Rng::seed_from_u64(run);
            let u = Uniform::new(0.0, 1.0).unwrap();
            let (mut k, mut miss_p) = (0u64, false);
            let mut xs = Vec::with_capacity(N as usize);
            let mut miss_q = false;
            for n in 1..=N {
                if u.sample(&mut rng) < p {
                    k += 1;
                }
                // p left the interval ⇔ its martingale reached 1/α.
                miss_p |= !m.keeps(k as f64, n as f64, p);
                let x: f64 = d.sample(&mut rng);
                let at = xs.partition_point(|v: &f64| *v < x);
                xs.insert(at, x);
                if n % 25 == 0 {
                    let r = quantile_ranks(n, 0.95, 0.95, 200).unwrap();
                    let low = r.low.map_or(0.0, |l| xs[l as usize - 1]);
                    let high = r.high.map_or(f64::INFINITY, |h| xs[h as usize - 1]);
                    miss_q |= !(low <= q95 && q95 <= high);
                }
            }
            missed_p += u64::from(miss_p);
            missed_q += u64::from(miss_q);
        }
        // α = 5 % bounds the share; 3 standard errors of slack for 400 runs.
        let limit = (0.05 + 3.0 * (0.05f64 * 0.95 / RUNS as f64).sqrt()) * RUNS as f64;
        assert!(
            (missed_p as f64) <= limit,
            "proportion missed in {missed_p} of {RUNS}"
        );
        assert!(
            (missed_q as f64) <= limit,
            "quantile missed in {missed_q} of {RUNS}"
        );
    }

    #[test]
    fn quantile_ranks_need_more_samples_than_one_fixed_interval() {
        // p95: a fixed two-sided interval needs 59 samples; looking always costs more.
        let r = quantile_ranks(59, 0.95, 0.95, 100).unwrap();
        assert_eq!(r.high, None);
        let first = (60..1_000)
            .find(|&n| quantile_ranks(n, 0.95, 0.95, 100).unwrap().high.is_some())
            .unwrap();
        assert!((60..200).contains(&first), "{first}");
        let r = quantile_ranks(1_000, 0.95, 0.95, 100).unwrap();
        let (l, h) = (r.low.unwrap(), r.high.unwrap());
        assert!(l < 950 && 950 < h && h <= 1_000, "{l} {h}");
        assert!(quantile_ranks(100, 1.5, 0.95, 100).is_err());
    }

    #[test]
    fn pending_units_widen_a_quantile_sequence_whatever_they_turn_out_to_be() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 1_000_000, 3).unwrap();
        for v in 1..=1_000u64 {
            h.record(v * 100).unwrap();
        }
        let (lo, hi) = quantile_sequence(&h, 0.5, 0.95, 1_000, (1_000, 0)).unwrap();
        let (lo, hi) = (lo.unwrap(), hi.unwrap());
        let (plo, phi) = quantile_sequence(&h, 0.5, 0.95, 1_000, (1_000, 100)).unwrap();
        let (plo, phi) = (plo.unwrap(), phi.unwrap());
        assert!(plo < lo && hi < phi, "[{plo}, {phi}] vs [{lo}, {hi}]");
        // The pending 100 at either extreme: the bounds of all 1,100 lie inside the widened.
        for extreme in [1u64, 999_000] {
            let mut all = h.clone();
            all.record_n(extreme, 100).unwrap();
            let (alo, ahi) = quantile_sequence(&all, 0.5, 0.95, 1_000, (1_100, 0)).unwrap();
            assert!(plo <= alo.unwrap() && ahi.unwrap() <= phi, "{extreme}");
        }
        // More pending than known: no upper bound, a lower bound of 0.
        let (zlo, zhi) = quantile_sequence(&h, 0.5, 0.95, 1_000, (1_000, 5_000)).unwrap();
        assert_eq!((zlo, zhi), (Some(0.0), None));
    }

    #[test]
    fn a_mean_sequence_is_wider_than_its_fixed_interval_and_shrinks() {
        assert_eq!(mean_sequence_half_width(1.0, 29, 0.95, 100).unwrap(), None);
        let h100 = mean_sequence_half_width(1.0, 100, 0.95, 100)
            .unwrap()
            .unwrap();
        let h10k = mean_sequence_half_width(1.0, 10_000, 0.95, 100)
            .unwrap()
            .unwrap();
        assert!(h100 > 1.96 / 10.0, "{h100}");
        assert!(h10k < h100 / 5.0, "{h10k} {h100}");
    }
}
