//! How a metric moved from a baseline stage to the current one, with a confidence interval:
//! what `compare` and `baseline` thresholds (`ttft.p95 < baseline * 1.10`) decide on. The same
//! logic for both, so a relative SLA and `compare` never disagree about noise.
//!
//! - Stages run in rounds (both): the ratio of the rounds' medians, its interval from the two
//!   across-rounds intervals (conservatively, far end over near end).
//! - Percentiles with whole histograms (both): the bootstrap of the percentile's relative change
//!   (`stats::relative_change`); for ITL, whose gaps come clustered in requests, the interval is
//!   widened by √(gaps per request), the design effect.
//! - Error and goodput rates: the difference of two proportions in percentage points (Newcombe's
//!   hybrid score interval from the two Wilson intervals).
//! - Anything else: the point values, no interval.

use super::grammar::{Aggregation, Metric};
use super::observe::observe;
use super::policy::Policy;
use super::spread::Spread;
use super::verdict::{Across, VerdictInterval};
use crate::metrics::{CountMetric, LatencyMetric, StageSummary};
use crate::stats::{BootstrapOptions, ChangeCi, relative_change, rounds_median, wilson};

/// A metric's change with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shift {
    /// A relative change ((current − baseline) / baseline: +0.10 is 10 % more).
    Relative {
        estimate: f64,
        low: f64,
        high: f64,
        confidence: f64,
        across: Across,
    },
    /// A change in percentage points (error and goodput rates), `current − baseline`.
    Points {
        estimate: f64,
        low: f64,
        high: f64,
        confidence: f64,
    },
    /// Too few samples (or rounds) in a run to bound the change.
    TooFew { needed: u64, of: Across },
    /// No interval for this metric: the two values only.
    Point { baseline: f64, current: f64 },
}

/// The change of `metric` from `base` to `cur`; `None` when either run lacks the value.
pub fn shift(
    metric: Metric,
    aggregation: Option<Aggregation>,
    base: &StageSummary,
    cur: &StageSummary,
    confidence: f64,
) -> Option<Shift> {
    let b = observe(metric, aggregation, base).ok()?;
    let c = observe(metric, aggregation, cur).ok()?;
    if base.rounds.len() >= 2 && cur.rounds.len() >= 2 {
        return Some(
            across_rounds(metric, aggregation, base, cur, confidence).unwrap_or(Shift::Point {
                baseline: b,
                current: c,
            }),
        );
    }
    if let (Some(Aggregation::Percentile(p)), Some(lm)) = (aggregation, metric.latency())
        && let Some(s) = bootstrap(lm, p.value() / 100.0, base, cur, confidence)
    {
        return Some(s);
    }
    let proportion = |k: &dyn Fn(&StageSummary) -> u64| {
        points(
            k(base),
            base.requests.sent,
            k(cur),
            cur.requests.sent,
            confidence,
        )
    };
    let shifted = match metric {
        Metric::Count(CountMetric::ErrorRate) => proportion(&|s| s.requests.failed),
        Metric::Count(CountMetric::Goodput) => {
            proportion(&|s| (s.throughput.goodput_ratio * s.requests.sent as f64).round() as u64)
        }
        // Correct of scored, repetitive or empty of checked: their own denominators.
        Metric::Count(c) if c.is_quality() => {
            let counts = |s| super::observe::proportion_counts(c, s);
            match (counts(base), counts(cur)) {
                (Some((kb, nb)), Some((kc, nc))) => points(kb, nb, kc, nc, confidence),
                _ => None,
            }
        }
        _ => None,
    };
    Some(shifted.unwrap_or(Shift::Point {
        baseline: b,
        current: c,
    }))
}

/// The spread of the current value against a `baseline` threshold, on the current value's
/// scale: the change's interval applied to the baseline's value.
pub fn spread_against(
    metric: Metric,
    aggregation: Option<Aggregation>,
    cur: &StageSummary,
    base: &StageSummary,
    base_value: f64,
    policy: Policy,
) -> Spread {
    let units = cur.requests.sent;
    match shift(metric, aggregation, base, cur, policy.confidence) {
        Some(Shift::Relative {
            low,
            high,
            confidence,
            across,
            ..
        }) => Spread::Interval {
            interval: VerdictInterval {
                low: base_value * (1.0 + low),
                high: base_value * (1.0 + high),
                confidence,
                across,
                sequential: false,
            },
            units: if across == Across::Rounds {
                cur.rounds.len() as u64
            } else {
                units
            },
        },
        Some(Shift::Points {
            low,
            high,
            confidence,
            ..
        }) => Spread::Interval {
            interval: VerdictInterval {
                low: base_value + low,
                high: base_value + high,
                confidence,
                across: Across::Requests,
                sequential: false,
            },
            units,
        },
        Some(Shift::TooFew { needed, of }) => Spread::TooFew {
            have: if of == Across::Rounds {
                cur.rounds.len() as u64
            } else {
                units
            },
            needed,
            of,
            low: None,
            high: None,
        },
        Some(Shift::Point { .. }) | None => Spread::Point,
    }
}

fn bootstrap(
    metric: LatencyMetric,
    q: f64,
    base: &StageSummary,
    cur: &StageSummary,
    confidence: f64,
) -> Option<Shift> {
    let bh = base.histogram(metric)?.ok()?;
    let ch = cur.histogram(metric)?.ok()?;
    let options = BootstrapOptions {
        confidence,
        ..BootstrapOptions::default()
    };
    match relative_change(&bh, &ch, q, &options).ok()? {
        ChangeCi::Insufficient { needed_n, .. } => Some(Shift::TooFew {
            needed: needed_n,
            of: Across::Requests,
        }),
        ChangeCi::Change(c) => {
            // Samples that come many to a request: widened by the design effect.
            let widen = if metric.spec().clustered {
                let per_request =
                    |s: &StageSummary| s.latency[metric].count as f64 / s.requests.ok.max(1) as f64;
                per_request(base).max(per_request(cur)).max(1.0).sqrt()
            } else {
                1.0
            };
            Some(Shift::Relative {
                estimate: c.estimate,
                low: c.estimate - (c.estimate - c.low) * widen,
                high: c.estimate + (c.high - c.estimate) * widen,
                confidence: c.confidence,
                across: Across::Requests,
            })
        }
    }
}

/// Newcombe's hybrid score interval of `k2/n2 − k1/n1`, in percentage points.
fn points(k1: u64, n1: u64, k2: u64, n2: u64, confidence: f64) -> Option<Shift> {
    let (l1, u1) = wilson(k1, n1, confidence).ok()??;
    let (l2, u2) = wilson(k2, n2, confidence).ok()??;
    let (p1, p2) = (k1 as f64 / n1 as f64, k2 as f64 / n2 as f64);
    let d = p2 - p1;
    let low = d - ((p2 - l2).powi(2) + (u1 - p1).powi(2)).sqrt();
    let high = d + ((u2 - p2).powi(2) + (p1 - l1).powi(2)).sqrt();
    Some(Shift::Points {
        estimate: d * 100.0,
        low: low * 100.0,
        high: high * 100.0,
        confidence,
    })
}

fn across_rounds(
    metric: Metric,
    aggregation: Option<Aggregation>,
    base: &StageSummary,
    cur: &StageSummary,
    confidence: f64,
) -> Option<Shift> {
    let values = |s: &StageSummary| -> Option<Vec<f64>> {
        s.rounds
            .iter()
            .map(|r| observe(metric, aggregation, r).ok())
            .collect()
    };
    let b = rounds_median(&values(base)?, confidence).ok()??;
    let c = rounds_median(&values(cur)?, confidence).ok()??;
    if !b.meets_requested || !c.meets_requested {
        return Some(Shift::TooFew {
            needed: (1..=64u32)
                .find(|&k| 1.0 - 2.0 * 0.5f64.powi(k as i32) >= confidence)
                .map_or(64, u64::from),
            of: Across::Rounds,
        });
    }
    if b.median == 0.0 || b.low <= 0.0 {
        return None;
    }
    Some(Shift::Relative {
        estimate: c.median / b.median - 1.0,
        low: c.low / b.high - 1.0,
        high: c.high / b.low - 1.0,
        confidence: b.confidence.min(c.confidence),
        across: Across::Rounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newcombe_matches_a_worked_example() {
        // Newcombe (1998), example (a): 56/70 vs 48/80, difference 0.2 in [0.0524, 0.3339].
        let Some(Shift::Points {
            estimate,
            low,
            high,
            ..
        }) = points(48, 80, 56, 70, 0.95)
        else {
            panic!()
        };
        assert!((estimate - 20.0).abs() < 1e-9);
        assert!((low - 5.24).abs() < 0.01, "{low}");
        assert!((high - 33.39).abs() < 0.01, "{high}");
    }
}
