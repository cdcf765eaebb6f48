//! The gate a drafted scenario gets: its assertions (the flags', or a default), and where
//! the stage is too short for one of them to pass, the `until-decided` maximum that lets it.

use std::fmt::Write as _;

use super::draft::{Draft, Limit, Load, quote};
use crate::sla::{Need, fewest_to_pass};
use crate::stats::{Build, sequence_tuning};
use crate::units::Duration;

impl Draft {
    /// The gate's assertions: the flags', or the default one.
    pub(super) fn assertions(&self) -> Vec<String> {
        if self.slas.is_empty() {
            vec![DEFAULT_SLA.to_string()]
        } else {
            self.slas.clone()
        }
    }

    /// The requests the stage sends: its count, or its rate times its duration; `None` for
    /// a closed loop bounded by time.
    fn planned(&self) -> Option<u64> {
        match (self.limit, &self.load) {
            (Limit::Requests(n), _) => Some(n),
            (Limit::Duration(d), &Load::Rate { rate, .. }) => {
                Some((rate * d.as_secs_f64()).floor() as u64)
            }
            (Limit::Duration(_), Load::Concurrency(_)) => None,
        }
    }

    /// Where the stage sends fewer requests than an assertion needs to pass (so the gate
    /// could fail but never pass): the most demanding such assertion, and the maximum an
    /// `until-decided` stage gets so that it can.
    pub(super) fn undecidable(&self) -> Option<Short> {
        let planned = self.planned()?;
        let assertions: Vec<(String, crate::sla::Assertion)> = self
            .assertions()
            .into_iter()
            .filter_map(|s| crate::sla::parse(&s).ok().map(|a| (s, a)))
            .collect();
        let need_of = |build| {
            assertions
                .iter()
                .filter_map(
                    |(s, a)| match fewest_to_pass(a, SCAFFOLD_CONFIDENCE, build) {
                        Need::Requests(n) => Some((n, s.clone())),
                        _ => None,
                    },
                )
                .max_by_key(|(n, _)| *n)
        };
        let (need, sla) = need_of(Build::Fixed)?;
        if planned >= need {
            return None;
        }
        // Room for a server near its threshold, which takes more than the best case; and at
        // least what the stage's confidence sequence (wider than one interval) needs.
        let mut max_requests = (need * 4).div_ceil(100) * 100;
        for _ in 0..8 {
            let tuned_for = sequence_tuning(Some(planned), Some(max_requests));
            match need_of(Build::Sequential { tuned_for }) {
                Some((n, _)) if n * 2 > max_requests => max_requests *= 2,
                _ => break,
            }
        }
        Some(Short {
            sla,
            need,
            planned,
            max_requests,
        })
    }
}

/// The assertion `new` writes when no `--sla` is given.
const DEFAULT_SLA: &str = "error_rate < 1%";

/// The confidence a written scenario's verdicts use (the default `sla { confidence }`).
const SCAFFOLD_CONFIDENCE: f64 = 0.95;

/// A stage too short to pass an assertion, and the maximum that fixes it.
pub(super) struct Short {
    sla: String,
    need: u64,
    planned: u64,
    pub(super) max_requests: u64,
}

impl Short {
    pub(super) fn why(&self) -> String {
        format!(
            "`{}` needs at least {} requests to pass at 95 % confidence, more than the {} this \
             stage sends, so it keeps sending until every assertion is decided, up to {} \
             requests (docs/sla.md, \"Stages that stop when the answer is known\").",
            self.sla, self.need, self.planned, self.max_requests
        )
    }

    /// A duration maximum: the time the stage's rate takes to send `max_requests`, in whole
    /// seconds.
    pub(super) fn max_duration(&self, draft: &Draft) -> Duration {
        let rate = match draft.load {
            Load::Rate { rate, .. } => rate,
            Load::Concurrency(_) => 1.0,
        };
        Duration::from_millis((self.max_requests as f64 / rate).ceil() as u64 * 1_000)
    }
}

impl Draft {
    pub(super) fn write_sla(&self, o: &mut String) -> std::fmt::Result {
        writeln!(
            o,
            "// The gate: `infermeter run` exits 1 when one of these fails (docs/sla.md)."
        )?;
        writeln!(o, "sla {{")?;
        if self.slas.is_empty() {
            writeln!(o, "    assert {}", quote(DEFAULT_SLA))?;
            writeln!(o, "    // assert \"ttft.p95 < 200ms\"")?;
            writeln!(o, "    // assert \"itl.p99 < 50ms\"")?;
        } else {
            for s in &self.slas {
                writeln!(o, "    assert {}", quote(s))?;
            }
        }
        writeln!(o, "}}")
    }
}
