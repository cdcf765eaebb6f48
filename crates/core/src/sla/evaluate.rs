//! Evaluates parsed assertions against stage summaries (and an optional baseline run): pass,
//! fail or inconclusive, decided on the observed value's confidence interval (see
//! `spread.rs`).
//!
//! A stage-scoped assertion is evaluated on its stage only. A scenario-level assertion (no
//! stage) is evaluated on every measured stage, one verdict per stage with `stage` set: an SLA
//! is a promise about every load the scenario applies, and a per-stage verdict says which load
//! broke it. Warm-up is never evaluated.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::grammar::{Assertion, Metric, Op, ScopedAssertion, Threshold};
use super::observe::View;
use super::policy::Policy;
use super::spread::{Spread, decide};
use super::telemetry::observe_with;
use super::verdict::{Basis, SlaOutcome, SlaVerdict};
use crate::metrics::{CountMetric, StageSummary};
use crate::stats::Build;
use crate::telemetry::TelemetryReport;

/// A past run whose numbers `baseline` thresholds refer to: its stages and telemetry.
#[derive(Debug, Clone, Copy)]
pub struct Baseline<'a> {
    pub stages: &'a [StageSummary],
    pub telemetry: Option<&'a TelemetryReport>,
}

/// What an inconclusive assertion does to the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InconclusiveAs {
    /// The gate fails (exit 1): nothing is let through that was not shown to pass.
    Fail,
    /// The gate passes (exit 0): only a shown failure stops it.
    Pass,
    /// The gate is inconclusive (exit 4): neither passed nor failed, so CI can tell "the
    /// server regressed" from "this run could not tell".
    #[default]
    Inconclusive,
}

impl InconclusiveAs {
    pub fn as_str(self) -> &'static str {
        match self {
            InconclusiveAs::Fail => "fail",
            InconclusiveAs::Pass => "pass",
            InconclusiveAs::Inconclusive => "inconclusive",
        }
    }
}

/// The gate over the verdicts that gate (a sweep point's past its knee does not): failed if
/// any failed; else inconclusive if any was (and the policy says so); else passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Gate {
    pub outcome: SlaOutcome,
    /// Gating verdicts that passed, failed, were undecided.
    pub passed: usize,
    pub failed: usize,
    /// Inconclusive assertions.
    pub undecided: usize,
}

/// The gate's outcome for `verdicts`, an inconclusive one counted as `inconclusive` says.
pub fn gate(verdicts: &[SlaVerdict], inconclusive: InconclusiveAs) -> Gate {
    let count = |o: SlaOutcome| {
        verdicts
            .iter()
            .filter(|v| v.gates && v.outcome == o)
            .count()
    };
    let (passed, failed, undecided) = (
        count(SlaOutcome::Pass),
        count(SlaOutcome::Fail),
        count(SlaOutcome::Inconclusive),
    );
    let outcome = if failed > 0 {
        SlaOutcome::Fail
    } else if undecided == 0 {
        SlaOutcome::Pass
    } else {
        match inconclusive {
            InconclusiveAs::Fail => SlaOutcome::Fail,
            InconclusiveAs::Pass => SlaOutcome::Pass,
            InconclusiveAs::Inconclusive => SlaOutcome::Inconclusive,
        }
    };
    Gate {
        outcome,
        passed,
        failed,
        undecided,
    }
}

/// The expression of the implicit verdict every stage that measured nothing gets.
pub const NOTHING_MEASURED: &str = "error_rate < 100%";

/// [`NOTHING_MEASURED`], parsed.
pub fn nothing_measured_assertion() -> Assertion {
    Assertion {
        expr: NOTHING_MEASURED.to_string(),
        metric: Metric::Count(CountMetric::ErrorRate),
        aggregation: None,
        op: Op::Lt,
        threshold: Threshold::Absolute(100.0),
        window: super::grammar::Window::Stage,
        label: None,
        best: false,
    }
}

/// One failed verdict per measured stage (not a sweep point or search probe, whose failures
/// are what they measure) that sent requests and had none succeed: such a stage measured
/// nothing, so the run must not pass, whatever (or whether any) assertions say.
pub fn nothing_measured(stages: &[StageSummary]) -> Vec<SlaVerdict> {
    stages
        .iter()
        .filter(|s| s.profile.is_none() && s.requests.sent > 0 && s.requests.ok == 0)
        .map(|s| {
            let errors: Vec<String> = s
                .requests
                .errors
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            SlaVerdict {
                assertion: nothing_measured_assertion(),
                stage: Some(s.name.clone()),
                observed: 100.0,
                threshold: 100.0,
                passed: false,
                outcome: SlaOutcome::Fail,
                interval: None,
                more: None,
                basis: Some(Basis::Numbers),
                gates: true,
                unobserved: false,
                note: Some(format!(
                    "implicit: every one of the {} requests failed ({}), so the stage measured \
                     nothing",
                    s.requests.sent,
                    errors.join(", ")
                )),
            }
        })
        .collect()
}

/// Everything an evaluation may read besides the stages.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    pub baseline: Option<Baseline<'a>>,
    /// The run's telemetry, which serves the telemetry metrics (`gpu.temp.max`, …).
    pub telemetry: Option<&'a TelemetryReport>,
    pub policy: Policy,
}

/// One verdict per (assertion, stage) pair, in assertion order then stage order, with the
/// default policy.
pub fn evaluate(
    assertions: &[ScopedAssertion],
    stages: &[StageSummary],
    baseline: Option<Baseline<'_>>,
) -> Vec<SlaVerdict> {
    evaluate_with(assertions, stages, baseline, None)
}

/// [`evaluate`] with the run's telemetry.
pub fn evaluate_with(
    assertions: &[ScopedAssertion],
    stages: &[StageSummary],
    baseline: Option<Baseline<'_>>,
    telemetry: Option<&TelemetryReport>,
) -> Vec<SlaVerdict> {
    let cx = Context {
        baseline,
        telemetry,
        policy: Policy::default(),
    };
    judge(assertions, stages, &cx)
}

/// One verdict per (assertion, stage) pair, in assertion order then stage order.
pub fn judge(
    assertions: &[ScopedAssertion],
    stages: &[StageSummary],
    cx: &Context<'_>,
) -> Vec<SlaVerdict> {
    let mut verdicts = Vec::new();
    for ScopedAssertion {
        assertion, stage, ..
    } in assertions
    {
        // On the best configuration, never on a stage (`configs.rs`).
        if assertion.best {
            continue;
        }
        match stage {
            Some(name) => match stages.iter().find(|s| &s.name == name) {
                Some(stage) => verdicts.push(judge_one(assertion, stage, cx)),
                None => {
                    let mut v = blank(assertion, name);
                    v.note = Some(format!("stage `{name}` has no results (it did not run)"));
                    verdicts.push(v);
                }
            },
            // A label selected on every stage is judged on the stages that have it.
            None => verdicts.extend(
                stages
                    .iter()
                    .filter(|s| {
                        assertion
                            .label
                            .as_ref()
                            .is_none_or(|on| s.group(on).is_some())
                    })
                    .map(|s| judge_one(assertion, s, cx)),
            ),
        }
    }
    verdicts
}

fn blank(assertion: &Assertion, stage: &str) -> SlaVerdict {
    SlaVerdict {
        assertion: assertion.clone(),
        stage: Some(stage.to_string()),
        observed: 0.0,
        threshold: absolute_or_zero(assertion),
        passed: false,
        outcome: SlaOutcome::Fail,
        interval: None,
        more: None,
        basis: None,
        note: None,
        gates: true,
        unobserved: false,
    }
}

fn absolute_or_zero(a: &Assertion) -> f64 {
    match a.threshold {
        Threshold::Absolute(v) => v,
        Threshold::Baseline { .. } => 0.0,
    }
}

/// Evaluates one assertion on one stage with the default policy.
pub fn evaluate_one(
    assertion: &Assertion,
    stage: &StageSummary,
    baseline: Option<Baseline<'_>>,
) -> SlaVerdict {
    let cx = Context {
        baseline,
        ..Context::default()
    };
    judge_one(assertion, stage, &cx)
}

/// Judges one assertion on one stage: the observed value against the threshold, decided on
/// the value's confidence interval where it has one (inconclusive when the interval straddles
/// the threshold), then, on an untrusted stage, weighed against its flags: undecided where a
/// flag could have produced the verdict, unless the policy judges such stages as they are
/// (`trust.rs`).
pub fn judge_one(assertion: &Assertion, stage: &StageSummary, cx: &Context<'_>) -> SlaVerdict {
    if let Some(on) = &assertion.label {
        return judge_label(assertion, on, stage, cx);
    }
    let mut verdict = judge_whole(assertion, stage, cx);
    super::prefix::fall_back(assertion, stage, &mut verdict);
    verdict
}

/// On one label's requests (`[model=lora-sql]`): judged as a stage of their own, against the
/// same label of the baseline's stage; failed when the stage has no such requests, since what
/// it asks about was not measured.
fn judge_label(
    assertion: &Assertion,
    on: &crate::protocol::LabelRef,
    stage: &StageSummary,
    cx: &Context<'_>,
) -> SlaVerdict {
    let Some(part) = stage.group(on) else {
        let mut v = blank(assertion, &stage.name);
        v.note = Some(format!("stage `{}` sent no request of {on}", stage.name));
        v.unobserved = true;
        return v;
    };
    let base: Vec<StageSummary> = cx
        .baseline
        .map(|b| {
            b.stages
                .iter()
                .filter_map(|s| s.group(on).cloned())
                .collect()
        })
        .unwrap_or_default();
    let cx = Context {
        baseline: cx.baseline.map(|b| Baseline {
            stages: &base,
            telemetry: b.telemetry,
        }),
        ..*cx
    };
    judge_whole(assertion, part, &cx)
}

fn judge_whole(assertion: &Assertion, stage: &StageSummary, cx: &Context<'_>) -> SlaVerdict {
    if assertion.window == super::grammar::Window::Steady {
        return judge_steady(assertion, stage, cx);
    }
    judge_stage(assertion, stage, cx)
}

/// On the stage's steady-state window: judged as a stage of its own (its requests, latencies
/// with their batch intervals, throughput; the stage's validity), or failed when it has none,
/// since what it asks about was not measured.
fn judge_steady(assertion: &Assertion, stage: &StageSummary, cx: &Context<'_>) -> SlaVerdict {
    let Some(view) = stage.steady_view() else {
        let mut v = blank(assertion, &stage.name);
        v.note = Some(format!(
            "stage `{}` has no steady-state window (its load held at {:.0} % of its peak for \
             less than {} s, or it ran in rounds or shards)",
            stage.name,
            crate::metrics::STEADY_RATIO * 100.0,
            crate::metrics::MIN_WINDOW_S
        ));
        v.unobserved = true;
        return v;
    };
    let mut v = judge_stage(assertion, &view, cx);
    if let Some(w) = &stage.steady {
        let at = format!("window {:.0}–{:.0} s", w.from_s, w.to_s);
        v.note = Some(match v.note.take() {
            Some(n) => format!("{at}; {n}"),
            None => at,
        });
    }
    v
}

fn judge_stage(assertion: &Assertion, stage: &StageSummary, cx: &Context<'_>) -> SlaVerdict {
    let mut verdict = judge_numbers(assertion, stage, cx);
    // A stage that sent requests and got none answered measured nothing: every assertion on
    // it fails, whatever its metric would say (an error rate of 100 % is the one number it
    // has) and however untrusted the stage is, since no better run of it could pass.
    if stage.requests.sent > 0 && stage.requests.ok == 0 {
        let reason = format!(
            "no request of the stage succeeded ({} sent): it measured nothing",
            stage.requests.sent
        );
        verdict.note = Some(match verdict.note.take() {
            Some(n) if verdict.outcome == SlaOutcome::Fail => format!("{reason}; {n}"),
            _ => reason,
        });
        verdict.set_outcome(SlaOutcome::Fail);
        verdict.basis = Some(Basis::Numbers);
        return verdict;
    }
    if assertion.metric.def().from_output_tokens && stage.tokens.estimated > 0 {
        let note = format!(
            "output token counts of {} of {} requests are estimates (the server sent no usage)",
            stage.tokens.estimated, stage.requests.ok
        );
        verdict.note = Some(match verdict.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note,
        });
    }
    verdict
}

fn judge_numbers(assertion: &Assertion, stage: &StageSummary, cx: &Context<'_>) -> SlaVerdict {
    let mut verdict = blank(assertion, &stage.name);
    let (metric, agg) = (assertion.metric, assertion.aggregation);
    if let Some(why) = super::observe::unpaired_agreement(metric, stage, cx.baseline.is_some()) {
        verdict.note = Some(why);
        verdict.unobserved = true;
        verdict.set_outcome(SlaOutcome::Inconclusive);
        return verdict;
    }
    let observed = match observe_with(metric, agg, stage, cx.telemetry) {
        Ok(v) => v,
        Err(why) => {
            verdict.note = Some(why.to_string());
            verdict.unobserved = true;
            return verdict;
        }
    };
    verdict.observed = observed;
    let Some((spread, build)) = spread_of(assertion, stage, cx, &mut verdict) else {
        return verdict;
    };
    let spread = if cx.policy.intervals {
        spread
    } else {
        Spread::Point
    };
    let (outcome, more) = decide(assertion.op, observed, spread, verdict.threshold);
    verdict.interval = match spread {
        Spread::Interval { interval, .. } => Some(interval),
        _ => None,
    };
    // The count that would decide it, searched for as the interval is built; the 1/√n law of
    // `decide` stays for baseline thresholds, whose interval is a bootstrap across two runs.
    verdict.more = match (outcome, assertion.threshold) {
        (SlaOutcome::Inconclusive, Threshold::Absolute(t)) if cx.policy.intervals => {
            super::need::more_needed(assertion, stage, t, cx.policy.confidence, build).or(more)
        }
        _ => more,
    };
    verdict.set_outcome(outcome);
    let sequential = matches!(build, Build::Sequential { .. });
    if outcome == SlaOutcome::Inconclusive {
        verdict.note = Some(match spread {
            Spread::TooFew {
                have, needed, of, ..
            } => format!(
                "too few {} for a {:.0} % interval: {have} of the {needed} needed",
                of.noun(),
                cx.policy.confidence * 100.0
            ),
            _ if sequential => {
                "the stage's confidence sequence straddles the threshold".to_string()
            }
            _ => "the interval straddles the threshold".to_string(),
        });
    } else if sequential {
        verdict.note = Some(
            "decided on the stage's confidence sequence (until-decided), valid wherever it \
             stopped"
                .to_string(),
        );
    }
    weigh_flags(assertion, stage, cx, &mut verdict);
    verdict
}

/// The spread the assertion is decided on, and how its interval is built: an `until-decided`
/// stage's confidence sequence, a fixed-sample interval, or the bootstrap against a baseline.
/// `None` when the baseline cannot give a threshold; the verdict then says why.
fn spread_of(
    assertion: &Assertion,
    stage: &StageSummary,
    cx: &Context<'_>,
    verdict: &mut SlaVerdict,
) -> Option<(Spread, Build)> {
    let (metric, agg) = (assertion.metric, assertion.aggregation);
    let confidence = cx.policy.confidence;
    match assertion.threshold {
        Threshold::Absolute(_) => Some(super::sequential::absolute_spread(
            View::Measured,
            assertion,
            stage,
            confidence,
        )),
        Threshold::Baseline { factor } => {
            let base = cx
                .baseline
                .and_then(|b| b.stages.iter().find(|s| s.name == stage.name));
            let Some(base) = base else {
                // Nothing to compare with: the threshold is unknown, so the assertion is
                // undecided rather than failed against a threshold of 0.
                verdict.note = Some(match cx.baseline {
                    None => "no baseline given, so the threshold is unknown".to_string(),
                    Some(b) => format!(
                        "the baseline has no stage `{}` (it has {}), so the threshold is unknown",
                        stage.name,
                        stage_names(b.stages)
                    ),
                });
                verdict.set_outcome(SlaOutcome::Inconclusive);
                return None;
            };
            let base_telemetry = cx.baseline.and_then(|b| b.telemetry);
            let base_value = match observe_with(metric, agg, base, base_telemetry) {
                Ok(v) => v,
                Err(why) => {
                    verdict.note = Some(format!("baseline: {why}"));
                    return None;
                }
            };
            verdict.threshold = base_value * factor;
            let shift =
                super::change::spread_against(metric, agg, stage, base, base_value, cx.policy);
            Some((shift, Build::Fixed))
        }
    }
}

/// What the stage's flags leave of a verdict its numbers reached, and the rule that decided
/// it, in the note too when it is not the numbers alone.
fn weigh_flags(
    assertion: &Assertion,
    stage: &StageSummary,
    cx: &Context<'_>,
    verdict: &mut SlaVerdict,
) {
    let numbers = verdict.outcome;
    let n = super::trust::Numbers {
        assertion,
        stage,
        observed: verdict.observed,
        threshold: verdict.threshold,
        outcome: numbers,
    };
    // A trusted stage's client may still have read late: its loop's stalls, bounded.
    let stalled = stage
        .validity
        .trusted
        .then(|| super::stall::weigh_stall(&n, &cx.policy))
        .flatten();
    let weighed = stalled.unwrap_or_else(|| super::trust::weigh(&n, &cx.policy));
    if weighed.outcome != numbers {
        verdict.more = None;
    }
    verdict.set_outcome(weighed.outcome);
    let sentence = weighed.basis.sentence(weighed.outcome);
    verdict.note = match &weighed.basis {
        Basis::Numbers => verdict.note.take(),
        Basis::Judged => Some(match verdict.note.take() {
            Some(n) => format!("{n}; {sentence}"),
            None => sentence,
        }),
        // A trusted stage's loop stall: no flag to name.
        // (The summary says "undecided:" before the note already.)
        _ if stage.validity.trusted && weighed.outcome != numbers => Some(format!(
            "stage trusted, but its reads may be late: {}; its numbers would say {}",
            sentence.strip_prefix("undecided: ").unwrap_or(&sentence),
            numbers.as_str()
        )),
        _ if stage.validity.trusted => Some(sentence),
        // The reasons in full are the stage's, said once with it; here only their names.
        _ if weighed.outcome == SlaOutcome::Inconclusive => Some(format!(
            "stage untrusted ({}): {sentence}; its numbers would say {}",
            flag_names(stage),
            numbers.as_str()
        )),
        _ => Some(format!("{sentence} (the stage is untrusted)")),
    };
    verdict.basis = Some(weighed.basis);
}

/// The stage's flags by name (`send_lag, idle_clients`), each once.
fn flag_names(stage: &StageSummary) -> String {
    let mut names: Vec<&str> = Vec::new();
    for flag in stage.validity.typed_flags() {
        let name = flag.kind.name();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(", ")
}

fn stage_names(stages: &[StageSummary]) -> String {
    if stages.is_empty() {
        return "no stage".into();
    }
    stages
        .iter()
        .map(|s| format!("`{}`", s.name))
        .collect::<Vec<_>>()
        .join(", ")
}
