//! Binomial(n, p) tail probabilities for [`super::binomial`]'s rank search: exact sums of the
//! binomial terms, or above [`NORMAL_APPROX_MIN_N`] samples (when the binomial is wide) the
//! normal approximation with continuity correction; and the searches for the ranks whose tails
//! fit a limit.

/// Above this many samples, and when n·p·(1−p) ≥ [`NORMAL_APPROX_MIN_VARIANCE`], binomial
/// tails come from the normal approximation with continuity correction; below, from exact sums.
/// At the switchover the two agree to within one rank (test `normal_matches_exact_at_switchover`).
pub const NORMAL_APPROX_MIN_N: u64 = 10_000_000;
/// A variance of 10⁴ keeps the binomial's skewness (1−2p)/σ under 0.01. A narrower binomial
/// stays exact at any n: its exact sum costs O(σ) terms, few in that case.
pub const NORMAL_APPROX_MIN_VARIANCE: f64 = 1e4;

/// Terms smaller than this, relative to the largest, are left out of the exact sums: what they
/// would add to any tail is below 10⁻²⁵, far under any α a confidence level can express.
const NEGLIGIBLE_TERM: f64 = 1e-30;
/// Tail comparisons allow this relative slack, so a tail that equals α/2 exactly in rational
/// arithmetic is not refused for a rounding error in its float sum.
const TAIL_SLACK: f64 = 1e-12;

/// Binomial(n, p) tails, exact or approximated.
pub(super) struct Binomial {
    n: u64,
    tails: Tails,
}

enum Tails {
    /// Terms k ∈ [start, start + len) (the others are negligible), as cumulative sums:
    /// `lower[i]` = P(B ≤ start + i), `upper[i]` = P(B ≥ start + i).
    Exact {
        start: u64,
        lower: Vec<f64>,
        upper: Vec<f64>,
    },
    Normal {
        mean: f64,
        sd: f64,
    },
}

impl Binomial {
    pub(super) fn new(n: u64, p: f64) -> Binomial {
        let variance = n as f64 * p * (1.0 - p);
        if n > NORMAL_APPROX_MIN_N && variance >= NORMAL_APPROX_MIN_VARIANCE {
            Binomial::normal(n, p)
        } else {
            Binomial::exact(n, p)
        }
    }

    fn normal(n: u64, p: f64) -> Binomial {
        let variance = n as f64 * p * (1.0 - p);
        Binomial {
            n,
            tails: Tails::Normal {
                mean: n as f64 * p,
                sd: variance.sqrt(),
            },
        }
    }

    /// Terms relative to the mode's, by the ratio of consecutive terms, so no factorial or
    /// gamma function is needed; normalised by their sum, which misses only negligible terms.
    /// Costs O(σ) = O(√(n·p·(1−p))) terms: 75,000 for n = 10⁷ at the median.
    fn exact(n: u64, p: f64) -> Binomial {
        let q = 1.0 - p;
        let mode = ((n as f64 + 1.0) * p).floor().clamp(0.0, n as f64) as u64;
        let mut below = Vec::new(); // terms mode−1, mode−2, …
        let (mut w, mut k) = (1.0f64, mode);
        while k > 0 {
            // P(k−1)/P(k) = k/(n−k+1) · q/p
            w *= k as f64 / (n - k + 1) as f64 * (q / p);
            if w < NEGLIGIBLE_TERM {
                break;
            }
            below.push(w);
            k -= 1;
        }
        let start = mode - below.len() as u64;
        let mut terms: Vec<f64> = below.into_iter().rev().collect();
        terms.push(1.0);
        let (mut w, mut k) = (1.0f64, mode);
        while k < n {
            // P(k+1)/P(k) = (n−k)/(k+1) · p/q
            w *= (n - k) as f64 / (k + 1) as f64 * (p / q);
            if w < NEGLIGIBLE_TERM {
                break;
            }
            terms.push(w);
            k += 1;
        }
        let total: f64 = terms.iter().sum();
        let mut acc = 0.0;
        let lower = terms
            .iter()
            .map(|t| {
                acc += t / total;
                acc.min(1.0)
            })
            .collect();
        // Summed from its own end, so small upper tails keep their precision.
        let mut upper = vec![0.0; terms.len()];
        let mut acc = 0.0;
        for (i, t) in terms.iter().enumerate().rev() {
            acc += t / total;
            upper[i] = acc.min(1.0);
        }
        Binomial {
            n,
            tails: Tails::Exact {
                start,
                lower,
                upper,
            },
        }
    }

    /// P(B ≤ k).
    pub(super) fn cdf(&self, k: u64) -> f64 {
        if k >= self.n {
            return 1.0;
        }
        match &self.tails {
            Tails::Exact { start, lower, .. } => match k.checked_sub(*start) {
                None => 0.0,
                Some(i) => lower.get(i as usize).copied().unwrap_or(1.0),
            },
            Tails::Normal { mean, sd } => phi((k as f64 + 0.5 - mean) / sd),
        }
    }

    /// P(B ≥ k).
    pub(super) fn sf(&self, k: u64) -> f64 {
        if k == 0 {
            return 1.0;
        }
        if k > self.n {
            return 0.0;
        }
        match &self.tails {
            Tails::Exact { start, upper, .. } => match k.checked_sub(*start) {
                None => 1.0,
                Some(i) => upper.get(i as usize).copied().unwrap_or(0.0),
            },
            Tails::Normal { mean, sd } => phi(-(k as f64 - 0.5 - mean) / sd),
        }
    }

    /// The largest rank l ≥ 1 with P(B < l) ≤ limit.
    pub(super) fn max_low(&self, limit: f64) -> Option<u64> {
        let fits = |l: u64| self.cdf(l - 1) <= limit * (1.0 + TAIL_SLACK);
        if !fits(1) {
            return None;
        }
        if fits(self.n) {
            return Some(self.n);
        }
        let (mut lo, mut hi) = (1u64, self.n); // fits(lo), !fits(hi)
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { lo = mid } else { hi = mid }
        }
        Some(lo)
    }

    /// The smallest rank u ≤ n with P(B ≥ u) ≤ limit.
    pub(super) fn min_high(&self, limit: f64) -> Option<u64> {
        let fits = |u: u64| self.sf(u) <= limit * (1.0 + TAIL_SLACK);
        if !fits(self.n) {
            return None;
        }
        // !fits(lo), as P(B ≥ 0) = 1 > limit; fits(hi).
        let (mut lo, mut hi) = (0u64, self.n);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { hi = mid } else { lo = mid }
        }
        Some(hi)
    }
}

/// The standard normal CDF, through erfc so that small tails keep their relative precision.
fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_matches_exact_at_switchover() {
        let n = NORMAL_APPROX_MIN_N;
        for p in [0.5, 0.9, 0.95, 0.99, 0.999] {
            let (exact, normal) = (Binomial::exact(n, p), Binomial::normal(n, p));
            for half in [0.025, 0.005, 0.05] {
                let (le, ln) = (exact.max_low(half).unwrap(), normal.max_low(half).unwrap());
                let (ue, un) = (
                    exact.min_high(half).unwrap(),
                    normal.min_high(half).unwrap(),
                );
                assert!(le.abs_diff(ln) <= 1, "p {p}: low {le} vs {ln}");
                assert!(ue.abs_diff(un) <= 1, "p {p}: high {ue} vs {un}");
                let tail_diff = (exact.cdf(le - 1) - normal.cdf(le - 1)).abs();
                assert!(tail_diff < 1e-3, "p {p}: tails differ by {tail_diff}");
            }
        }
    }
}
