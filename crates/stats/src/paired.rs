//! Paired proportions: two runs judged on the same prompts. Each prompt gives a pair of marks
//! (baseline right or wrong, current right or wrong); only the discordant pairs carry news.
//! Treating the two accuracies as independent proportions ignores that the same prompt is
//! easy or hard in both runs, which makes their difference's interval far too wide.

use super::error::StatsError;
use super::normal::{wilson_real, z};

/// The four cells of a paired 2×2 table: `both` right, `lost` (right in the baseline, wrong
/// now), `gained` (wrong in the baseline, right now), `neither`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pairs {
    pub both: u64,
    pub lost: u64,
    pub gained: u64,
    pub neither: u64,
}

impl Pairs {
    pub fn n(&self) -> u64 {
        self.both + self.lost + self.gained + self.neither
    }
}

/// McNemar's exact test, two-sided: under no change each discordant pair is a fair coin, so
/// the smaller of `lost` and `gained` is binomial(b + c, ½); p = 2·P(X ≤ min), at most 1.
/// 1 when there are no discordant pairs.
pub fn mcnemar_exact(p: &Pairs) -> f64 {
    let n = p.lost + p.gained;
    let k = p.lost.min(p.gained);
    if n == 0 {
        return 1.0;
    }
    // Summed in logs: n may be in the thousands, where 2^-n underflows term by term.
    let ln_half_n = n as f64 * std::f64::consts::LN_2;
    let mut ln_choose = 0.0f64;
    let mut tail = 0.0f64;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose - ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// The change of accuracy (current − baseline, as a fraction) and its interval at
/// `confidence`, by Newcombe's method 10 (1998, "Improved confidence intervals for the
/// difference between binomial proportions based on paired data"): the two marginal Wilson
/// intervals combined with the pairs' correlation φ. It stays inside [−1, 1] and behaves at
/// 0 and 1, where the Wald interval does not. `None` for no pairs.
pub fn paired_difference(
    p: &Pairs,
    confidence: f64,
) -> Result<Option<(f64, f64, f64)>, StatsError> {
    let z = z(confidence)?;
    let n = p.n();
    if n == 0 {
        return Ok(None);
    }
    let nf = n as f64;
    // Current's accuracy first: the difference is current − baseline.
    let cur = (p.both + p.gained) as f64;
    let base = (p.both + p.lost) as f64;
    let (p1, p2) = (cur / nf, base / nf);
    let (l1, u1) = wilson_real(cur, nf, z);
    let (l2, u2) = wilson_real(base, nf, z);
    let phi = phi(p);
    let d = p1 - p2;
    let down = ((p1 - l1).powi(2) - 2.0 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2).powi(2))
        .max(0.0)
        .sqrt();
    let up = ((u1 - p1).powi(2) - 2.0 * phi * (u1 - p1) * (p2 - l2) + (l2 - p2).powi(2))
        .max(0.0)
        .sqrt();
    Ok(Some((d, (d - down).max(-1.0), (d + up).min(1.0))))
}

/// The correlation of the two marks (current right, baseline right) over the pairs; 0 when a
/// margin is empty (one run all right or all wrong), as Newcombe sets it.
fn phi(p: &Pairs) -> f64 {
    // a: both right, b: right now only, c: right in the baseline only, d: neither.
    let (a, b, c, d) = (
        p.both as f64,
        p.gained as f64,
        p.lost as f64,
        p.neither as f64,
    );
    let denom = ((a + b) * (c + d) * (a + c) * (b + d)).sqrt();
    if denom == 0.0 {
        0.0
    } else {
        (a * d - b * c) / denom
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(both: u64, lost: u64, gained: u64, neither: u64) -> Pairs {
        Pairs {
            both,
            lost,
            gained,
            neither,
        }
    }

    #[test]
    fn mcnemar_matches_the_binomial_tail() {
        // 0 of 5 discordant the other way: 2 · ½⁵.
        assert!((mcnemar_exact(&pairs(10, 5, 0, 3)) - 0.0625).abs() < 1e-12);
        // 2 against 10: 2 · (1 + 12 + 66) / 4096.
        let p = mcnemar_exact(&pairs(50, 10, 2, 1));
        assert!((p - 2.0 * 79.0 / 4096.0).abs() < 1e-12, "{p}");
        // Symmetric, and capped at 1.
        assert_eq!(
            mcnemar_exact(&pairs(0, 2, 10, 0)),
            mcnemar_exact(&pairs(0, 10, 2, 0))
        );
        assert_eq!(mcnemar_exact(&pairs(5, 3, 3, 1)), 1.0);
        assert_eq!(mcnemar_exact(&pairs(5, 0, 0, 1)), 1.0);
        // Thousands of discordant pairs neither underflow nor overflow.
        let big = mcnemar_exact(&pairs(0, 2600, 2400, 0));
        assert!(big > 0.0 && big < 0.01, "{big}");
    }

    #[test]
    fn newcombe_method_10_by_hand() {
        // a=12, b=9, c=2, d=21 (n = 44), the first run the current one: the two Wilson
        // intervals (21/44, 14/44) and φ = (12·21 − 9·2)/√(21·23·14·30) combined as method 10
        // says, worked independently of this code (Python, z = 1.959964): 0.15909
        // [0.01821, 0.28916].
        let (d, lo, hi) = paired_difference(&pairs(12, 2, 9, 21), 0.95)
            .unwrap()
            .unwrap();
        assert!((d - 0.159_091).abs() < 1e-5, "{d}");
        assert!((lo - 0.018_210).abs() < 1e-5, "{lo}");
        assert!((hi - 0.289_157).abs() < 1e-5, "{hi}");
        // Baseline and current swapped: the interval mirrors.
        let (d2, lo2, hi2) = paired_difference(&pairs(12, 9, 2, 21), 0.95)
            .unwrap()
            .unwrap();
        assert!((d2 + d).abs() < 1e-12 && (lo2 + hi).abs() < 1e-12 && (hi2 + lo).abs() < 1e-12);
    }

    #[test]
    fn identical_marks_give_a_narrow_interval_around_zero() {
        let (d, lo, hi) = paired_difference(&pairs(90, 0, 0, 10), 0.95)
            .unwrap()
            .unwrap();
        assert_eq!(d, 0.0);
        assert!(lo < 0.0 && hi > 0.0 && hi - lo < 0.1, "[{lo}, {hi}]");
        assert_eq!(paired_difference(&Pairs::default(), 0.95).unwrap(), None);
        // A clear drop lies wholly below zero.
        let (d, _, hi) = paired_difference(&pairs(200, 60, 0, 40), 0.95)
            .unwrap()
            .unwrap();
        assert!(d < -0.19 && hi < 0.0, "{d} {hi}");
    }
}
