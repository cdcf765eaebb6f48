//! Whether a scenario's gate can be decided by what its stages send: for every assertion on
//! every stage, the fewest requests its interval needs to show a pass at best (no request
//! failing, every latency clear of its threshold), against the requests the stage plans to
//! send. `validate` and `plan` print it, and warn where a stage sends too few: such a gate
//! can fail, but never pass, and ends inconclusive on a healthy server.

use std::fmt;

use crate::escape::terminal as t;
use crate::plan::{Load, Plan, StagePlan};
use crate::scenario::Scenario;
use crate::sla::{Need, Policy, fewest_to_pass};
use crate::stats::{Build, sequence_tuning};

/// One assertion on one stage: what it needs, and what the stage sends.
#[derive(Debug, Clone, PartialEq)]
pub struct AssertionNeed {
    pub stage: String,
    /// The assertion as written.
    pub assertion: String,
    pub need: Need,
    /// The most requests the stage sends (its count, or an `until-decided` stage's maximum);
    /// `None` for a closed loop bounded only by time.
    pub planned: Option<u64>,
    /// Judged on the stage's confidence sequence (`until-decided`), which needs more.
    pub sequential: bool,
}

impl AssertionNeed {
    /// The stage cannot send what the assertion needs to pass.
    pub fn short(&self) -> bool {
        match self.need {
            Need::Requests(n) => self.planned.is_some_and(|p| p < n),
            Need::Never => true,
            Need::OnValue => false,
        }
    }
}

/// Every assertion's need on every stage it applies to, at the scenario's confidence.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Needs {
    pub confidence: f64,
    pub rows: Vec<AssertionNeed>,
}

impl Needs {
    /// The needs of `plan`'s assertions, at `scenario`'s confidence. Stages run in rounds are
    /// judged across their rounds, and searches probe as they go: neither is listed.
    pub fn of(scenario: &Scenario, plan: &Plan) -> Needs {
        let confidence = scenario
            .sla_policy
            .confidence
            .unwrap_or(Policy::default().confidence);
        let rows = plan
            .stages
            .iter()
            .filter(|s| s.rounds < 2 && !matches!(s.load, Load::Search(_)))
            .flat_map(|stage| stage_needs(plan, stage, confidence))
            .collect();
        Needs { confidence, rows }
    }

    /// The rows whose stage sends too few.
    pub fn short(&self) -> impl Iterator<Item = &AssertionNeed> {
        self.rows.iter().filter(|r| r.short())
    }
}

fn stage_needs(plan: &Plan, stage: &StagePlan, confidence: f64) -> Vec<AssertionNeed> {
    let planned = stage.request_count();
    let build = match stage.until_decided {
        Some(rule) => Build::Sequential {
            tuned_for: sequence_tuning(rule.min_requests, planned),
        },
        None => Build::Fixed,
    };
    plan.sla
        .iter()
        .filter(|a| a.stage.as_ref().is_none_or(|s| s == &stage.name))
        .map(|a| AssertionNeed {
            stage: stage.name.clone(),
            assertion: a.assertion.to_string(),
            need: fewest_to_pass(&a.assertion, confidence, build),
            planned,
            sequential: stage.until_decided.is_some(),
        })
        .collect()
}

/// The table `plan` and `validate` print, with a warning under each stage that sends too few.
impl fmt::Display for Needs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rows.is_empty() {
            return Ok(());
        }
        writeln!(
            f,
            "decidable  requests each assertion needs to pass at {:.0} % (at best: no error, \
             every latency clear of its threshold)",
            self.confidence * 100.0
        )?;
        let width = self
            .rows
            .iter()
            .map(|r| r.assertion.len())
            .max()
            .unwrap_or(0);
        for r in &self.rows {
            let need = match r.need {
                Need::Requests(n) => format!("{n:>6}"),
                Need::OnValue => "   any".to_string(),
                Need::Never => " never".to_string(),
            };
            // The stage's name is the scenario's: shown escaped, on its line.
            let stage = t(&r.stage);
            let sends = match r.planned {
                Some(n) if r.sequential => format!("stage `{stage}` sends at most {n}"),
                Some(n) => format!("stage `{stage}` sends {n}"),
                None => format!("stage `{stage}` sends for a duration"),
            };
            let verdict = if r.short() { "TOO FEW" } else { "ok" };
            writeln!(
                f,
                "  {:<width$}  {need}   {sends}: {verdict}",
                t(&r.assertion)
            )?;
        }
        Ok(())
    }
}

/// The warning for one row that cannot be decided, with its fix.
pub fn warning(row: &AssertionNeed) -> String {
    match (row.need, row.planned) {
        (Need::Never, _) => format!(
            "`{}` on stage `{}`: no number of requests can show it holds; loosen the threshold",
            t(&row.assertion),
            t(&row.stage)
        ),
        (Need::Requests(n), Some(p)) => format!(
            "`{}` on stage `{}`: the stage sends {p} requests, and it needs at least {n} to \
             pass, so it can fail but never pass; send {n} or more, or let it send until \
             decided (`requests {p} until-decided max={}`, docs/sla.md)",
            t(&row.assertion),
            t(&row.stage),
            ((n * 4).div_ceil(100) * 100).max(p),
        ),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(src: &str) -> Needs {
        let scenario =
            crate::scenario::parse_str(std::path::Path::new("t.kdl"), src, &[]).expect("parses");
        let plan = crate::plan::compile(&scenario).expect("compiles");
        Needs::of(&scenario, &plan)
    }

    const HEAD: &str = r#"
        scenario "t"
        target "sim"
        dataset "d" { synthetic { input-tokens 10; output-tokens 10; } }
    "#;

    #[test]
    fn a_stage_too_short_for_its_error_rate_is_flagged() {
        let n = needs(&format!(
            r#"{HEAD}
            stage "s" {{ dataset "d"; arrival "constant" rate=50; requests 200 }}
            sla {{ assert "error_rate < 1%"; assert "ttft.p95 < 500ms"; assert "request_throughput > 1 req/s" }}
            "#
        ));
        let rows: Vec<_> = n
            .rows
            .iter()
            .map(|r| (r.assertion.as_str(), r.need, r.short()))
            .collect();
        assert_eq!(
            rows,
            [
                ("error_rate < 1%", Need::Requests(381), true),
                ("ttft.p95 < 500ms", Need::Requests(59), false),
                ("request_throughput > 1 req/s", Need::OnValue, false),
            ]
        );
        let shown = n.to_string();
        assert!(
            shown.contains("TOO FEW") && shown.contains("381"),
            "{shown}"
        );
        let w = warning(&n.rows[0]);
        assert!(w.contains("until-decided max=1600"), "{w}");
    }

    #[test]
    fn an_until_decided_stage_needs_more_than_a_fixed_one() {
        let n = needs(&format!(
            r#"{HEAD}
            stage "s" {{ dataset "d"; arrival "constant" rate=50; requests 200 until-decided max=5000 }}
            sla {{ assert "error_rate < 1%" }}
            "#
        ));
        let r = &n.rows[0];
        assert!(r.sequential && !r.short(), "{r:?}");
        assert!(
            matches!(r.need, Need::Requests(k) if k > 381 && k < 5_000),
            "{r:?}"
        );
    }
}
