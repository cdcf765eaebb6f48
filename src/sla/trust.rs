//! What an untrusted stage's flags do to one verdict. Each flag says what it can distort
//! (`metrics::Distortion`), and each distortion which ways it can move a metric; a verdict its
//! numbers reached stands when no flag could have moved the value that way ("passes even if
//! the client added nothing"). A failure that only the client's own delay could have produced
//! is decided once what the client may have added is taken off: each request's send lag and a
//! bound on how late it read (the net latencies), or the failures a starved client declares
//! itself. Everything else a flag could have produced is undecided, and says which flag. The
//! rules and their derivation: `docs/sla.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::evaluate::Context;
use super::grammar::{Assertion, Metric, Op};
use super::observe::View;
use super::policy::Untrusted;
use super::spread::{Spread, decide, spread, spread_in};
use super::verdict::SlaOutcome;
use crate::metrics::{CountMetric, Distortion, Flag, LatencyMetric, Moves, StageSummary};

/// Which rule decided a verdict, as `results.json` records it (`basis`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Basis {
    /// No flag bears on it: the numbers as they are.
    Numbers,
    /// The stage is untrusted and `untrusted "judge"` asked for its numbers as they are.
    Judged,
    /// Every flag on the stage could only have moved the value away from this outcome.
    Unmoved { by: Vec<Distortion> },
    /// A failure that holds net of what the client may have added to each request (its send
    /// lag and how late it read): up to `added_ms` at this figure.
    NetOfClient { added_ms: f64 },
    /// A failure of the error rate that holds without the failures a starved client can
    /// cause itself (`removed`: timeouts, cancelled requests).
    WithoutClientFailures { removed: u64 },
    /// Undecided: net of what the client may have added (up to `added_ms` at this figure)
    /// the value no longer shows the failure; it is `margin` (in its unit) past the
    /// threshold.
    ClientMayHaveAdded { added_ms: f64, margin: f64 },
    /// Undecided: without the `removed` failures a starved client can cause, the error rate
    /// no longer shows the failure.
    ClientFailuresMayExplain { removed: u64 },
    /// Undecided: the client's delay could have produced this failure, and this metric has
    /// no measured bound on what it added (ITL, TPOT, rates).
    ClientUnbounded,
    /// Undecided: a flag on the stage (`flag`, its kind) could have produced this outcome.
    Flagged {
        flag: String,
        distortion: Distortion,
        would: SlaOutcome,
    },
}

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
pub(super) fn weigh(n: &Numbers<'_>, cx: &Context<'_>) -> Weighed {
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
    if cx.policy.untrusted == Untrusted::Judge {
        return keep(Basis::Judged);
    }
    let closed_loop = stage.planned.clients.is_some();
    let toward = toward(n.assertion.op, n.outcome);
    let flags = stage.validity.typed_flags();
    let mut present: Vec<Distortion> = Vec::new();
    let mut suspects: Vec<(&Flag, Distortion)> = Vec::new();
    for flag in &flags {
        for &d in flag.kind.distortions(closed_loop) {
            if !present.contains(&d) {
                present.push(d);
            }
            let moves = d.moves(metric.def());
            if (toward.up && moves.up) || (toward.down && moves.down) {
                suspects.push((flag, d));
            }
        }
    }
    if suspects.is_empty() {
        present.sort();
        return keep(Basis::Unmoved { by: present });
    }
    let only_client = suspects.iter().all(|(_, d)| *d == Distortion::ClientDelay);
    if only_client && n.outcome == SlaOutcome::Fail {
        return net_of_client(n, cx);
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

/// Which way the value must have been pushed to reach `outcome` under `op`.
fn toward(op: Op, outcome: SlaOutcome) -> Moves {
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
fn net_of_client(n: &Numbers<'_>, cx: &Context<'_>) -> Weighed {
    let (metric, agg, op) = (n.assertion.metric, n.assertion.aggregation, n.assertion.op);
    let confidence = cx.policy.confidence;
    let point = |s: Spread| {
        if cx.policy.intervals {
            s
        } else {
            Spread::Point
        }
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
            let spread = point(spread_in(View::Net, metric, agg, n.stage, confidence));
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
            let spread = point(spread(metric, agg, &server, confidence));
            match decide(op, rate, spread, n.threshold).0 {
                SlaOutcome::Fail => Weighed {
                    outcome: SlaOutcome::Fail,
                    basis: Basis::WithoutClientFailures { removed },
                },
                _ => undecided(Basis::ClientFailuresMayExplain { removed }),
            }
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

impl Basis {
    /// The rule in words, for the verdict's note.
    pub fn sentence(&self, outcome: SlaOutcome) -> String {
        let verb = match outcome {
            SlaOutcome::Pass => "passes",
            _ => "fails",
        };
        match self {
            Basis::Numbers => "numbers judged as they are".into(),
            Basis::Judged => {
                "judged on its numbers although the stage is untrusted (`untrusted \"judge\"`)"
                    .into()
            }
            Basis::Unmoved { by } if by.as_slice() == [Distortion::ClientDelay] => {
                format!("{verb} even if the client added nothing")
            }
            Basis::Unmoved { by } => {
                let nouns: Vec<&str> = by.iter().map(|d| d.noun()).collect();
                format!(
                    "{verb} whatever {} did: it could only have moved the value the other way",
                    nouns.join(" and ")
                )
            }
            Basis::NetOfClient { added_ms } => {
                format!("fails even after removing up to {added_ms:.2} ms the client added")
            }
            Basis::WithoutClientFailures { removed: 0 } => "fails on failures a starved client \
                cannot cause (none timed out or was cancelled)"
                .into(),
            Basis::WithoutClientFailures { removed } => format!(
                "fails even without the {removed} failures a starved client can cause \
                 (timeouts, cancelled)"
            ),
            Basis::ClientMayHaveAdded { added_ms, margin } => format!(
                "undecided: the client may have added up to {added_ms:.2} ms and the margin is \
                 {margin:.2} ms"
            ),
            Basis::ClientFailuresMayExplain { removed } => format!(
                "undecided: without the {removed} failures a starved client can cause \
                 (timeouts, cancelled) it no longer shows the failure"
            ),
            Basis::ClientUnbounded => "undecided: the client's delay may explain it, and what \
                it added is not bounded for this metric"
                .into(),
            Basis::Flagged {
                distortion, would, ..
            } => format!(
                "undecided: {} could have made it {}",
                distortion.noun(),
                would.as_str()
            ),
        }
    }
}
