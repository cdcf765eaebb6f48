//! How many requests an assertion needs: the fewest that can decide it at all (no request
//! failing, every latency far on the right side — what `validate` and `plan` quote, and warn
//! about when a stage cannot send that many), and, for an undecided verdict, how many more
//! would decide it with the stage's proportions held where they are. Both come from
//! `stats::need`, which searches for the smallest n whose interval — built as the verdict
//! builds it — clears the threshold.

use hdrhistogram::Histogram;

use super::grammar::{Aggregation, Assertion, Metric, Op, Threshold};
use super::observe::observe;
use super::verdict::{Across, MoreNeeded};
use crate::metrics::{CountMetric, LatencyMetric, StageSummary};
use crate::stats::{Build, Clear, Shares, mean_need, proportion_need, quantile_need};

/// What an assertion needs before its interval can decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// At least this many requests (sent, for a proportion; successful, for a latency).
    Requests(u64),
    /// Judged on its value (a throughput, a maximum, telemetry, `==`): any number decides.
    OnValue,
    /// No number of requests can show it passes (`error_rate < 0%`).
    Never,
}

/// The most requests a need is searched up to.
const SEARCH_CAP: u64 = 100_000_000;

/// The fewest requests that can show `assertion` holds, at its best: no request failing (or
/// all of them good, for goodput), every latency far on the right side of its threshold. A
/// percentile needs the order statistics that bound it (p99: 299 requests at 95 %), a mean 30,
/// a proportion its interval's end past the threshold with no failure (`error_rate < 1%`: 381
/// requests). `build`: one fixed interval, or an `until-decided` stage's confidence sequence.
pub fn fewest_to_pass(assertion: &Assertion, confidence: f64, build: Build) -> Need {
    let (Threshold::Absolute(threshold), true) = (assertion.threshold, assertion.op != Op::Eq)
    else {
        return Need::OnValue;
    };
    let below = matches!(assertion.op, Op::Lt | Op::Le);
    let clear = if below { Clear::Below } else { Clear::Above };
    let found = match (assertion.metric, assertion.aggregation) {
        // A quality figure's units are answers (scored ones, for accuracy): on a data set of
        // one question per request, requests.
        (Metric::Count(c), _) if is_share(c) => {
            // The best case is every request on the side that passes.
            let share = if below { 0.0 } else { 1.0 };
            proportion_need(
                share,
                threshold / 100.0,
                clear,
                confidence,
                build,
                (1, SEARCH_CAP),
            )
        }
        (Metric::Latency(m), Some(Aggregation::Percentile(p))) if m != LatencyMetric::SendLag => {
            let shares = if below {
                Shares {
                    below: 1.0,
                    above: 0.0,
                }
            } else {
                Shares {
                    below: 0.0,
                    above: 1.0,
                }
            };
            let one_sided = !m.spec().clustered;
            quantile_need(
                p.value() / 100.0,
                shares,
                clear,
                confidence,
                build,
                one_sided,
                (1, SEARCH_CAP),
            )
        }
        (Metric::Latency(m), Some(Aggregation::Mean)) if m != LatencyMetric::SendLag => {
            return Need::Requests(crate::stats::MEAN_MIN_N);
        }
        // A judged answer a request, at best; the judge's interval starts at this many.
        (Metric::Count(CountMetric::JudgeScore), _) => {
            return Need::Requests(crate::metrics::JUDGE_MIN_SCORED);
        }
        _ => return Need::OnValue,
    };
    match found {
        Ok(Some(n)) => Need::Requests(n),
        Ok(None) => Need::Never,
        Err(_) => Need::OnValue,
    }
}

/// A share of the stage's requests or answers, judged on a Wilson interval.
fn is_share(c: CountMetric) -> bool {
    matches!(c, CountMetric::ErrorRate | CountMetric::Goodput) || c.is_quality()
}

/// For an undecided verdict on `stage`: about how many more requests (or rounds, for a stage
/// run in rounds) would decide it if what was measured held — the smallest count whose
/// interval clears the threshold, capped (see [`MoreNeeded::cap`]). `None` when the estimate
/// sits on the threshold (no count separates them) or the metric has no interval.
pub fn more_needed(
    assertion: &Assertion,
    stage: &StageSummary,
    threshold: f64,
    confidence: f64,
    build: Build,
) -> Option<MoreNeeded> {
    if !matches!(assertion.threshold, Threshold::Absolute(_)) || assertion.op == Op::Eq {
        return None;
    }
    if stage.rounds.len() >= 2 {
        return more_rounds(assertion, stage, threshold, confidence);
    }
    let value = observe(assertion.metric, assertion.aggregation, stage).ok()?;
    let clear = side(value, threshold)?;
    let cap = MoreNeeded::cap(Across::Requests);
    let (have, needed) = match (assertion.metric, assertion.aggregation) {
        (Metric::Count(c), _) if c.is_quality() => {
            let (_, n) = super::observe::proportion_counts(c, stage)?;
            let (share, t) = (value / 100.0, threshold / 100.0);
            let need = proportion_need(share, t, clear, confidence, build, (n + 1, cap));
            (n, need.ok()?)
        }
        (Metric::Count(CountMetric::ErrorRate | CountMetric::Goodput), _) => {
            let n = stage.requests.sent;
            let share = value / 100.0;
            let t = threshold / 100.0;
            let need = proportion_need(share, t, clear, confidence, build, (n + 1, cap));
            (n, need.ok()?)
        }
        (Metric::Latency(m), Some(agg)) if m != LatencyMetric::SendLag => {
            let h = stage.histogram(m)?.ok()?;
            let units = if m.spec().clustered {
                stage.requests.ok
            } else {
                h.len()
            };
            let need = latency_need(&h, agg, threshold, clear, units, confidence, build, m);
            (units, need?)
        }
        _ => return None,
    };
    Some(match needed {
        Some(n) => MoreNeeded {
            count: n.saturating_sub(have),
            of: Across::Requests,
            capped: false,
        },
        None => MoreNeeded {
            count: cap.saturating_sub(have),
            of: Across::Requests,
            capped: true,
        },
    })
}

/// The side of the threshold the estimate is on, which its interval must clear.
fn side(value: f64, threshold: f64) -> Option<Clear> {
    if value < threshold {
        Some(Clear::Below)
    } else if value > threshold {
        Some(Clear::Above)
    } else {
        None
    }
}

/// A latency figure's need from its histogram (µs): a percentile's from the shares of
/// samples on each side of the threshold, a mean's from its standard deviation.
#[allow(clippy::too_many_arguments)]
fn latency_need(
    h: &Histogram<u64>,
    agg: Aggregation,
    threshold_ms: f64,
    clear: Clear,
    units: u64,
    confidence: f64,
    build: Build,
    metric: LatencyMetric,
) -> Option<Option<u64>> {
    let cap = MoreNeeded::cap(Across::Requests);
    let found = match agg {
        Aggregation::Percentile(p) => {
            let shares = shares(h, threshold_ms * 1e3);
            let one_sided = !metric.spec().clustered;
            quantile_need(
                p.value() / 100.0,
                shares,
                clear,
                confidence,
                build,
                one_sided,
                (units + 1, cap),
            )
        }
        Aggregation::Mean => {
            let distance = (threshold_ms - h.mean() / 1e3).abs();
            mean_need(
                h.stdev() / 1e3,
                distance,
                confidence,
                build,
                (units + 1, cap),
            )
        }
        Aggregation::Max | Aggregation::Min => return None,
    };
    found.ok()
}

/// The shares of a histogram's samples wholly below `threshold` and wholly at or above it
/// (by bucket: a sample in the bucket holding the threshold is neither).
pub(super) fn shares(h: &Histogram<u64>, threshold: f64) -> Shares {
    let n = h.len().max(1) as f64;
    let (mut below, mut above) = (0u64, 0u64);
    for v in h.iter_recorded() {
        let top = v.value_iterated_to();
        if (top as f64) < threshold {
            below += v.count_at_value();
        } else if h.lowest_equivalent(top) as f64 >= threshold {
            above += v.count_at_value();
        }
    }
    Shares {
        below: below as f64 / n,
        above: above as f64 / n,
    }
}

/// More rounds: the sign-test interval of the rounds' values clears the threshold once its
/// upper rank is within the rounds below it (or its lower rank past those at or above).
fn more_rounds(
    assertion: &Assertion,
    stage: &StageSummary,
    threshold: f64,
    confidence: f64,
) -> Option<MoreNeeded> {
    let values: Vec<f64> = stage
        .rounds
        .iter()
        .filter_map(|r| observe(assertion.metric, assertion.aggregation, r).ok())
        .collect();
    let value = observe(assertion.metric, assertion.aggregation, stage).ok()?;
    let clear = side(value, threshold)?;
    let k = values.len() as f64;
    let shares = Shares {
        below: values.iter().filter(|v| **v < threshold).count() as f64 / k,
        above: values.iter().filter(|v| **v >= threshold).count() as f64 / k,
    };
    let have = values.len() as u64;
    let cap = MoreNeeded::cap(Across::Rounds);
    let need = quantile_need(
        0.5,
        shares,
        clear,
        confidence,
        Build::Fixed,
        false,
        (have + 1, cap),
    );
    Some(match need.ok()? {
        Some(n) => MoreNeeded {
            count: n - have,
            of: Across::Rounds,
            capped: false,
        },
        None => MoreNeeded {
            count: cap.saturating_sub(have),
            of: Across::Rounds,
            capped: true,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(expr: &str) -> Need {
        fewest_to_pass(&expr.parse().unwrap(), 0.95, Build::Fixed)
    }

    #[test]
    fn the_fewest_requests_that_can_pass() {
        assert_eq!(need("error_rate < 1%"), Need::Requests(381));
        assert_eq!(need("error_rate < 5%"), Need::Requests(73));
        assert_eq!(need("goodput > 95%"), Need::Requests(73));
        assert_eq!(need("ttft.p50 < 1s"), Need::Requests(6));
        assert_eq!(need("ttft.p95 < 1s"), Need::Requests(59));
        assert_eq!(need("ttft.p99 < 1s"), Need::Requests(299));
        assert_eq!(need("itl.p99 < 1s"), Need::Requests(299));
        assert_eq!(need("tpot.mean < 1s"), Need::Requests(30));
        assert_eq!(need("e2e.max < 1s"), Need::OnValue);
        assert_eq!(need("request_throughput > 1 req/s"), Need::OnValue);
        assert_eq!(need("ttft.p95 < baseline * 1.1"), Need::OnValue);
        assert_eq!(need("error_rate < 0%"), Need::Never);
        // A lower bound on a p99 is there from the first sample: a fail shows early.
        assert_eq!(need("ttft.p99 > 1ms"), Need::Requests(1));
        let seq = fewest_to_pass(
            &"error_rate < 1%".parse().unwrap(),
            0.95,
            Build::Sequential { tuned_for: 1_000 },
        );
        assert!(
            matches!(seq, Need::Requests(n) if n > 381 && n < 600),
            "{seq:?}"
        );
    }
}
