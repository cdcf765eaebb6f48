//! Intervals from the normal approximation, for the statistics that have no order-statistic
//! interval: a mean (the central limit theorem) and a proportion such as an error rate (the
//! Wilson score interval, which stays inside [0, 1] and behaves at 0 and at small n, unlike the
//! textbook p ± z·√(p(1−p)/n)).

use super::binomial::check_confidence;
use super::error::StatsError;

/// Fewer samples than this and a mean's normal interval is not given: the central limit
/// theorem needs a few dozen samples of a skewed latency distribution to hold.
pub const MEAN_MIN_N: u64 = 30;

/// The two-sided standard-normal quantile for `confidence`: 1.96 for 0.95.
pub fn z(confidence: f64) -> Result<f64, StatsError> {
    check_confidence(confidence)?;
    Ok(inverse_normal_cdf(0.5 + confidence / 2.0))
}

/// A mean with its interval: mean ± z·sd/√n. `None` under [`MEAN_MIN_N`] samples.
pub fn mean_interval(
    mean: f64,
    stdev: f64,
    n: u64,
    confidence: f64,
) -> Result<Option<(f64, f64)>, StatsError> {
    let z = z(confidence)?;
    if n < MEAN_MIN_N || !mean.is_finite() || !stdev.is_finite() {
        return Ok(None);
    }
    let half = z * stdev / (n as f64).sqrt();
    Ok(Some((mean - half, mean + half)))
}

/// The Wilson score interval of a proportion `k` of `n`, as fractions in [0, 1]. `None` for
/// n = 0.
pub fn wilson(k: u64, n: u64, confidence: f64) -> Result<Option<(f64, f64)>, StatsError> {
    let z = z(confidence)?;
    if n == 0 {
        return Ok(None);
    }
    Ok(Some(wilson_real(k.min(n) as f64, n as f64, z)))
}

/// The Wilson interval of `k` of `n` for the normal quantile `z`, k and n real (n > 0): the
/// interval a hypothetical n would give at the same proportion (see [`super::need`]).
pub(super) fn wilson_real(k: f64, n: f64, z: f64) -> (f64, f64) {
    let p = (k / n).clamp(0.0, 1.0);
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// How many more samples would likely shrink an interval whose end on the threshold's side is
/// `half_width` from the estimate to under `distance` from it: half-widths of normal intervals
/// fall as 1/√n, so n' = n·(half_width/distance)². `None` when the estimate is on the
/// threshold (no number of samples separates them).
pub fn more_samples(n: u64, half_width: f64, distance: f64) -> Option<u64> {
    if distance.is_nan() || distance <= 0.0 || !half_width.is_finite() {
        return None;
    }
    if half_width <= distance {
        return Some(0);
    }
    let ratio = half_width / distance;
    let needed = (n.max(1) as f64) * ratio * ratio;
    if needed > 1e15 {
        return None;
    }
    Some((needed.ceil() as u64).saturating_sub(n))
}

/// Acklam's rational approximation of the standard normal quantile (relative error < 1.2e-9),
/// refined by one Halley step on `erfc`.
fn inverse_normal_cdf(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let low = 0.024_25;
    let x = if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    // One Halley step: the approximation's error, e, over the density.
    let e = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_values_match_the_tables() {
        assert!((z(0.95).unwrap() - 1.959_963_985).abs() < 1e-8);
        assert!((z(0.99).unwrap() - 2.575_829_304).abs() < 1e-8);
        assert!((z(0.90).unwrap() - 1.644_853_627).abs() < 1e-8);
        assert!((z(0.5).unwrap() - 0.674_489_750).abs() < 1e-8);
        assert!(z(1.0).is_err() && z(0.2).is_err());
    }

    #[test]
    fn wilson_matches_a_worked_example_and_stays_in_range() {
        // 1 failure in 100 at 95 %: [0.0018, 0.0545] (Wilson 1927; Newcombe 1998, table I).
        let (lo, hi) = wilson(1, 100, 0.95).unwrap().unwrap();
        assert!((lo - 0.001_767).abs() < 1e-5, "{lo}");
        assert!((hi - 0.054_5).abs() < 1e-4, "{hi}");
        let (lo, hi) = wilson(0, 60, 0.95).unwrap().unwrap();
        assert_eq!(lo, 0.0);
        assert!(hi > 0.05 && hi < 0.07, "{hi}");
        let (lo, hi) = wilson(60, 60, 0.95).unwrap().unwrap();
        assert!(lo > 0.9 && (hi - 1.0).abs() < 1e-12, "{lo} {hi}");
        assert_eq!(wilson(0, 0, 0.95).unwrap(), None);
    }

    #[test]
    fn a_mean_needs_enough_samples() {
        assert_eq!(mean_interval(10.0, 2.0, 29, 0.95).unwrap(), None);
        let (lo, hi) = mean_interval(10.0, 2.0, 100, 0.95).unwrap().unwrap();
        assert!((hi - lo - 2.0 * 1.96 * 0.2).abs() < 1e-3);
    }

    #[test]
    fn more_samples_follows_the_square_root_law() {
        assert_eq!(more_samples(100, 2.0, 1.0), Some(300));
        assert_eq!(more_samples(100, 0.5, 1.0), Some(0));
        assert_eq!(more_samples(100, 1.0, 0.0), None);
    }
}
