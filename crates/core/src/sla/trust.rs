//! What an untrusted stage's flags do to one verdict. Each flag says what it can distort
//! (`metrics::Distortion`), and each distortion which ways it can move a metric; a verdict its
//! numbers reached stands when no flag could have moved the value that way ("passes even if
//! the client added nothing"). A failure that only the client's own delay could have produced
//! is decided once what the client may have added is taken off: each request's send lag and a
//! bound on how late it read (the net latencies), or the failures a starved client declares
//! itself; a rate's, once the server is credited with what the client withheld
//! (`credit.rs`). Everything else a flag could have produced is undecided, and says which flag. The
//! rules and their derivation: `docs/sla.md`; the rule each verdict records, `verdict::Basis`.

use super::grammar::{Assertion, Metric, Op};
use super::observe::View;
use super::policy::{Policy, Untrusted};
use super::sequential::absolute_spread;
use super::spread::{Spread, decide};
use super::verdict::{Basis, SlaOutcome};
use crate::metrics::{
    CountMetric, Distortion, Flag, FlagKind, LatencyMetric, Moves, Shape, StageSummary,
};

/// A verdict as the stage's flags leave it.
pub(super) struct Weighed {
    pub outcome: SlaOutcome,
    pub basis: Basis,
}

/// What is weighed: an assertion's verdict on its numbers alone.
pub(super) struct Numbers<'a> {
    pub assertion: &'a Assertion,
    pub stage: &'a StageSummary,
    pub observed: f64,
    pub threshold: f64,
    pub outcome: SlaOutcome,
}

/// The verdict `n` comes to on its stage, given the stage's flags and the policy.
pub(super) fn weigh(n: &Numbers<'_>, policy: &Policy) -> Weighed {
    let stage = n.stage;
    let metric = n.assertion.metric;
    let keep = |basis| Weighed {
        outcome: n.outcome,
        basis,
    };
    // Send lag measures the client itself: no flag distorts it.
    if stage.validity.trusted
        || n.outcome == SlaOutcome::Inconclusive
        || metric == Metric::Latency(LatencyMetric::SendLag)
    {
        return keep(Basis::Numbers);
    }
    if policy.untrusted == Untrusted::Judge {
        return keep(Basis::Judged);
    }
    // A closed loop whose clients' idle time was measured has its shortfall of load as a
    // flag of its own (`idle_clients`): a late send there is the client's delay only.
    let paced_unmeasured =
        stage.planned.clients.is_some() && stage.client.closed_loop_idle_percent.is_none();
    let toward = toward(n.assertion.op, n.outcome);
    let flags = stage.validity.typed_flags();
    let mut present: Vec<Distortion> = Vec::new();
    let mut suspects: Vec<(&Flag, Distortion)> = Vec::new();
    let mut bounded = None;
    for flag in &flags {
        for &d in flag.kind.distortions(paced_unmeasured) {
            if !present.contains(&d) {
                present.push(d);
            }
            let moves = d.moves(metric.def());
            if !((toward.up && moves.up) || (toward.down && moves.down)) {
                continue;
            }
            match load_bound(n, &flag.kind) {
                Some(b) => bounded = Some(b),
                None => suspects.push((flag, d)),
            }
        }
    }
    if suspects.is_empty() {
        if let Some(basis) = bounded {
            return keep(basis);
        }
        present.sort();
        return keep(Basis::Unmoved { by: present });
    }
    let only_client = suspects.iter().all(|(_, d)| *d == Distortion::ClientDelay);
    if only_client && n.outcome == SlaOutcome::Fail {
        return net_of_client(n, policy);
    }
    let (flag, distortion) = suspects
        .iter()
        .find(|(_, d)| *d != Distortion::ClientDelay)
        .unwrap_or(&suspects[0]);
    Weighed {
        outcome: SlaOutcome::Inconclusive,
        basis: Basis::Flagged {
            flag: flag.kind.name().to_string(),
            distortion: *distortion,
            would: n.outcome,
        },
    }
}

/// A latency's pass that a closed loop's measured idle clients cannot have made: the value
/// scaled by `1 / (1 - idle)` still passes. In a closed loop without think time Little's law
/// gives `R = N / X`; with throughput `X` nondecreasing in the load, the planned `N` clients'
/// latency is at most `N / N_eff = 1 / (1 - idle)` times what `N_eff = N (1 - idle)` busy
/// clients measured (docs/sla.md, "Untrusted stages").
fn load_bound(n: &Numbers<'_>, flag: &FlagKind) -> Option<Basis> {
    let FlagKind::IdleClients { share, .. } = flag else {
        return None;
    };
    let latency = matches!(n.assertion.metric, Metric::Latency(_));
    let below = matches!(n.assertion.op, Op::Lt | Op::Le);
    if !(latency && below && n.outcome == SlaOutcome::Pass) || *share >= 1.0 {
        return None;
    }
    let scaled = n.observed / (1.0 - share);
    n.assertion
        .op
        .holds(scaled, n.threshold)
        .then_some(Basis::LoadBounded {
            idle_share: *share,
            scaled,
        })
}

/// Which way the value must have been pushed to reach `outcome` under `op`.
pub(super) fn toward(op: Op, outcome: SlaOutcome) -> Moves {
    let pass = outcome == SlaOutcome::Pass;
    match op {
        Op::Lt | Op::Le => Moves {
            up: !pass,
            down: pass,
        },
        Op::Gt | Op::Ge => Moves {
            up: pass,
            down: !pass,
        },
        Op::Eq => Moves {
            up: true,
            down: true,
        },
    }
}

/// A failure only the client's delay could have produced: decided on what remains once what
/// the client may have added is taken off.
pub(super) fn net_of_client(n: &Numbers<'_>, policy: &Policy) -> Weighed {
    let (metric, agg, op) = (n.assertion.metric, n.assertion.aggregation, n.assertion.op);
    let confidence = policy.confidence;
    let point = |s: Spread| {
        if policy.intervals { s } else { Spread::Point }
    };
    let undecided = |basis| Weighed {
        outcome: SlaOutcome::Inconclusive,
        basis,
    };
    match metric {
        Metric::Latency(m) if m.spec().net.is_some() => {
            let Ok(net) = View::Net.observe(metric, agg, n.stage) else {
                return undecided(Basis::ClientUnbounded);
            };
            // On an `until-decided` stage, its confidence sequence in the net view: the stage
            // may have stopped at this look.
            let spread = point(absolute_spread(View::Net, n.assertion, n.stage, confidence).0);
            let added_ms = (n.observed - net).max(0.0);
            match decide(op, net, spread, n.threshold).0 {
                SlaOutcome::Fail => Weighed {
                    outcome: SlaOutcome::Fail,
                    basis: Basis::NetOfClient { added_ms },
                },
                _ => undecided(Basis::ClientMayHaveAdded {
                    added_ms,
                    margin: (n.observed - n.threshold).abs(),
                }),
            }
        }
        Metric::Count(CountMetric::ErrorRate) => {
            let removed = n.stage.requests.client_side_failures();
            let server = without_client_failures(n.stage);
            let Ok(rate) = super::observe::observe(metric, agg, &server) else {
                return undecided(Basis::ClientUnbounded);
            };
            let spread = point(absolute_spread(View::Measured, n.assertion, &server, confidence).0);
            match decide(op, rate, spread, n.threshold).0 {
                SlaOutcome::Fail => Weighed {
                    outcome: SlaOutcome::Fail,
                    basis: Basis::WithoutClientFailures { removed },
                },
                _ => undecided(Basis::ClientFailuresMayExplain { removed }),
            }
        }
        Metric::Count(metric) if metric.def().kind.shape() == Shape::Rate => {
            let (outcome, basis) = super::credit::credited(&super::credit::RateFailure {
                op,
                stage: n.stage,
                metric,
                observed: n.observed,
                threshold: n.threshold,
            });
            Weighed { outcome, basis }
        }
        _ => undecided(Basis::ClientUnbounded),
    }
}

/// The stage (and its rounds) with the failures a starved client can cause counted as if
/// they had succeeded: what the server itself failed, at least.
fn without_client_failures(stage: &StageSummary) -> StageSummary {
    let strip = |s: &StageSummary| {
        let mut s = StageSummary {
            rounds: Vec::new(),
            timeline: Vec::new(),
            histograms: None,
            client_net: None,
            ..s.clone()
        };
        s.requests.failed = s
            .requests
            .failed
            .saturating_sub(s.requests.client_side_failures());
        s
    };
    StageSummary {
        rounds: stage.rounds.iter().map(strip).collect(),
        ..strip(stage)
    }
}
