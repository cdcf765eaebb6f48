//! How sure an observed value is: its confidence interval on a stage — across rounds when the
//! stage ran several, else from the run's samples (percentiles and means from the stage's
//! distributions, error and goodput rates as proportions) — and what an interval means for an
//! assertion: pass, fail or inconclusive, and how much more data would likely decide it.

use super::grammar::{Aggregation, Metric, Op};
use super::observe::View;
use super::verdict::{Across, MoreNeeded, SlaOutcome, VerdictInterval};
use crate::metrics::{Bound, CountMetric, Dist, Figure, StageSummary, sample_intervals_of};
use crate::stats::{more_samples, rounds_median, wilson};

/// What is known of a value's uncertainty.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spread {
    /// The metric has no interval (a throughput, a maximum, a telemetry reading, or a result
    /// from before intervals were kept): the value is judged as it is.
    Point,
    /// The value lies in this interval with its confidence; `units` is how many requests (or
    /// rounds) it is built from.
    Interval {
        interval: VerdictInterval,
        units: u64,
    },
    /// Too few requests (or rounds) for an interval at the confidence asked for; one side may
    /// still be bounded (`low`: the value is at least this, `high`: at most, each at
    /// (1 + confidence)/2), which can decide some assertions on its own.
    TooFew {
        have: u64,
        needed: u64,
        of: Across,
        low: Option<f64>,
        high: Option<f64>,
    },
}

/// The spread of `metric` on `stage` at `confidence`.
pub fn spread(
    metric: Metric,
    aggregation: Option<Aggregation>,
    stage: &StageSummary,
    confidence: f64,
) -> Spread {
    spread_in(View::Measured, metric, aggregation, stage, confidence)
}

/// The spread of `metric` in one view of `stage` (as measured, or net of the client).
pub fn spread_in(
    view: View,
    metric: Metric,
    aggregation: Option<Aggregation>,
    stage: &StageSummary,
    confidence: f64,
) -> Spread {
    if stage.rounds.len() >= 2 {
        return across_rounds(view, metric, aggregation, stage, confidence);
    }
    if let Some(d) = view.dist(metric, stage) {
        return dist_spread(metric, d, aggregation, stage.requests.ok);
    }
    let sent = stage.requests.sent;
    match metric {
        Metric::Count(CountMetric::ErrorRate) => {
            proportion(stage.requests.failed, sent, confidence)
        }
        Metric::Count(CountMetric::Goodput) => proportion(
            (stage.throughput.goodput_ratio * sent as f64).round() as u64,
            sent,
            confidence,
        ),
        Metric::Count(CountMetric::JudgeScore) => judge_spread(stage, confidence),
        Metric::Count(c) if c.is_quality() => match super::observe::proportion_counts(c, stage) {
            Some((k, n)) => proportion(k, n, confidence),
            None => Spread::Point,
        },
        _ => Spread::Point,
    }
}

/// `judge_score`'s Student-t interval on the judged sample's mean; too few below
/// [`JUDGE_MIN_SCORED`](crate::metrics::JUDGE_MIN_SCORED) scores.
fn judge_spread(stage: &StageSummary, confidence: f64) -> Spread {
    let Some(j) = stage.quality.as_ref().and_then(|q| q.judge.as_ref()) else {
        return Spread::Point;
    };
    match j.interval {
        Some([low, high]) => Spread::Interval {
            interval: VerdictInterval {
                low,
                high,
                confidence,
                across: Across::Requests,
                sequential: false,
            },
            units: j.scored,
        },
        None => Spread::TooFew {
            have: j.scored,
            needed: crate::metrics::JUDGE_MIN_SCORED,
            of: Across::Requests,
            low: None,
            high: None,
        },
    }
}

/// The Wilson interval of `k` in `n`, in percent.
pub(super) fn proportion(k: u64, n: u64, confidence: f64) -> Spread {
    match wilson(k, n, confidence) {
        Ok(Some((low, high))) => Spread::Interval {
            interval: VerdictInterval {
                low: low * 100.0,
                high: high * 100.0,
                confidence,
                across: Across::Requests,
                sequential: false,
            },
            units: n,
        },
        _ => Spread::Point,
    }
}

/// The spread of one figure of a latency distribution, from its stored intervals; `ok` is
/// the stage's successful requests, which a clustered metric's intervals count.
fn dist_spread(metric: Metric, d: &Dist, aggregation: Option<Aggregation>, ok: u64) -> Spread {
    let figure = match aggregation {
        Some(Aggregation::Percentile(p)) => Figure::from(p),
        Some(Aggregation::Mean) | None => Figure::Mean,
        Some(Aggregation::Max | Aggregation::Min) => return Spread::Point,
    };
    // Samples of one request move together: such intervals count requests (see metrics).
    let clustered = metric.latency().is_some_and(|m| m.spec().clustered);
    let units = if clustered { ok } else { d.count };
    match d.intervals.map(|iv| iv.get(figure)) {
        Some(Bound::Interval {
            low,
            high,
            confidence,
        }) => Spread::Interval {
            interval: VerdictInterval {
                low,
                high,
                confidence,
                across: Across::Requests,
                sequential: false,
            },
            units,
        },
        Some(Bound::Insufficient { needed, low, high }) => Spread::TooFew {
            have: units,
            needed,
            of: Across::Requests,
            // Per-request intervals keep no one-sided bounds.
            low: if clustered { None } else { low },
            high: if clustered { None } else { high },
        },
        None => Spread::Point,
    }
}

/// The interval of the median of the metric's per-round values.
fn across_rounds(
    view: View,
    metric: Metric,
    aggregation: Option<Aggregation>,
    stage: &StageSummary,
    confidence: f64,
) -> Spread {
    let values: Result<Vec<f64>, _> = stage
        .rounds
        .iter()
        .map(|r| view.observe(metric, aggregation, r))
        .collect();
    let Ok(values) = values else {
        return Spread::Point;
    };
    match rounds_median(&values, confidence) {
        Ok(Some(r)) if r.meets_requested => Spread::Interval {
            interval: VerdictInterval {
                low: r.low,
                high: r.high,
                confidence: r.confidence,
                across: Across::Rounds,
                sequential: false,
            },
            units: values.len() as u64,
        },
        // Too few rounds for the sign-test interval: the pooled samples' interval, widened
        // to hold every round's own value (so the spread between rounds stays in it).
        Ok(Some(r)) => hull(
            pooled(view, metric, aggregation, stage, confidence),
            r.low,
            r.high,
        ),
        _ => Spread::Point,
    }
}

/// The spread of the rounds' pooled samples: their union histogram (a latency), or their
/// summed counts.
fn pooled(
    view: View,
    metric: Metric,
    aggregation: Option<Aggregation>,
    stage: &StageSummary,
    confidence: f64,
) -> Spread {
    let ok = stage.requests.ok;
    if let Some(lm) = metric.latency()
        && let Some(d) = view.dist(metric, stage)
    {
        let mut d = *d;
        if let Some(Ok(h)) = view.histogram(lm, stage) {
            let independent = if lm.spec().clustered { ok } else { h.len() };
            d.intervals = sample_intervals_of(&h, confidence, independent);
        }
        return dist_spread(metric, &d, aggregation, ok);
    }
    let whole = StageSummary {
        rounds: Vec::new(),
        timeline: Vec::new(),
        ..stage.clone()
    };
    spread_in(view, metric, aggregation, &whole, confidence)
}

/// `spread` stretched to hold `lowest` and `highest`.
fn hull(spread: Spread, lowest: f64, highest: f64) -> Spread {
    match spread {
        Spread::Interval {
            mut interval,
            units,
        } => {
            interval.low = interval.low.min(lowest);
            interval.high = interval.high.max(highest);
            Spread::Interval { interval, units }
        }
        Spread::TooFew {
            have,
            needed,
            of,
            low,
            high,
        } => Spread::TooFew {
            have,
            needed,
            of,
            low: low.map(|l| l.min(lowest)),
            high: high.map(|h| h.max(highest)),
        },
        Spread::Point => Spread::Point,
    }
}

/// The outcome of `value OP threshold` given what is known of the value's spread, and, when
/// inconclusive, how much more data would likely decide it.
pub fn decide(
    op: Op,
    value: f64,
    spread: Spread,
    threshold: f64,
) -> (SlaOutcome, Option<MoreNeeded>) {
    let point = if op.holds(value, threshold) {
        SlaOutcome::Pass
    } else {
        SlaOutcome::Fail
    };
    match spread {
        // Equality of a measured value is a point question whatever its spread.
        _ if op == Op::Eq => (point, None),
        Spread::Point => (point, None),
        Spread::TooFew {
            have,
            needed,
            of,
            low,
            high,
        } => {
            // A bounded side may settle it: a lower bound already over an upper limit fails,
            // an upper bound under it passes (and the mirror for lower limits).
            let below = matches!(op, Op::Lt | Op::Le);
            let fails = if below { low } else { high }.is_some_and(|b| !op.holds(b, threshold));
            let passes = if below { high } else { low }.is_some_and(|b| op.holds(b, threshold));
            if fails {
                return (SlaOutcome::Fail, None);
            }
            if passes {
                return (SlaOutcome::Pass, None);
            }
            (
                SlaOutcome::Inconclusive,
                Some(MoreNeeded {
                    count: needed.saturating_sub(have),
                    of,
                    capped: false,
                }),
            )
        }
        Spread::Interval { interval, units } => {
            let (low, high) = (interval.low, interval.high);
            // The interval's two ends decide as the value would: both hold, or both do not.
            let (low_holds, high_holds) = (op.holds(low, threshold), op.holds(high, threshold));
            if low_holds && high_holds {
                return (SlaOutcome::Pass, None);
            }
            if !low_holds && !high_holds {
                return (SlaOutcome::Fail, None);
            }
            // The end on the threshold's side must move past it.
            let half_width = if threshold > value {
                high - value
            } else {
                value - low
            };
            // The 1/√n law: right for a mean or a bootstrap, an estimate elsewhere (absolute
            // thresholds get the searched count instead; see `need.rs`).
            let of = interval.across;
            let cap = MoreNeeded::cap(of);
            let more = more_samples(units, half_width, (threshold - value).abs())
                .filter(|n| *n > 0)
                .map(|count| MoreNeeded {
                    count: count.min(cap.saturating_sub(units)),
                    of,
                    capped: count.saturating_add(units) > cap,
                });
            (SlaOutcome::Inconclusive, more)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(low: f64, high: f64) -> Spread {
        Spread::Interval {
            interval: VerdictInterval {
                low,
                high,
                confidence: 0.95,
                across: Across::Requests,
                sequential: false,
            },
            units: 100,
        }
    }

    #[test]
    fn the_whole_interval_decides() {
        assert_eq!(
            decide(Op::Lt, 40.0, iv(38.0, 47.0), 50.0).0,
            SlaOutcome::Pass
        );
        assert_eq!(
            decide(Op::Lt, 60.0, iv(55.0, 65.0), 50.0).0,
            SlaOutcome::Fail
        );
        let (o, more) = decide(Op::Lt, 48.0, iv(45.0, 52.0), 50.0);
        assert_eq!(o, SlaOutcome::Inconclusive);
        // Half-width 4 towards the threshold, 2 away: 100·(4/2)² = 400 samples, 300 more.
        assert_eq!(more.unwrap().count, 300);
        assert_eq!(
            decide(Op::Gt, 60.0, iv(55.0, 65.0), 50.0).0,
            SlaOutcome::Pass
        );
        assert_eq!(
            decide(Op::Gt, 60.0, iv(45.0, 65.0), 50.0).0,
            SlaOutcome::Inconclusive
        );
        // Without an interval the value decides, as before.
        assert_eq!(
            decide(Op::Lt, 48.0, Spread::Point, 50.0).0,
            SlaOutcome::Pass
        );
    }

    #[test]
    fn too_few_samples_are_inconclusive_and_say_how_many() {
        let s = Spread::TooFew {
            have: 60,
            needed: 299,
            of: Across::Requests,
            low: Some(8.0),
            high: None,
        };
        let (o, more) = decide(Op::Lt, 10.0, s, 50.0);
        assert_eq!(o, SlaOutcome::Inconclusive);
        assert_eq!(more.unwrap().count, 239);
        // The lower bound alone shows a p99 over its limit.
        assert_eq!(decide(Op::Lt, 10.0, s, 5.0).0, SlaOutcome::Fail);
        // And over a lower limit it shows the pass.
        assert_eq!(decide(Op::Gt, 10.0, s, 5.0).0, SlaOutcome::Pass);
    }
}
