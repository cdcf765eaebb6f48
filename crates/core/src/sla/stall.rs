//! A trusted stage whose client's own event loop stalled. Send lag sees a client late to
//! send, not one late to read: a closed loop whose loop stalls 100–200 ms between reads keeps
//! its pace and stays trusted, yet every latency it read during a stall carries the stall.
//! The loop probe measures it (`client.loop_delay_ms`), and a read is at most
//! `PERIOD_MAX + max` late, so a verdict a late read could have produced — the way the
//! metric's "late client" column says a late client moves it — is weighed against that bound:
//!
//! - a failure is decided net of the client, as on a flagged stage (each request's own bound
//!   taken off), once the stage's bound could have carried the value across the threshold;
//! - a pass (an ITL or TPOT under its limit, a latency over a floor) stands only if the value
//!   and its interval, moved back by the bound, still pass; otherwise it is undecided
//!   (`read_stall`), naming the stall and the margin.
//!
//! A stall small against the margin changes nothing. See docs/sla.md, "Untrusted stages".

use super::grammar::{Metric, Op};
use super::observe::View;
use super::policy::{Policy, Untrusted};
use super::sequential::absolute_spread;
use super::spread::{Spread, decide};
use super::trust::{Numbers, Weighed, net_of_client, toward};
use super::verdict::{Basis, SlaOutcome};
use crate::metrics::{Distortion, LatencyMetric};

/// The most any read of `stage` can have been late (ms): the longest delay the loop probe
/// noted, plus its period (a stall ends at most one period before the probe notes it).
fn read_bound_ms(n: &Numbers<'_>) -> Option<f64> {
    let d = n.stage.client.loop_delay_ms?;
    Some(crate::metrics::PROBE_PERIOD_MAX_MS as f64 + d.max)
}

/// The verdict a trusted stage's loop stalls leave of `n`; `None` where they change nothing
/// (not a latency, a direction a late read cannot push, or a stall small against the margin).
pub(super) fn weigh_stall(n: &Numbers<'_>, policy: &Policy) -> Option<Weighed> {
    let Metric::Latency(m) = n.assertion.metric else {
        return None;
    };
    if m == LatencyMetric::SendLag
        || n.outcome == SlaOutcome::Inconclusive
        || policy.untrusted == Untrusted::Judge
        || n.assertion.op == Op::Eq
    {
        return None;
    }
    let toward = toward(n.assertion.op, n.outcome);
    let moves = Distortion::ClientDelay.moves(n.assertion.metric.def());
    // The value moved back against the way a late read could have pushed it.
    let back = if toward.up && moves.up {
        -1.0
    } else if toward.down && moves.down {
        1.0
    } else {
        return None;
    };
    let bound = read_bound_ms(n)?;
    let spread = if policy.intervals {
        absolute_spread(View::Measured, n.assertion, n.stage, policy.confidence).0
    } else {
        Spread::Point
    };
    let moved = decide(
        n.assertion.op,
        n.observed + back * bound,
        shifted(spread, back * bound),
        n.threshold,
    )
    .0;
    if moved == n.outcome {
        return None;
    }
    Some(match n.outcome {
        SlaOutcome::Fail => net_of_client(n, policy),
        _ => Weighed {
            outcome: SlaOutcome::Inconclusive,
            basis: Basis::ReadStall {
                stall_ms: bound,
                margin: (n.observed - n.threshold).abs(),
            },
        },
    })
}

/// `spread` moved by `by`.
fn shifted(spread: Spread, by: f64) -> Spread {
    match spread {
        Spread::Interval {
            mut interval,
            units,
        } => {
            interval.low += by;
            interval.high += by;
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
            low: low.map(|l| l + by),
            high: high.map(|h| h + by),
        },
        Spread::Point => Spread::Point,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{LoopDelay, StageSummary};

    /// A trusted stage whose loop's longest delay was `stall_ms`, judged on values alone.
    fn weigh(expr: &str, observed: f64, outcome: SlaOutcome, stall_ms: f64) -> Option<Weighed> {
        let assertion: super::super::grammar::Assertion = expr.parse().unwrap();
        let mut stage = StageSummary::default();
        stage.validity.trusted = true;
        stage.client.loop_delay_ms = Some(LoopDelay {
            p50: 0.1,
            p99: 1.0,
            max: stall_ms,
            samples: 1_000,
        });
        let threshold = match assertion.threshold {
            super::super::grammar::Threshold::Absolute(t) => t,
            super::super::grammar::Threshold::Baseline { .. } => unreachable!(),
        };
        let n = Numbers {
            assertion: &assertion,
            stage: &stage,
            observed,
            threshold,
            outcome,
        };
        let policy = Policy {
            intervals: false,
            ..Policy::default()
        };
        weigh_stall(&n, &policy)
    }

    #[test]
    fn a_pass_a_late_read_could_have_made_is_undecided_only_within_the_stall() {
        // ITL 20 ms under 100 ms: a 150 ms stall (152 ms with the probe's period) could hide it.
        let w = weigh("itl.p50 < 100ms", 20.0, SlaOutcome::Pass, 150.0).expect("weighed");
        assert_eq!(w.outcome, SlaOutcome::Inconclusive);
        assert!(
            matches!(w.basis, Basis::ReadStall { stall_ms, margin }
                if (stall_ms - 152.0).abs() < 1e-9 && (margin - 80.0).abs() < 1e-9),
            "{:?}",
            w.basis
        );
        // A stall small against the margin changes nothing.
        assert!(weigh("itl.p50 < 100ms", 20.0, SlaOutcome::Pass, 5.0).is_none());
        // A latency over a floor: a late read only adds, so it could have made that pass.
        let w = weigh("ttft.p50 > 10ms", 40.0, SlaOutcome::Pass, 100.0).expect("weighed");
        assert_eq!(w.outcome, SlaOutcome::Inconclusive);
    }

    #[test]
    fn a_late_read_cannot_make_a_latency_pass_under_its_limit() {
        assert!(weigh("ttft.p95 < 50ms", 49.0, SlaOutcome::Pass, 500.0).is_none());
        // Nor is a count touched.
        assert!(weigh("error_rate < 1%", 0.5, SlaOutcome::Pass, 500.0).is_none());
    }
}
