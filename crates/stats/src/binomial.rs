//! Which order statistics bound a quantile: for n i.i.d. samples, the number B of samples at or
//! below the true p-quantile is Binomial(n, p), so P(X₍ₗ₎ ≤ q_p ≤ X₍ᵤ₎) ≥ P(l ≤ B < u), with
//! equality for a continuous distribution. This file finds the ranks l < u (1-based) from
//! binomial tail sums; [`super::quantile`] maps them to values.
//!
//! Tails come from [`super::tails`]: exact sums up to [`super::NORMAL_APPROX_MIN_N`] samples (and
//! beyond while the binomial is narrow), a normal approximation with continuity correction
//! above.

use serde::{Deserialize, Serialize};

use super::error::StatsError;
use super::tails::Binomial;

/// The order statistics that bound a quantile, or how many samples it would take.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ranks {
    /// `low` < `high`, 1-based ranks; `confidence` is the coverage achieved, P(low ≤ B < high),
    /// at least the one asked for.
    Interval {
        low: u64,
        high: u64,
        confidence: f64,
    },
    /// No pair of ranks reaches the confidence with these samples; `needed_n` would.
    Insufficient { needed_n: u64 },
}

/// The ranks l < u whose order statistics bound the p-quantile with at least `confidence`.
///
/// Equal tails first: the largest l with P(B < l) ≤ α/2 and the smallest u with P(B ≥ u) ≤ α/2
/// (α = 1 − confidence), the tightest pair that is symmetric in probability (the classic
/// tables' construction: n = 100, median, 95 % → ranks 40 and 61). When one side cannot reach
/// α/2 even at its extreme rank (p99 of a few hundred samples: the top tail P(B = n) = pⁿ stays
/// above α/2), that side takes its extreme (u = n) and the other side gets what is left of α.
/// When even ranks 1 and n miss the confidence, the answer is [`Ranks::Insufficient`].
pub fn order_statistic_ranks(n: u64, p: f64, confidence: f64) -> Result<Ranks, StatsError> {
    check_quantile(p)?;
    check_confidence(confidence)?;
    Ok(match ranks(n, p, confidence) {
        Some((low, high, confidence)) => Ranks::Interval {
            low,
            high,
            confidence,
        },
        None => Ranks::Insufficient {
            needed_n: needed(p, confidence),
        },
    })
}

/// The one-sided bounds there are when a two-sided interval is out of reach: the largest rank
/// l with P(X₍ₗ₎ > q_p) ≤ α/2 (a lower bound) and the smallest u with P(X₍ᵤ₎ < q_p) ≤ α/2 (an
/// upper bound), each `None` when even the extreme rank misses. 12 samples bound p95 from
/// below (X₍₁₀₎ at 97.5 %) but not from above: a p95 that must stay under a threshold cannot
/// pass on them, yet one whose lower bound is over the threshold has failed.
pub fn one_sided_ranks(
    n: u64,
    p: f64,
    confidence: f64,
) -> Result<(Option<u64>, Option<u64>), StatsError> {
    check_quantile(p)?;
    check_confidence(confidence)?;
    if n == 0 {
        return Ok((None, None));
    }
    let b = Binomial::new(n, p);
    let half = (1.0 - confidence) / 2.0;
    Ok((b.max_low(half), b.min_high(half)))
}

/// The fewest samples for which [`order_statistic_ranks`] gives an interval: the smallest n
/// with (1−p)ⁿ + pⁿ ≤ 1 − confidence (p99 at 95 %: 299; the median: 6).
pub fn samples_needed(p: f64, confidence: f64) -> Result<u64, StatsError> {
    check_quantile(p)?;
    check_confidence(confidence)?;
    Ok(needed(p, confidence))
}

/// A quantile strictly between 0 and 1: the sample's minimum and maximum bound no quantile of
/// the distribution they come from.
pub(super) fn check_quantile(p: f64) -> Result<(), StatsError> {
    if p > 0.0 && p < 1.0 {
        Ok(())
    } else {
        Err(StatsError::OutOfRange {
            name: "quantile",
            value: p,
        })
    }
}

/// A confidence in [0.5, 1): below one half an "interval" says less than a coin.
pub(super) fn check_confidence(c: f64) -> Result<(), StatsError> {
    if (0.5..1.0).contains(&c) {
        Ok(())
    } else {
        Err(StatsError::OutOfRange {
            name: "confidence",
            value: c,
        })
    }
}

/// (low rank, high rank, achieved coverage), or None when no interval reaches `confidence`.
fn ranks(n: u64, p: f64, confidence: f64) -> Option<(u64, u64, f64)> {
    if n < 2 {
        return None;
    }
    let b = Binomial::new(n, p);
    let alpha = 1.0 - confidence;
    let half = alpha / 2.0;
    let (low, high) = match (b.max_low(half), b.min_high(half)) {
        (Some(l), Some(u)) => (l, u),
        (None, Some(_)) => (1, b.min_high(alpha - b.cdf(0))?),
        (Some(_), None) => (b.max_low(alpha - b.sf(n))?, n),
        (None, None) => return None,
    };
    // Widen, if need be, to hold the point estimate's rank (as hdrhistogram picks it): a wider
    // pair only covers more.
    let k = estimate_rank(n, p);
    let (low, high) = (low.min(k), high.max(k));
    let coverage = (1.0 - b.cdf(low - 1) - b.sf(high)).clamp(0.0, 1.0);
    Some((low, high, coverage))
}

/// The rank hdrhistogram's `value_at_quantile` reads: ⌈p·n⌉, at least 1.
pub(super) fn estimate_rank(n: u64, p: f64) -> u64 {
    ((p * n as f64).ceil() as u64).clamp(1, n.max(1))
}

fn needed(p: f64, confidence: f64) -> u64 {
    let ok = |n: u64| ranks(n, p, confidence).is_some();
    // (1−p)ⁿ + pⁿ ≤ α holds once max(p, 1−p)ⁿ ≤ α/2 and fails while it is above α: a bracket.
    let alpha = 1.0 - confidence;
    let ln_max = (-p.min(1.0 - p)).ln_1p();
    let at = |target: f64| (target.ln() / ln_max).max(1.0);
    let mut lo = (at(alpha).floor() as u64).max(2) - 1;
    let mut hi = (at(alpha / 2.0).ceil() as u64)
        .saturating_add(1)
        .max(lo + 1);
    for _ in 0..64 {
        if ok(hi) {
            break;
        }
        hi = hi.saturating_mul(2);
    }
    if ok(lo) {
        lo = 1;
    }
    // Invariant: !ok(lo), ok(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) { hi = mid } else { lo = mid }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NORMAL_APPROX_MIN_N;

    fn interval(n: u64, p: f64, c: f64) -> (u64, u64, f64) {
        match order_statistic_ranks(n, p, c).unwrap() {
            Ranks::Interval {
                low,
                high,
                confidence,
            } => (low, high, confidence),
            other => panic!("n {n} p {p}: {other:?}"),
        }
    }

    #[test]
    fn classic_table_values() {
        // Median, 95 %: the sign-test table found in nonparametric textbooks.
        let (l, u, c) = interval(100, 0.5, 0.95);
        assert_eq!((l, u), (40, 61));
        assert!((c - 0.9648).abs() < 1e-4, "{c}");
        let (l, u, _) = interval(20, 0.5, 0.95);
        assert_eq!((l, u), (6, 15));
        let (l, u, c) = interval(10, 0.5, 0.95);
        assert_eq!((l, u), (2, 9));
        assert!((c - (1.0 - 22.0 / 1024.0)).abs() < 1e-12, "{c}");
    }

    /// P(B ≤ k) for B ~ Binomial(n, a/b), k = 0..=n, as numerators over bⁿ: exact integers.
    fn exact_cdf(n: u32, a: u128, b: u128) -> (Vec<u128>, u128) {
        let mut binom = 1u128; // C(n, k)
        let mut cum = 0u128;
        let mut out = Vec::new();
        for k in 0..=n {
            if k > 0 {
                binom = binom * u128::from(n - k + 1) / u128::from(k);
            }
            cum += binom * a.pow(k) * (b - a).pow(n - k);
            out.push(cum);
        }
        (out, b.pow(n))
    }

    /// The same rule as `ranks`, written over exact rationals: tails compared with α/2 by
    /// cross-multiplication, α = alpha_num / alpha_den.
    fn rational_ranks(n: u32, a: u128, b: u128, alpha: (u128, u128)) -> Option<(u64, u64)> {
        if n < 2 {
            return None;
        }
        let (cdf, den) = exact_cdf(n, a, b);
        let le = |k: u64| cdf[k as usize]; // P(B ≤ k)
        let ge = |k: u64| {
            if k == 0 {
                den
            } else {
                den - cdf[k as usize - 1]
            }
        }; // P(B ≥ k)
        // tail ≤ limit_num / limit_den
        let within = |tail: u128, (ln, ld): (u128, u128)| tail * ld <= ln * den;
        let n = u64::from(n);
        let max_low = |lim| (1..=n).rev().find(|&l| within(le(l - 1), lim));
        let min_high = |lim| (1..=n).find(|&u| within(ge(u), lim));
        let half = (alpha.0, alpha.1 * 2);
        // tail ≤ α − t, for the other side's tail t: (tail + t)/den ≤ α.
        let within_rest = |tail: u128, t: u128| (tail + t) * alpha.1 <= alpha.0 * den;
        let (l, u) = match (max_low(half), min_high(half)) {
            (Some(l), Some(u)) => (l, u),
            (None, Some(_)) => (1, (1..=n).find(|&u| within_rest(ge(u), le(0)))?),
            (Some(_), None) => ((1..=n).rev().find(|&l| within_rest(le(l - 1), ge(n)))?, n),
            (None, None) => return None,
        };
        let k = estimate_rank(n, a as f64 / b as f64);
        Some((l.min(k), u.max(k)))
    }

    #[test]
    fn ranks_match_exact_rational_arithmetic() {
        // (p = a/b, largest n whose bⁿ·200 fits in u128)
        let cases = [
            (1u128, 2u128, 100u32),
            (1, 4, 58),
            (9, 10, 35),
            (19, 20, 27),
        ];
        let confidences = [(0.95, (5u128, 100u128)), (0.90, (1, 10)), (0.99, (1, 100))];
        for (a, b, max_n) in cases {
            let p = a as f64 / b as f64;
            for (c, alpha) in confidences {
                for n in 0..=max_n {
                    let want = rational_ranks(n, a, b, alpha);
                    let got = match order_statistic_ranks(u64::from(n), p, c).unwrap() {
                        Ranks::Interval { low, high, .. } => Some((low, high)),
                        Ranks::Insufficient { .. } => None,
                    };
                    assert_eq!(got, want, "n {n}, p {a}/{b}, confidence {c}");
                }
            }
        }
    }

    #[test]
    fn too_few_samples_say_how_many_would_do() {
        // p99 of 60 requests: even ranks 1 and 60 cover the p99 with 1 − 0.99⁶⁰ ≈ 45 % only.
        assert_eq!(
            order_statistic_ranks(60, 0.99, 0.95).unwrap(),
            Ranks::Insufficient { needed_n: 299 }
        );
        assert_eq!(samples_needed(0.5, 0.95).unwrap(), 6);
        assert_eq!(samples_needed(0.99, 0.95).unwrap(), 299);
        // At 299, the top takes its extreme rank and the bottom what is left of α.
        let (_, u, c) = interval(299, 0.99, 0.95);
        assert_eq!(u, 299);
        assert!(c >= 0.95, "{c}");
        for n in [0, 1] {
            assert!(matches!(
                order_statistic_ranks(n, 0.5, 0.95).unwrap(),
                Ranks::Insufficient { needed_n: 6 }
            ));
        }
    }

    #[test]
    fn samples_needed_is_the_threshold() {
        for p in [0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999] {
            for c in [0.5, 0.9, 0.95, 0.99, 0.999] {
                let m = samples_needed(p, c).unwrap();
                assert!(
                    matches!(
                        order_statistic_ranks(m, p, c).unwrap(),
                        Ranks::Interval { .. }
                    ),
                    "p {p} c {c} m {m}"
                );
                assert!(matches!(
                    order_statistic_ranks(m - 1, p, c).unwrap(),
                    Ranks::Insufficient { .. }
                ));
            }
        }
    }

    #[test]
    fn huge_and_extreme_inputs_stay_finite() {
        for n in [NORMAL_APPROX_MIN_N + 1, 1 << 40, u64::MAX] {
            for p in [1e-9, 0.001, 0.5, 0.999, 1.0 - 1e-9] {
                match order_statistic_ranks(n, p, 0.95).unwrap() {
                    Ranks::Interval {
                        low,
                        high,
                        confidence,
                    } => {
                        assert!(1 <= low && low < high && high <= n, "n {n} p {p}");
                        assert!(
                            (0.95..=1.0).contains(&confidence),
                            "n {n} p {p}: {confidence}"
                        );
                    }
                    Ranks::Insufficient { needed_n } => assert!(needed_n > n),
                }
            }
        }
        assert!(samples_needed(1e-300, 0.95).unwrap() > 1 << 62);
        for bad in [0.0, 1.0, -0.5, f64::NAN, f64::INFINITY] {
            assert!(order_statistic_ranks(100, bad, 0.95).is_err());
            assert!(order_statistic_ranks(100, 0.5, bad).is_err());
        }
        assert!(order_statistic_ranks(100, 0.5, 0.3).is_err());
    }
}
