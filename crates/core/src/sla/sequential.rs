//! `until-decided` stages: the assertions that hold such a stage open (those whose value has a
//! confidence sequence: error rates, goodput, latency percentiles and means, on absolute
//! thresholds), their spread on the stage's confidence sequence (`stats::sequential`) instead of
//! a fixed-sample interval — valid at the point the stage stopped, however it was chosen — and
//! whether every one of them is decided, which stops the stage.

use super::grammar::{Aggregation, Assertion, Metric, Op, Threshold};
use super::observe::View;
use super::spread::{Spread, spread_in};
use super::verdict::{Across, VerdictInterval};
use crate::metrics::{CountMetric, LatencyMetric, StageSummary};
use crate::stats::{Build, first_deciding, mean_sequence, proportion_sequence, quantile_sequence};

/// Whether `assertion` can hold an `until-decided` stage open: its value has a confidence
/// sequence. Throughputs, maxima, telemetry, `==` and baseline thresholds are judged as
/// always at the stage's end, and do not keep it sending.
pub fn decides_stage(assertion: &Assertion) -> bool {
    // A window is found once the stage has ended: it cannot decide when to stop.
    if assertion.op == Op::Eq
        || assertion.best
        || !matches!(assertion.threshold, Threshold::Absolute(_))
        || assertion.window != super::grammar::Window::Stage
    {
        return false;
    }
    match (assertion.metric, assertion.aggregation) {
        (Metric::Count(CountMetric::ErrorRate | CountMetric::Goodput), _) => true,
        (Metric::Count(c), _) if c.is_quality() => true,
        (Metric::Latency(m), Some(Aggregation::Percentile(_) | Aggregation::Mean)) => {
            m != LatencyMetric::SendLag
        }
        _ => false,
    }
}

/// The spread an absolute threshold is decided on, in one view of `stage`, and how its interval
/// was built: on an `until-decided` stage (of one round) its confidence sequence where the
/// assertion has one, else the fixed-sample interval. The trust rule's net-of-client view
/// goes through here too, so a stage that stopped early is judged net of the client on a
/// sequence, valid where it stopped, as well.
pub(super) fn absolute_spread(
    view: View,
    assertion: &Assertion,
    stage: &StageSummary,
    confidence: f64,
) -> (Spread, Build) {
    let sequence = stage
        .until_decided
        .as_ref()
        .filter(|_| stage.rounds.len() < 2)
        .and_then(|u| {
            let s = sequence_spread(view, assertion, stage, confidence, u.tuned_for)?;
            Some((
                s,
                Build::Sequential {
                    tuned_for: u.tuned_for,
                },
            ))
        });
    sequence.unwrap_or_else(|| {
        let (metric, agg) = (assertion.metric, assertion.aggregation);
        (
            spread_in(view, metric, agg, stage, confidence),
            Build::Fixed,
        )
    })
}

/// The spread of an assertion's value on an `until-decided` stage: its confidence sequence,
/// tuned for `tuned_for` requests. `None` for an assertion that does not hold the stage
/// ([`decides_stage`]) or a stage without stored histograms; it is judged as usual.
fn sequence_spread(
    view: View,
    assertion: &Assertion,
    stage: &StageSummary,
    confidence: f64,
    tuned_for: u64,
) -> Option<Spread> {
    let Threshold::Absolute(threshold) = assertion.threshold else {
        return None;
    };
    if !decides_stage(assertion) {
        return None;
    }
    let interval = |low: f64, high: f64, units: u64| Spread::Interval {
        interval: VerdictInterval {
            low,
            high,
            confidence,
            across: Across::Requests,
            sequential: true,
        },
        units,
    };
    // At a look, requests begun and not yet recorded: the bounds hold whatever they become.
    let pending = stage.until_decided.as_ref().and_then(|u| u.pending);
    let (more, longest_ms) = pending.map_or((0, 0.0), |p| (p.requests, p.longest_ms));
    match (assertion.metric, assertion.aggregation) {
        (Metric::Count(c), _) => {
            // Failed or good of sent; correct of scored, repetitive or empty of checked.
            let (k, counted) = super::observe::proportion_counts(c, stage)?;
            let centre = threshold / 100.0;
            // The pending requests all on one side for the low end, all on the other for the high.
            let n = counted + more;
            let (low, _) = proportion_sequence(k, n, centre, confidence, tuned_for).ok()?;
            let (_, high) = proportion_sequence(k + more, n, centre, confidence, tuned_for).ok()?;
            Some(interval(low * 100.0, high * 100.0, n))
        }
        (Metric::Latency(m), Some(agg)) => {
            let h = view.histogram(m, stage)?.ok()?;
            let units = if m.spec().clustered {
                stage.requests.ok
            } else {
                h.len()
            };
            let ms = |us: f64| us / 1e3;
            match agg {
                Aggregation::Percentile(p) => {
                    let q = p.value() / 100.0;
                    let (low, high) =
                        quantile_sequence(&h, q, confidence, tuned_for, (units, more)).ok()?;
                    Some(match (low, high) {
                        (Some(l), Some(u)) => interval(ms(l), ms(u), units + more),
                        (low, high) => Spread::TooFew {
                            have: units + more,
                            needed: both_bounds(q, confidence, tuned_for),
                            of: Across::Requests,
                            low: low.map(ms),
                            high: high.map(ms),
                        },
                    })
                }
                _ => Some(
                    match mean_sequence(&h, confidence, tuned_for, units).ok()? {
                        Some((l, u)) => {
                            // The pending requests' latencies lie in [0, their timeout]: the
                            // mean of all is at least the known ones' share of the low end,
                            // at most that of the high end plus the pending share of the
                            // timeout (an approximation, as the mean's sequence itself is).
                            let (n, p) = (units as f64, more as f64);
                            let low = ms(l) * n / (n + p);
                            let high = (ms(u) * n + longest_ms * p) / (n + p);
                            interval(low, high, units + more)
                        }
                        None => Spread::TooFew {
                            have: units,
                            needed: crate::stats::MEAN_MIN_N,
                            of: Across::Requests,
                            low: None,
                            high: None,
                        },
                    },
                ),
            }
        }
        _ => None,
    }
}

/// The fewest samples for which a quantile's sequence bounds it on both sides.
fn both_bounds(p: f64, confidence: f64, tuned_for: u64) -> u64 {
    first_deciding(1, u64::MAX / 2, 0, |n| {
        crate::stats::quantile_ranks(n, p, confidence, tuned_for)
            .is_ok_and(|r| r.low.is_some() && r.high.is_some())
    })
    .unwrap_or(u64::MAX)
}
