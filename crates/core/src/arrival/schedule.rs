//! Expands an [`ArrivalSpec`] into a schedule of send offsets (nanoseconds from the stage
//! start, non-decreasing). Constant arrivals start at 0 and step by exactly `1/rate`; Poisson
//! and gamma arrivals are a renewal process whose first arrival is one gap after the start.
//!
//! Offsets are drawn lazily ([`Offsets`]): the same spec, horizon and generator always yield the
//! same sequence, so a plan stores how to draw its schedule rather than the schedule itself and
//! the memory of a run does not grow with its length (a one-hour stage at 5,000 req/s would
//! otherwise hold 144 MB of offsets).

use rand::Rng;
use rand_distr::{Distribution, Exp, Exp1, Gamma};

use super::horizon::{ArrivalError, Horizon, MAX_ARRIVALS};
use super::ramp::RampCurve;
use super::spec::ArrivalSpec;

/// A validated open-loop arrival process.
#[derive(Debug, Clone)]
enum Process {
    Constant { gap_ns: f64 },
    Poisson(Exp<f64>),
    Gamma(Gamma<f64>),
    Ramp(RampCurve),
}

/// An open-loop schedule, drawn one offset at a time.
#[derive(Debug, Clone)]
pub struct Offsets<R> {
    process: Process,
    horizon: Horizon,
    rng: R,
    next: u64,
    /// The running sum: nanoseconds for a renewal process, expected arrivals for a ramp.
    sum: f64,
}

impl<R: Rng> Iterator for Offsets<R> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let i = self.next;
        if i >= MAX_ARRIVALS || matches!(self.horizon, Horizon::Count(n) if i >= n) {
            return None;
        }
        let t_ns = match &self.process {
            // Multiplying instead of summing keeps a long schedule free of drift.
            Process::Constant { gap_ns } => to_ns(i as f64 * gap_ns),
            Process::Poisson(exp) => {
                self.sum += exp.sample(&mut self.rng) * 1e9;
                to_ns(self.sum)
            }
            Process::Gamma(gamma) => {
                self.sum += gamma.sample(&mut self.rng) * 1e9;
                to_ns(self.sum)
            }
            Process::Ramp(curve) => {
                let gap: f64 = Exp1.sample(&mut self.rng);
                self.sum += gap;
                curve.offset_ns(self.sum)
            }
        };
        if let Horizon::Within(d) = self.horizon
            && t_ns >= d.as_nanos()
        {
            self.next = MAX_ARRIVALS;
            return None;
        }
        self.next = i + 1;
        Some(t_ns)
    }
}

/// How many arrivals a schedule has and when the last one leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub count: u64,
    pub last_ns: u64,
}

/// The send offsets of an open-loop arrival process, drawn lazily from `rng`; `None` for a
/// closed loop (whose sends depend on the server and cannot be scheduled ahead) or a trace
/// (whose schedule comes from its data set, see `plan::compile`).
pub fn offsets<R: Rng>(
    spec: &ArrivalSpec,
    horizon: Horizon,
    rng: R,
) -> Result<Option<Offsets<R>>, ArrivalError> {
    let process = match spec {
        ArrivalSpec::Concurrency { .. }
        | ArrivalSpec::RampConcurrency { .. }
        | ArrivalSpec::Trace { .. } => return Ok(None),
        ArrivalSpec::Ramp {
            from,
            to,
            over,
            steps,
        } => {
            let (a, b, o) = (from.per_sec(), to.per_sec(), over.as_secs_f64());
            Process::Ramp(RampCurve::new(a, b, o, *steps, horizon)?)
        }
        ArrivalSpec::Constant { rate }
        | ArrivalSpec::Poisson { rate }
        | ArrivalSpec::Gamma { rate, .. } => {
            let rate = rate.per_sec();
            if !rate.is_finite() || rate <= 0.0 {
                return Err(ArrivalError::BadRate(rate));
            }
            let expected = match horizon {
                Horizon::Count(n) => n as f64,
                Horizon::Within(d) => d.as_secs_f64() * rate,
            };
            if expected > MAX_ARRIVALS as f64 {
                return Err(ArrivalError::TooMany {
                    what: match horizon {
                        Horizon::Count(n) => format!("requests {n}"),
                        Horizon::Within(d) => format!("rate {rate}/s over {d}"),
                    },
                });
            }
            match spec {
                ArrivalSpec::Poisson { .. } => {
                    Process::Poisson(Exp::new(rate).map_err(|_| ArrivalError::BadRate(rate))?)
                }
                ArrivalSpec::Gamma { burstiness, .. } => {
                    let shape = burstiness.get();
                    // Mean gap = shape · scale = 1/rate; coefficient of variation = 1/sqrt(shape).
                    // Only an extreme rate · shape (no finite scale) fails here.
                    Process::Gamma(Gamma::new(shape, 1.0 / (rate * shape)).map_err(|_| {
                        ArrivalError::BadGamma {
                            rate,
                            burstiness: *burstiness,
                        }
                    })?)
                }
                _ => Process::Constant { gap_ns: 1e9 / rate },
            }
        }
    };
    Ok(Some(Offsets {
        process,
        horizon,
        rng,
        next: 0,
        sum: 0.0,
    }))
}

/// Draws the whole schedule once to count it, keeping nothing: what the plan records.
pub fn extent<R: Rng>(
    spec: &ArrivalSpec,
    horizon: Horizon,
    rng: R,
) -> Result<Option<Extent>, ArrivalError> {
    let Some(offsets) = offsets(spec, horizon, rng)? else {
        return Ok(None);
    };
    let (count, last_ns) = offsets.fold((0u64, 0u64), |(n, _), t| (n + 1, t));
    // Only a degenerate gap distribution (gaps that underflow to 0) gets here.
    if count >= MAX_ARRIVALS && matches!(horizon, Horizon::Within(_)) {
        return Err(ArrivalError::TooMany {
            what: format!("{spec:?}"),
        });
    }
    Ok(Some(Extent { count, last_ns }))
}

/// The whole schedule in memory (tests and small schedules).
pub fn schedule<R: Rng + ?Sized>(
    spec: &ArrivalSpec,
    horizon: Horizon,
    rng: &mut R,
) -> Result<Option<Vec<u64>>, ArrivalError> {
    Ok(offsets(spec, horizon, rng)?.map(Iterator::collect))
}

fn to_ns(t: f64) -> u64 {
    t.round().min(u64::MAX as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{Burstiness, Duration, Rate};
    use rand::SeedableRng;
    use rand::rngs::ChaCha8Rng;

    fn run(spec: ArrivalSpec, horizon: Horizon, seed: u64) -> Vec<u64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        schedule(&spec, horizon, &mut rng).unwrap().unwrap()
    }

    /// (arrivals per second, coefficient of variation of the gaps), gaps measured from 0.
    fn rate_and_cv(offsets: &[u64]) -> (f64, f64) {
        let gaps: Vec<f64> = std::iter::once(0)
            .chain(offsets.iter().copied())
            .collect::<Vec<_>>()
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        (1e9 / mean, var.sqrt() / mean)
    }

    #[test]
    fn constant_is_an_exact_grid_from_zero() {
        let got = run(
            ArrivalSpec::Constant { rate: Rate(4.0) },
            Horizon::Count(5),
            0,
        );
        assert_eq!(
            got,
            [0, 250_000_000, 500_000_000, 750_000_000, 1_000_000_000]
        );
        let within = run(
            ArrivalSpec::Constant { rate: Rate(4.0) },
            Horizon::Within(Duration::from_millis(1000)),
            0,
        );
        assert_eq!(within.len(), 4, "offset 1s is not below a 1s horizon");
    }

    #[test]
    fn poisson_has_the_target_rate_and_cv_one() {
        for seed in [1, 2, 3] {
            let got = run(
                ArrivalSpec::Poisson { rate: Rate(50.0) },
                Horizon::Count(10_000),
                seed,
            );
            assert_eq!(got.len(), 10_000);
            assert!(got.windows(2).all(|w| w[0] <= w[1]));
            let (rate, cv) = rate_and_cv(&got);
            assert!((rate / 50.0 - 1.0).abs() < 0.03, "rate {rate}");
            assert!((cv - 1.0).abs() < 0.05, "cv {cv}");
        }
    }

    #[test]
    fn gamma_cv_follows_burstiness() {
        for burstiness in [0.25, 0.5, 1.0, 4.0] {
            let got = run(
                ArrivalSpec::Gamma {
                    rate: Rate(20.0),
                    burstiness: Burstiness::new(burstiness).unwrap(),
                },
                Horizon::Count(10_000),
                9,
            );
            let (rate, cv) = rate_and_cv(&got);
            let want = 1.0 / f64::sqrt(burstiness);
            assert!(
                (rate / 20.0 - 1.0).abs() < 0.05,
                "b={burstiness}: rate {rate}"
            );
            assert!(
                (cv / want - 1.0).abs() < 0.06,
                "b={burstiness}: cv {cv} want {want}"
            );
        }
    }

    #[test]
    fn within_a_duration_keeps_only_earlier_arrivals() {
        let d = Duration::from_millis(60_000);
        let got = run(
            ArrivalSpec::Poisson { rate: Rate(100.0) },
            Horizon::Within(d),
            4,
        );
        assert!(got.iter().all(|&t| t < d.as_nanos()));
        assert!(
            (got.len() as f64 / 6000.0 - 1.0).abs() < 0.05,
            "{}",
            got.len()
        );
    }

    #[test]
    fn same_seed_same_schedule_and_closed_loop_has_none() {
        let spec = ArrivalSpec::Poisson { rate: Rate(10.0) };
        assert_eq!(
            run(spec.clone(), Horizon::Count(100), 5),
            run(spec.clone(), Horizon::Count(100), 5)
        );
        assert_ne!(
            run(spec.clone(), Horizon::Count(100), 5),
            run(spec, Horizon::Count(100), 6)
        );
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let closed = ArrivalSpec::Concurrency { clients: 3 };
        assert_eq!(schedule(&closed, Horizon::Count(10), &mut rng), Ok(None));
    }

    #[test]
    fn bad_parameters_are_errors_not_panics() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let bad = [
            ArrivalSpec::Poisson { rate: Rate(0.0) },
            ArrivalSpec::Constant {
                rate: Rate(f64::NAN),
            },
            ArrivalSpec::Gamma {
                rate: Rate(f64::MAX),
                burstiness: Burstiness::new(f64::MAX).unwrap(),
            },
        ];
        for spec in &bad {
            assert!(
                schedule(spec, Horizon::Count(3), &mut rng).is_err(),
                "{spec:?}"
            );
        }
        let huge = schedule(
            &ArrivalSpec::Constant { rate: Rate(1e9) },
            Horizon::Within(Duration::from_millis(3_600_000)),
            &mut rng,
        );
        assert!(matches!(huge, Err(ArrivalError::TooMany { .. })));
    }
}
