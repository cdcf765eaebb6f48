//! Ramp arrivals: an inhomogeneous Poisson process whose rate moves from `from` to `to` over
//! `over` (linearly, or in equal stairs) and stays at `to` afterwards. Drawn by time
//! rescaling: unit-rate exponential gaps in "expected arrivals" space, mapped back through the
//! inverse of the integrated rate Λ(t), so the schedule is exact for any shape.

use super::horizon::{ArrivalError, Horizon, MAX_ARRIVALS};

/// A stretch of time over which the rate changes linearly from `r0` to `r1`.
#[derive(Debug, Clone, Copy)]
struct Segment {
    len_s: f64,
    r0: f64,
    r1: f64,
}

impl Segment {
    fn mass(&self) -> f64 {
        (self.r0 + self.r1) / 2.0 * self.len_s
    }

    /// The time into the segment at which `x` expected arrivals have accumulated.
    fn invert(&self, x: f64) -> f64 {
        let slope = (self.r1 - self.r0) / self.len_s;
        if slope.abs() < 1e-12 {
            return x / self.r0;
        }
        // r0·τ + slope·τ²/2 = x, the root in [0, len].
        let disc = (self.r0 * self.r0 + 2.0 * slope * x).max(0.0);
        ((disc.sqrt() - self.r0) / slope).clamp(0.0, self.len_s)
    }
}

/// The ramp's segments; after the last one the rate stays at `to`.
fn segments(from: f64, to: f64, over_s: f64, steps: Option<u32>) -> Vec<Segment> {
    match steps {
        None => vec![Segment {
            len_s: over_s,
            r0: from,
            r1: to,
        }],
        Some(k) => {
            let k = k.max(2);
            (0..k)
                .map(|j| {
                    let r = from + (to - from) * f64::from(j) / f64::from(k - 1);
                    Segment {
                        len_s: over_s / f64::from(k),
                        r0: r,
                        r1: r,
                    }
                })
                .collect()
        }
    }
}

/// Λ⁻¹: the time (seconds) at which `x` expected arrivals have accumulated.
fn time_at(segs: &[Segment], to: f64, mut x: f64) -> f64 {
    let mut t = 0.0;
    for s in segs {
        let m = s.mass();
        if x <= m {
            return t + s.invert(x);
        }
        x -= m;
        t += s.len_s;
    }
    t + x / to
}

/// A ramp's integrated rate, ready to map expected arrivals to send offsets.
#[derive(Debug, Clone)]
pub(super) struct RampCurve {
    segs: Vec<Segment>,
    to: f64,
}

impl RampCurve {
    pub(super) fn new(
        from: f64,
        to: f64,
        over_s: f64,
        steps: Option<u32>,
        horizon: Horizon,
    ) -> Result<RampCurve, ArrivalError> {
        for r in [from, to] {
            if !r.is_finite() || r <= 0.0 {
                return Err(ArrivalError::BadRate(r));
            }
        }
        let over_s = if over_s.is_finite() && over_s > 0.0 {
            over_s
        } else {
            1e-9
        };
        let segs = segments(from, to, over_s, steps);
        let expected = match horizon {
            Horizon::Count(n) => n as f64,
            Horizon::Within(d) => {
                let total: f64 = segs.iter().map(Segment::mass).sum();
                let rest = (d.as_secs_f64() - over_s).max(0.0);
                total.min(d.as_secs_f64() * from.max(to)) + rest * to
            }
        };
        if expected > MAX_ARRIVALS as f64 {
            return Err(ArrivalError::TooMany {
                what: format!("ramp {from}/s → {to}/s"),
            });
        }
        Ok(RampCurve { segs, to })
    }

    /// The send offset (ns) at which `x` expected arrivals have accumulated.
    pub(super) fn offset_ns(&self, x: f64) -> u64 {
        (time_at(&self.segs, self.to, x) * 1e9)
            .round()
            .min(u64::MAX as f64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::Duration;
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    fn ramp_schedule(
        from: f64,
        to: f64,
        over_s: f64,
        steps: Option<u32>,
        horizon: Horizon,
        rng: &mut ChaCha8Rng,
    ) -> Result<Vec<u64>, ArrivalError> {
        let spec = super::super::ArrivalSpec::Ramp {
            from: crate::units::Rate(from),
            to: crate::units::Rate(to),
            over: Duration::from_secs_f64(over_s),
            steps,
        };
        Ok(crate::arrival::schedule(&spec, horizon, rng)?.unwrap_or_default())
    }

    fn count_between(v: &[u64], a: f64, b: f64) -> usize {
        v.iter()
            .filter(|&&t| (t as f64) >= a * 1e9 && (t as f64) < b * 1e9)
            .count()
    }

    #[test]
    fn linear_ramp_follows_its_rate() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let v = ramp_schedule(
            100.0,
            900.0,
            10.0,
            None,
            Horizon::Within(Duration::from_secs_f64(10.0)),
            &mut rng,
        )
        .unwrap();
        // Expected 5000 in total; first second ≈ 140, last second ≈ 860.
        assert!((4700..5300).contains(&v.len()), "{}", v.len());
        let first = count_between(&v, 0.0, 1.0);
        let last = count_between(&v, 9.0, 10.0);
        assert!((100..190).contains(&first), "{first}");
        assert!((780..940).contains(&last), "{last}");
        assert!(v.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn steps_hold_each_rate_then_stay_at_the_top() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let v = ramp_schedule(
            100.0,
            500.0,
            6.0,
            Some(3),
            Horizon::Within(Duration::from_secs_f64(8.0)),
            &mut rng,
        )
        .unwrap();
        // Stairs of 2 s at 100, 300, 500, then 500 beyond `over`.
        let per = |a, b| count_between(&v, a, b) as f64 / (b - a);
        assert!((70.0..130.0).contains(&per(0.0, 2.0)));
        assert!((250.0..350.0).contains(&per(2.0, 4.0)));
        assert!((440.0..560.0).contains(&per(6.0, 8.0)));
    }

    #[test]
    fn count_horizon_and_bad_rates() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let v = ramp_schedule(1.0, 2.0, 1.0, None, Horizon::Count(50), &mut rng).unwrap();
        assert_eq!(v.len(), 50);
        assert!(ramp_schedule(0.0, 2.0, 1.0, None, Horizon::Count(5), &mut rng).is_err());
    }
}
