//! The warm-up stability rule: has the server reached a steady state worth measuring? With GPU
//! telemetry: clocks are not throttled and the temperature has stopped climbing over a window.
//! Without it: recent TTFTs vary little. Pure functions; the runner decides when to ask.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::report::GpuPoint;
use crate::units::Duration;

/// TTFTs needed before their spread means anything.
pub const MIN_TTFT_SAMPLES: usize = 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct StabilityRule {
    /// Lowest SM-clock ratio over the window (default 0.9).
    pub min_clock_ratio: f64,
    /// Largest temperature slope over the window, °C per minute, either sign (default 1).
    pub max_temp_rate_c_per_min: f64,
    /// How much recent history is judged (default 30s).
    pub window: Duration,
    /// Largest coefficient of variation of recent TTFTs, without GPU telemetry (default 0.2).
    pub ttft_cv_threshold: f64,
}

impl Default for StabilityRule {
    fn default() -> Self {
        StabilityRule {
            min_clock_ratio: 0.9,
            max_temp_rate_c_per_min: 1.0,
            window: Duration::from_millis(30_000),
            ttft_cv_threshold: 0.2,
        }
    }
}

/// `warmup until="stable"`: keep sending warm-up load until `rule` holds (checked every
/// `check_every`), at most for the warm-up's duration limit (`max=`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct WarmupUntil {
    pub rule: StabilityRule,
    pub check_every: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StabilityBasis {
    Gpu,
    Ttft,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StabilityVerdict {
    pub stable: bool,
    pub basis: StabilityBasis,
    /// Which condition held or failed, with the numbers.
    pub reason: String,
}

/// GPU rule when any device has clock or temperature data in its points, else the TTFT rule.
/// `gpus` holds `(device label, recent points in time order)`.
pub fn assess_stability(
    rule: &StabilityRule,
    gpus: &[(&str, &[GpuPoint])],
    recent_ttfts_ms: &[f64],
) -> StabilityVerdict {
    assess_gpu(rule, gpus).unwrap_or_else(|| assess_ttft(rule, recent_ttfts_ms))
}

/// Least-squares slope of `(x, y)`; `None` with fewer than two distinct x.
fn slope(xy: &[(f64, f64)]) -> Option<f64> {
    let n = xy.len() as f64;
    let mx = xy.iter().map(|p| p.0).sum::<f64>() / n;
    let my = xy.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = xy.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// `None` when no device has usable GPU data (the caller falls back to TTFTs).
pub fn assess_gpu(rule: &StabilityRule, gpus: &[(&str, &[GpuPoint])]) -> Option<StabilityVerdict> {
    let window = rule.window.as_secs_f64();
    let mut held = Vec::new();
    let mut judged = 0;
    for (label, points) in gpus {
        let Some(last) = points.last() else { continue };
        let recent: Vec<&GpuPoint> = points
            .iter()
            .filter(|p| p.t_s >= last.t_s - window)
            .collect();
        let ratios: Vec<f64> = recent
            .iter()
            .filter_map(|p| p.reading.clock_ratio())
            .collect();
        let temps: Vec<(f64, f64)> = recent
            .iter()
            .filter_map(|p| p.reading.temp_c.map(|c| (p.t_s, c)))
            .collect();
        if ratios.is_empty() && temps.is_empty() {
            continue;
        }
        judged += 1;
        let unstable = |reason: String| StabilityVerdict {
            stable: false,
            basis: StabilityBasis::Gpu,
            reason,
        };
        let covered = last.t_s - recent[0].t_s;
        // 80 %: sampling jitter must not keep a full window from counting as full.
        if covered < window * 0.8 {
            return Some(unstable(format!(
                "GPU {label}: {covered:.0}s of history, waiting for the {window:.0}s window"
            )));
        }
        if let Some(min) = ratios.iter().copied().reduce(f64::min) {
            if min < rule.min_clock_ratio {
                return Some(unstable(format!(
                    "GPU {label}: clock ratio {min:.2} < {:.2} in the last {window:.0}s",
                    rule.min_clock_ratio
                )));
            }
            held.push(format!("GPU {label} clock ratio ≥ {min:.2}"));
        }
        if let Some(rate) = slope(&temps).map(|s| s * 60.0) {
            if rate.abs() > rule.max_temp_rate_c_per_min {
                return Some(unstable(format!(
                    "GPU {label}: temperature changing {rate:+.1} °C/min (limit {:.1})",
                    rule.max_temp_rate_c_per_min
                )));
            }
            held.push(format!("GPU {label} temperature {rate:+.1} °C/min"));
        }
    }
    (judged > 0).then(|| StabilityVerdict {
        stable: true,
        basis: StabilityBasis::Gpu,
        reason: format!("over the last {window:.0}s: {}", held.join(", ")),
    })
}

/// Coefficient of variation of the given recent TTFTs against the threshold.
pub fn assess_ttft(rule: &StabilityRule, ttfts_ms: &[f64]) -> StabilityVerdict {
    let v: Vec<f64> = ttfts_ms.iter().copied().filter(|x| x.is_finite()).collect();
    let verdict = |stable, reason| StabilityVerdict {
        stable,
        basis: StabilityBasis::Ttft,
        reason,
    };
    if v.len() < MIN_TTFT_SAMPLES {
        return verdict(
            false,
            format!(
                "{} TTFTs, need {MIN_TTFT_SAMPLES} (no GPU telemetry)",
                v.len()
            ),
        );
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return verdict(false, "mean TTFT is 0".into());
    }
    let cv = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt() / mean;
    let stable = cv <= rule.ttft_cv_threshold;
    let op = if stable { "≤" } else { ">" };
    verdict(
        stable,
        format!(
            "TTFT coefficient of variation {cv:.2} {op} {:.2} over the last {} requests",
            rule.ttft_cv_threshold,
            v.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::gpu::GpuReading;

    fn pts(n: usize, dt: f64, f: impl Fn(f64) -> (f64, f64)) -> Vec<GpuPoint> {
        (0..n)
            .map(|i| {
                let t = i as f64 * dt;
                let (clock, temp) = f(t);
                GpuPoint {
                    t_s: t,
                    reading: GpuReading {
                        sm_clock_mhz: Some(clock),
                        sm_clock_max_mhz: Some(2000.0),
                        temp_c: Some(temp),
                        ..Default::default()
                    },
                }
            })
            .collect()
    }

    #[test]
    fn steady_clocks_and_flat_temperature_are_stable() {
        let p = pts(61, 1.0, |t| (1950.0, 70.0 + (t * 0.7).sin() * 0.3));
        let v = assess_stability(&StabilityRule::default(), &[("0", &p)], &[]);
        assert!(v.stable, "{}", v.reason);
        assert_eq!(v.basis, StabilityBasis::Gpu);
        assert!(v.reason.contains("clock ratio"), "{}", v.reason);
    }

    #[test]
    fn rising_temperature_is_not_stable_until_it_levels_off() {
        // +5 °C/min for the first 60 s, flat afterwards.
        let f = |t: f64| (1950.0, 60.0 + (t.min(60.0)) * 5.0 / 60.0);
        let rule = StabilityRule::default();
        let early = pts(45, 1.0, f);
        let v = assess_gpu(&rule, &[("0", &early)]).unwrap();
        assert!(!v.stable);
        assert!(v.reason.contains("temperature"), "{}", v.reason);
        let late = pts(120, 1.0, f);
        assert!(assess_gpu(&rule, &[("0", &late)]).unwrap().stable);
    }

    #[test]
    fn a_throttled_device_or_short_history_is_not_stable() {
        let rule = StabilityRule::default();
        let good = pts(40, 1.0, |_| (1950.0, 70.0));
        let slow = pts(40, 1.0, |t| (if t > 30.0 { 1600.0 } else { 1950.0 }, 70.0));
        let v = assess_gpu(&rule, &[("0", &good), ("1", &slow)]).unwrap();
        assert!(!v.stable);
        assert!(
            v.reason.starts_with("GPU 1: clock ratio 0.80"),
            "{}",
            v.reason
        );
        let short = pts(10, 1.0, |_| (1950.0, 70.0));
        let v = assess_gpu(&rule, &[("0", &short)]).unwrap();
        assert!(!v.stable && v.reason.contains("history"), "{}", v.reason);
    }

    #[test]
    fn without_gpu_data_ttft_spread_decides() {
        let rule = StabilityRule::default();
        let empty = GpuPoint::default();
        let no_gpu = [empty];
        let steady: Vec<f64> = (0..20).map(|i| 100.0 + (i % 3) as f64).collect();
        let v = assess_stability(&rule, &[("0", &no_gpu)], &steady);
        assert_eq!(v.basis, StabilityBasis::Ttft);
        assert!(v.stable, "{}", v.reason);
        let noisy: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 50.0 } else { 150.0 })
            .collect();
        assert!(!assess_ttft(&rule, &noisy).stable);
        assert!(!assess_ttft(&rule, &steady[..5]).stable, "too few samples");
    }
}
