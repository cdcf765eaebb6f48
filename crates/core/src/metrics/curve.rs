//! A sweep's curve read from its points' summaries: the load each point's schedule actually
//! held, and the knee. The SLA verdicts (which points past the knee gate the run, `knee_rate`)
//! and the reports (the profile table and plot) both read the knee from here, so they agree.
//!
//! Knee rule: walking up the load, a step is "bad" when the point is saturated, when output
//! throughput rose by less than half as much (relatively) as the load did, or when TTFT p99
//! exceeds [`KNEE_TTFT_FACTOR`] × the lowest-load point's. The knee is the last point before
//! the first bad step.

use super::{LatencyMetric, PointKind, StageSummary};

/// TTFT p99 above this multiple of the lowest-load value counts as "rising sharply".
pub const KNEE_TTFT_FACTOR: f64 = 5.0;
/// Throughput must grow at least this fraction of the relative load increase.
pub const KNEE_MIN_GAIN: f64 = 0.5;

/// Index of the knee in `(load, ttft_p99, output_tps, saturated)` points sorted by load
/// (`load` as actually scheduled).
pub fn knee(points: &[(f64, f64, f64, bool)]) -> Option<usize> {
    let first = points.first()?;
    let base_ttft = first.1;
    for i in 1..points.len() {
        let (l0, _, t0, _) = points[i - 1];
        let (l1, ttft, t1, sat) = points[i];
        let load_gain = if l0 > 0.0 { l1 / l0 - 1.0 } else { 1.0 };
        let tput_gain = if t0 > 0.0 { t1 / t0 - 1.0 } else { 1.0 };
        let flat = load_gain > 0.0 && tput_gain < KNEE_MIN_GAIN * load_gain;
        let sharp = base_ttft > 0.0 && ttft > KNEE_TTFT_FACTOR * base_ttft;
        if sat || flat || sharp {
            return Some(i - 1);
        }
    }
    None
}

/// The load a profile point's schedule actually held: for open loop, what it sent over its
/// planned duration (a Poisson draw off its mean is not a knee); otherwise its nominal load.
pub fn scheduled_load(s: &StageSummary) -> f64 {
    let Some(p) = &s.profile else { return 0.0 };
    match (p.point.offered_rate_per_s, s.planned.duration_s) {
        (Some(_), Some(d)) if d > 0.0 && s.requests.sent > 0 => s.requests.sent as f64 / d,
        _ => p.load(),
    }
}

/// The points of sweep `group` among `stages`, sorted by load.
pub fn sweep_points<'a>(stages: &'a [StageSummary], group: &str) -> Vec<&'a StageSummary> {
    let mut points: Vec<&StageSummary> = stages
        .iter()
        .filter(|s| {
            s.profile
                .as_ref()
                .is_some_and(|p| p.point.kind == PointKind::Sweep && p.point.group == group)
        })
        .collect();
    points.sort_by(|a, b| load(a).total_cmp(&load(b)));
    points
}

fn load(s: &StageSummary) -> f64 {
    s.profile.as_ref().map_or(0.0, |p| p.load())
}

/// The load of the knee among a sweep's `points` (sorted by load, as [`sweep_points`] gives
/// them); `None` when it was not reached.
pub fn knee_load(points: &[&StageSummary]) -> Option<f64> {
    let tuples: Vec<(f64, f64, f64, bool)> = points
        .iter()
        .map(|s| {
            (
                scheduled_load(s),
                s.latency[LatencyMetric::Ttft].p99,
                s.throughput.output_tokens_per_s,
                s.profile.as_ref().is_some_and(|p| p.saturated),
            )
        })
        .collect();
    knee(&tuples).map(|k| load(points[k]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server of capacity `cap`: throughput follows load then flattens; TTFT climbs past it.
    fn curve(cap: f64, loads: &[f64]) -> Vec<(f64, f64, f64, bool)> {
        loads
            .iter()
            .map(|&l| {
                let rho = (l / cap).min(0.99);
                let ttft = if l < cap {
                    20.0 / (1.0 - rho)
                } else {
                    20.0 * 50.0 * l / cap
                };
                (l, ttft, l.min(cap) * 16.0, l > cap * 1.1)
            })
            .collect()
    }

    #[test]
    fn knee_sits_before_capacity() {
        let loads = [5.0, 10.0, 15.0, 20.0, 35.0, 50.0];
        let k = knee(&curve(25.0, &loads)).unwrap();
        assert_eq!(loads[k], 20.0);
        let k = knee(&curve(12.0, &loads)).unwrap();
        assert_eq!(loads[k], 10.0);
    }

    #[test]
    fn no_knee_below_capacity_and_flat_throughput_alone_is_one() {
        assert_eq!(knee(&curve(100.0, &[5.0, 10.0, 20.0])), None);
        let flat = [
            (1.0, 10.0, 100.0, false),
            (2.0, 10.0, 190.0, false),
            (4.0, 11.0, 200.0, false),
        ];
        assert_eq!(knee(&flat), Some(1));
        assert_eq!(knee(&[]), None);
    }
}
