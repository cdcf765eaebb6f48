//! Sampling token counts from a [`LengthDist`]. Sampling is total (never panics, always ≥ 1) so
//! that a recipe can be drawn from any plan; [`validate_length`] is what rejects nonsense at
//! compile time with a readable reason.

use rand::{Rng, RngExt};
use rand_distr::StandardNormal;

use super::LengthDist;

/// Why a length distribution cannot be sampled meaningfully (lowercase fragments).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LengthError {
    #[error("min must be ≥ 1")]
    MinZero,
    #[error("min {min} is greater than max {max}")]
    MinAboveMax { min: u32, max: u32 },
    #[error("a length must be ≥ 1")]
    Zero,
    #[error("choice needs at least one value")]
    NoChoice,
    #[error("every choice must be ≥ 1")]
    ZeroChoice,
    #[error("normal needs a finite mean and a stddev ≥ 0 (got mean {mean}, stddev {stddev})")]
    Normal { mean: f64, stddev: f64 },
    #[error("lognormal needs a median > 0 and a sigma ≥ 0 (got median {median}, sigma {sigma})")]
    LogNormal { median: f64, sigma: f64 },
}

/// Rejects a distribution that cannot be sampled meaningfully.
pub fn validate_length(dist: &LengthDist) -> Result<(), LengthError> {
    let bounds = |min: u32, max: u32| {
        if min == 0 {
            Err(LengthError::MinZero)
        } else if min > max {
            Err(LengthError::MinAboveMax { min, max })
        } else {
            Ok(())
        }
    };
    match dist {
        LengthDist::Fixed { value } if *value == 0 => Err(LengthError::Zero),
        LengthDist::Fixed { .. } => Ok(()),
        LengthDist::Choice { values } if values.is_empty() => Err(LengthError::NoChoice),
        LengthDist::Choice { values } if values.contains(&0) => Err(LengthError::ZeroChoice),
        LengthDist::Choice { .. } => Ok(()),
        LengthDist::Uniform { min, max } => bounds(*min, *max),
        &LengthDist::Normal {
            mean,
            stddev,
            min,
            max,
        } => {
            if !mean.is_finite() || !stddev.is_finite() || stddev < 0.0 {
                return Err(LengthError::Normal { mean, stddev });
            }
            bounds(min, max)
        }
        &LengthDist::LogNormal {
            median,
            sigma,
            min,
            max,
        } => {
            if !median.is_finite() || median <= 0.0 || !sigma.is_finite() || sigma < 0.0 {
                return Err(LengthError::LogNormal { median, sigma });
            }
            bounds(min, max)
        }
    }
}

impl LengthDist {
    /// Draws one token count. Invalid parameters degrade to something sensible rather than
    /// panicking; [`validate_length`] rejects them before a plan is built.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let clamp = |v: f64, min: u32, max: u32| {
            let (lo, hi) = ordered(min, max);
            // NaN fails every comparison, so it lands on `lo`.
            if v.is_nan() || v <= lo as f64 {
                lo
            } else if v >= hi as f64 {
                hi
            } else {
                v.round() as u32
            }
        };
        match self {
            LengthDist::Fixed { value } => (*value).max(1),
            LengthDist::Choice { values } => match values.len() {
                0 => 1,
                n => values[rng.random_range(0..n)].max(1),
            },
            LengthDist::Uniform { min, max } => {
                let (lo, hi) = ordered(*min, *max);
                rng.random_range(lo..=hi)
            }
            LengthDist::Normal {
                mean,
                stddev,
                min,
                max,
            } => {
                let z: f64 = rng.sample(StandardNormal);
                clamp(mean + stddev.abs() * z, *min, *max)
            }
            LengthDist::LogNormal {
                median,
                sigma,
                min,
                max,
            } => {
                let z: f64 = rng.sample(StandardNormal);
                clamp(median * (sigma.abs() * z).exp(), *min, *max)
            }
        }
    }

    /// The smallest and largest value this distribution can produce.
    pub fn bounds(&self) -> (u32, u32) {
        match self {
            LengthDist::Fixed { value } => ((*value).max(1), (*value).max(1)),
            LengthDist::Choice { values } => (
                values.iter().copied().min().unwrap_or(1).max(1),
                values.iter().copied().max().unwrap_or(1).max(1),
            ),
            LengthDist::Uniform { min, max }
            | LengthDist::Normal { min, max, .. }
            | LengthDist::LogNormal { min, max, .. } => ordered(*min, *max),
        }
    }
}

/// `(min, max)` with both ≥ 1 and in order, whatever the input.
fn ordered(a: u32, b: u32) -> (u32, u32) {
    let (a, b) = (a.max(1), b.max(1));
    (a.min(b), a.max(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    fn draw(dist: &LengthDist, n: usize) -> Vec<u32> {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        (0..n).map(|_| dist.sample(&mut rng)).collect()
    }

    fn mean(v: &[u32]) -> f64 {
        v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
    }

    #[test]
    fn fixed_and_choice() {
        assert!(
            draw(&LengthDist::Fixed { value: 42 }, 100)
                .iter()
                .all(|&v| v == 42)
        );
        let values = vec![3, 50, 900];
        let got = draw(
            &LengthDist::Choice {
                values: values.clone(),
            },
            3000,
        );
        assert!(got.iter().all(|v| values.contains(v)));
        for v in &values {
            let share = got.iter().filter(|&x| x == v).count() as f64 / 3000.0;
            assert!((share - 1.0 / 3.0).abs() < 0.05, "{v}: {share}");
        }
    }

    #[test]
    fn uniform_covers_its_inclusive_range() {
        let got = draw(&LengthDist::Uniform { min: 10, max: 20 }, 5000);
        assert_eq!(got.iter().min(), Some(&10));
        assert_eq!(got.iter().max(), Some(&20));
        assert!((mean(&got) - 15.0).abs() < 0.3);
    }

    #[test]
    fn normal_is_rounded_and_clamped() {
        let dist = LengthDist::Normal {
            mean: 100.0,
            stddev: 30.0,
            min: 80,
            max: 150,
        };
        let got = draw(&dist, 10_000);
        assert!(got.iter().all(|&v| (80..=150).contains(&v)));
        // Clamping piles mass on the bounds: P(z < -2/3) ≈ 25 %.
        let at_min = got.iter().filter(|&&v| v == 80).count() as f64 / 10_000.0;
        assert!((at_min - 0.25).abs() < 0.03, "{at_min}");
        let unclamped = LengthDist::Normal {
            mean: 100.0,
            stddev: 10.0,
            min: 1,
            max: 1000,
        };
        assert!((mean(&draw(&unclamped, 10_000)) - 100.0).abs() < 0.5);
    }

    #[test]
    fn lognormal_has_its_median_and_a_long_tail() {
        let dist = LengthDist::LogNormal {
            median: 200.0,
            sigma: 0.8,
            min: 1,
            max: 100_000,
        };
        let mut got = draw(&dist, 10_001);
        got.sort_unstable();
        let median = got[5000] as f64;
        assert!((median - 200.0).abs() < 10.0, "{median}");
        // Mean of a lognormal is median·exp(σ²/2) ≈ 275.
        assert!((mean(&got) - 275.4).abs() < 10.0);
        let capped = LengthDist::LogNormal {
            median: 200.0,
            sigma: 2.0,
            min: 50,
            max: 400,
        };
        assert!(draw(&capped, 5000).iter().all(|&v| (50..=400).contains(&v)));
    }

    #[test]
    fn invalid_distributions_are_rejected_but_never_panic() {
        let bad = [
            LengthDist::Fixed { value: 0 },
            LengthDist::Choice { values: vec![] },
            LengthDist::Uniform { min: 9, max: 3 },
            LengthDist::Normal {
                mean: f64::NAN,
                stddev: 1.0,
                min: 1,
                max: 5,
            },
            LengthDist::LogNormal {
                median: -1.0,
                sigma: 1.0,
                min: 1,
                max: 5,
            },
        ];
        for dist in &bad {
            assert!(validate_length(dist).is_err(), "{dist:?}");
            assert!(draw(dist, 50).iter().all(|&v| v >= 1));
        }
        assert!(validate_length(&LengthDist::Uniform { min: 1, max: 1 }).is_ok());
    }
}
