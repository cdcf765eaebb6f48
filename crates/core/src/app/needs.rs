//! Whether a scenario's gate can be decided by what its stages send: for every assertion on
//! every stage, the fewest requests its interval needs to show a pass at best (no request
//! failing, every latency clear of its threshold), against the requests the stage plans to
//! send. `validate` and `plan` print it, and warn where a stage sends too few: such a gate
//! can fail, but never pass, and ends inconclusive on a healthy server.

use std::fmt;

use crate::escape::terminal as t;
use crate::metrics::PointKind;
use crate::plan::{Plan, StagePlan};
use crate::scenario::Scenario;
use crate::sla::{Need, Policy, ScopedAssertion, fewest_to_pass};
use crate::stats::{Build, sequence_tuning};

mod reach;
mod words;

pub use reach::{AssertionNeed, Reach, Standing};
pub use words::warning;

/// Every assertion's need on every stage it applies to, at the scenario's confidence.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Needs {
    pub confidence: f64,
    pub rows: Vec<AssertionNeed>,
}

impl Needs {
    /// The needs of `plan`'s assertions, at `scenario`'s confidence: on every stage, every
    /// point of a sweep, a stage run in rounds (across its rounds) and a search (on the
    /// answer probe its SLA is judged on).
    pub fn of(scenario: &Scenario, plan: &Plan) -> Needs {
        let confidence = scenario
            .sla_policy
            .confidence
            .unwrap_or(Policy::default().confidence);
        let rows = plan
            .stages
            .iter()
            .flat_map(|stage| stage_needs(plan, stage, confidence))
            .collect();
        Needs { confidence, rows }
    }

    /// The rows whose stage sends too few.
    pub fn short(&self) -> impl Iterator<Item = &AssertionNeed> {
        self.rows.iter().filter(|r| r.short())
    }
}

/// The sweep `stage` is a point of, if any.
fn sweep_of(stage: &StagePlan) -> Option<&str> {
    stage
        .profile
        .as_ref()
        .filter(|p| p.kind == PointKind::Sweep)
        .map(|p| p.group.as_str())
}

/// Whether `a` is judged on `stage`: scenario-level ones on every stage, a stage's own on it,
/// a sweep's on each of its points.
fn applies(a: &ScopedAssertion, stage: &StagePlan) -> bool {
    match &a.stage {
        None => true,
        Some(s) => s == &stage.name || sweep_of(stage) == Some(s.as_str()),
    }
}

fn stage_needs(plan: &Plan, stage: &StagePlan, confidence: f64) -> Vec<AssertionNeed> {
    let reach = Reach::of(plan, stage, confidence);
    let build = match stage.until_decided {
        Some(rule) => Build::Sequential {
            tuned_for: sequence_tuning(rule.min_requests, stage.request_count()),
        },
        None => Build::Fixed,
    };
    let (name, point) = match sweep_of(stage) {
        Some(group) => (group.to_string(), Some(stage.name.clone())),
        None => (stage.name.clone(), None),
    };
    plan.sla
        .iter()
        .filter(|a| applies(a, stage))
        // A curve figure (`sla_max_rate`) is read off the points' verdicts, not counted.
        .filter(|a| a.assertion.metric.curve().is_none() && !a.assertion.best)
        .map(|a| AssertionNeed {
            stage: name.clone(),
            point: point.clone(),
            assertion: a.assertion.to_string(),
            need: fewest_to_pass(&a.assertion, confidence, build),
            // `judge_score` counts the judge's sample (a label's share of it), not requests.
            reach: match a.assertion.metric {
                crate::sla::Metric::Count(infermeter_words::metrics::CountMetric::JudgeScore) => {
                    reach::judged(plan, stage, reach, a.assertion.label.as_deref()).unwrap_or(reach)
                }
                _ => reach,
            },
            sequential: stage.until_decided.is_some(),
            counts: counts(a.assertion.metric),
        })
        .collect()
}

/// What an assertion's need counts: requests, or the answers an answer-quality share is of.
fn counts(metric: crate::sla::Metric) -> &'static str {
    use infermeter_words::metrics::CountMetric as C;
    let crate::sla::Metric::Count(c) = metric else {
        return "requests";
    };
    match c {
        C::Accuracy => "scored answers",
        C::RepetitionRate | C::EmptyRate => "checked answers",
        C::Agreement => "paired answers",
        C::JudgeScore => "judged answers",
        _ => "requests",
    }
}

/// The table `plan` and `validate` print, with a warning under each stage that sends too few.
impl fmt::Display for Needs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.rows.is_empty() {
            return Ok(());
        }
        // A column naming what each need counts, when some count answers rather than requests.
        let units = self
            .rows
            .iter()
            .map(|r| r.counts.len())
            .filter(|_| self.rows.iter().any(|r| r.counts != "requests"))
            .max();
        let what = if units.is_some() {
            "requests or answers"
        } else {
            "requests"
        };
        writeln!(
            f,
            "decidable  {what} each assertion needs to pass at {:.0} % (at best: no error, \
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
            let need = match units {
                Some(w) => format!("{need} {:<w$}", r.counts),
                None => need,
            };
            writeln!(
                f,
                "  {:<width$}  {need}   {}: {}",
                t(&r.assertion),
                words::sends(r),
                words::standing(r)
            )?;
        }
        Ok(())
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
    /// The (assertion, point, standing) of every row.
    fn standings(n: &Needs) -> Vec<(String, Option<String>, Standing)> {
        n.rows
            .iter()
            .map(|r| (r.assertion.clone(), r.point.clone(), r.standing()))
            .collect()
    }

    #[test]
    fn each_sweep_point_is_held_to_its_assertions() {
        let n = needs(&format!(
            r#"{HEAD}
            stage "p" {{
                dataset "d"; arrival "constant" rate=5; requests 40
                sweep {{ rates 5 10 }}
                sla {{ assert "error_rate < 5%"; assert "sla_max_rate >= 5 req/s" }}
            }}
            "#
        ));
        let rows = standings(&n);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(
            rows.iter().all(|(a, p, s)| a == "error_rate < 5%"
                && p.as_deref().is_some_and(|p| p.starts_with("p@"))
                && *s == Standing::TooFew),
            "{rows:?}"
        );
        let w = warning(&n.rows[0]);
        assert!(w.contains("sweep `p`") && w.contains("sends 40"), "{w}");
        assert!(!w.contains("until-decided max="), "{w}");
    }

    #[test]
    fn a_judge_score_counts_the_judges_sample_and_a_labels_share_of_it() {
        let qa = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/data/qa.jsonl");
        let n = needs(&format!(
            r#"
            scenario "t"
            target "sim" {{ adapters {{ lora 1.0; }} }}
            dataset "d" {{
                jsonl "{qa}"
                quality {{ judge {{ url "sim"; model "j"; rubric "r"; sample 30; }} }}
            }}
            stage "s" {{
                dataset "d"; arrival "concurrency" clients=1; requests 200
                model "infermeter-sim" weight=3
                model "lora" weight=1
            }}
            sla {{
                assert "judge_score > 3"
                assert "judge_score[model=infermeter-sim] > 3"
                assert "judge_score[model=lora] > 3"
            }}
            "#
        ));
        let reach: Vec<(Reach, Standing)> =
            n.rows.iter().map(|r| (r.reach, r.standing())).collect();
        assert_eq!(
            reach,
            [
                (
                    Reach::Judged {
                        count: 30,
                        sample: 30,
                        share: None
                    },
                    Standing::Enough
                ),
                (
                    Reach::Judged {
                        count: 22,
                        sample: 30,
                        share: Some(0.75)
                    },
                    Standing::Enough
                ),
                (
                    Reach::Judged {
                        count: 7,
                        sample: 30,
                        share: Some(0.25)
                    },
                    Standing::TooFew
                ),
            ]
        );
        let w = warning(&n.rows[2]);
        assert!(
            w.contains("about 7 of this label's answers") && w.contains("`sample 40`"),
            "{w}"
        );
        assert!(n.to_string().contains("judged answers"), "{n}");
    }

    #[test]
    fn a_session_counts_its_turns() {
        let n = needs(
            r#"
            scenario "t"
            target "sim"
            dataset "d" {
                synthetic { input-tokens 10; output-tokens 10; }
                session turns=4 think-time="0s"
            }
            stage "s" { dataset "d"; arrival "constant" rate=5; requests 20 }
            sla { assert "error_rate < 5%"; assert "ttft.p99 < 1s" }
            "#,
        );
        let r = &n.rows[0];
        assert_eq!(
            r.reach,
            Reach::Requests {
                count: 80,
                sessions: Some(20)
            }
        );
        assert_eq!(r.standing(), Standing::Enough, "{r:?}");
        let p99 = &n.rows[1];
        assert_eq!(p99.standing(), Standing::TooFew, "{p99:?}");
        let w = warning(p99);
        assert!(
            w.contains("20 sessions send 80") && w.contains("requests 75"),
            "{w}"
        );
    }

    #[test]
    fn rounds_pool_their_requests_until_there_are_enough_of_them() {
        let few = needs(&format!(
            r#"{HEAD}
            stage "s" {{ dataset "d"; arrival "constant" rate=50; requests 20; rounds 3 }}
            sla {{ assert "error_rate < 5%" }}
            "#
        ));
        assert_eq!(few.rows[0].standing(), Standing::TooFew, "{few:?}");
        assert!(warning(&few.rows[0]).contains("run 6 or more rounds"));
        let enough = needs(&format!(
            r#"{HEAD}
            stage "s" {{ dataset "d"; arrival "constant" rate=50; requests 20; rounds 6 }}
            sla {{ assert "error_rate < 5%" }}
            "#
        ));
        assert_eq!(enough.rows[0].standing(), Standing::Enough, "{enough:?}");
        assert!(enough.to_string().contains("ok (across rounds)"));
    }

    #[test]
    fn a_rate_search_says_below_which_answer_its_probes_are_too_short() {
        let search = |from: u32, probe: &str| {
            needs(&format!(
                r#"{HEAD}
                stage "s" {{
                    dataset "d"
                    search {{ rate from={from} to=40; probe "{probe}" }}
                    sla {{ assert "error_rate < 5%" }}
                }}
                "#
            ))
        };
        // 73 requests in 8 s: 9.1 req/s.
        let low = search(2, "8s");
        assert!(
            matches!(low.rows[0].standing(), Standing::Below(r) if (r - 9.125).abs() < 1e-9),
            "{low:?}"
        );
        assert!(warning(&low.rows[0]).contains("raise `from` to 10"));
        let short = search(2, "1s");
        assert_eq!(short.rows[0].standing(), Standing::TooFew, "{short:?}");
        assert!(warning(&short.rows[0]).contains("probes 2s or longer"));
        let fine = search(10, "8s");
        assert_eq!(fine.rows[0].standing(), Standing::Enough, "{fine:?}");
        assert!(warning(&fine.rows[0]).is_empty());
    }
}
