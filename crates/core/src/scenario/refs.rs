//! The checks across nodes: names declared once, every name referred to declared, and every
//! assertion on a metric the target's API has.

use std::collections::BTreeMap;

use miette::SourceSpan;

use super::ctx::Ctx;
use super::error::did_you_mean;
use super::model::Scenario;
use super::written::Spanned;

/// Records a dataset or stage name, reporting a duplicate.
pub(super) fn unique(
    ctx: &mut Ctx<'_>,
    names: &mut BTreeMap<String, SourceSpan>,
    n: &Spanned<String>,
    what: &str,
) -> bool {
    if names.contains_key(&n.value) {
        ctx.error(
            n.span,
            format!("duplicate {what} `{}`", n.value),
            format!("a {what} with this name is already declared"),
            Some(format!("give each {what} its own name")),
        );
        return false;
    }
    names.insert(n.value.clone(), n.span);
    true
}

pub(super) fn check_refs(
    ctx: &mut Ctx<'_>,
    s: &Scenario,
    dataset_refs: &[Spanned<String>],
    datasets: &BTreeMap<String, SourceSpan>,
    stages: &BTreeMap<String, SourceSpan>,
) {
    let refer = |ctx: &mut Ctx<'_>,
                 r: &Spanned<String>,
                 names: &BTreeMap<String, SourceSpan>,
                 what: &str| {
        if names.contains_key(&r.value) {
            return;
        }
        let help = match did_you_mean(&r.value, names.keys().map(String::as_str)) {
            Some(m) => format!("did you mean `{m}`?"),
            None if names.is_empty() => format!("no {what} is declared"),
            None => format!(
                "declared {what}s: {}",
                names
                    .keys()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        ctx.error(
            r.span,
            format!("undefined {what} `{}`", r.value),
            format!("no {what} with this name"),
            Some(help),
        );
    };
    for d in dataset_refs {
        refer(ctx, d, datasets, "dataset");
    }
    for a in &s.sla {
        if let Some(st) = &a.stage {
            refer(ctx, st, stages, "stage");
        }
    }
    metrics_fit_api(ctx, s);
    answers_are_checked(ctx, s);
    judges_see_prompts(ctx, s);
    super::profile::check_curve_assertions(ctx, s);
    super::shapes::check_shapes(ctx, s);
    super::server_config::check_best_assertions(ctx, s);
}

/// An SLA on what the answers say (`accuracy`, `repetition_rate`, `empty_rate`, `agreement`)
/// on a stage whose data set checks none (no `quality` block; for `accuracy`, no `score`), or
/// `agreement` in a scenario with no baseline, could never be observed: refused where it is
/// written.
fn answers_are_checked(ctx: &mut Ctx<'_>, s: &Scenario) {
    use crate::sla::Metric;
    use infermeter_words::metrics::CountMetric;
    for a in &s.sla {
        let Metric::Count(c) = a.expr.value.metric else {
            continue;
        };
        let judged = c == CountMetric::JudgeScore;
        if !c.is_quality() && !judged {
            continue;
        }
        if c == CountMetric::Agreement && s.report.baseline.is_none() {
            // Nothing to agree with: it could only ever be undecided.
            ctx.error(
                a.expr.span,
                "`agreement` compares the answers with a baseline run's, and the scenario \
                 names none",
                "no baseline to agree with",
                Some(
                    "name the baseline run: report { baseline \"base/results.json\" } (its \
                     answers.jsonl beside it; docs/quality.md)"
                        .into(),
                ),
            );
            continue;
        }
        let unchecked = s
            .stages
            .iter()
            .filter(|st| a.stage.as_ref().is_none_or(|n| n.value == st.name.value))
            .find(|st| {
                let d = s.datasets.iter().find(|d| d.name.value == st.dataset.value);
                // An undeclared or invalid data set is reported where it is named.
                d.is_some_and(|d| {
                    d.quality.as_ref().is_none_or(|q| {
                        (c == CountMetric::Accuracy && q.score.is_none())
                            || (judged && q.judge.is_none())
                    })
                })
            });
        if let Some(st) = unchecked {
            let (what, verb) = if c == CountMetric::Accuracy {
                ("a `quality { score … }` block", "scores")
            } else if judged {
                ("a `quality { judge { … } }` block", "judges")
            } else {
                ("a `quality { … }` block", "checks")
            };
            ctx.error(
                a.expr.span,
                format!(
                    "`{c}` judges answers, and stage `{}`'s data set `{}` {verb} none",
                    st.name.value,
                    st.dataset.value,
                    c = Metric::Count(c)
                ),
                format!("its data set needs {what}"),
                Some(
                    "add e.g. quality { score \"exact\" } to the data set (docs/quality.md)".into(),
                ),
            );
        }
    }
}

/// A judge reads each answer beside its question: a data set whose prompts are drawn (synthetic,
/// a trace's lengths, generated agentic tasks) has no question to show it, so its judge would
/// grade answers to nothing. Refused at the data set's name.
fn judges_see_prompts(ctx: &mut Ctx<'_>, s: &Scenario) {
    use super::model::DatasetKind;
    for d in &s.datasets {
        let judged = d.quality.as_ref().is_some_and(|q| q.judge.is_some());
        let texts = matches!(d.kind, DatasetKind::Jsonl(_) | DatasetKind::ShareGpt(_));
        if judged && !texts {
            ctx.error(
                d.name.span,
                format!(
                    "data set `{}` has a judge and no prompt texts to show it",
                    d.name.value
                ),
                "a judge needs records' prompts",
                Some("judge a `jsonl` or `sharegpt` data set (docs/quality.md)".into()),
            );
        }
    }
}

/// An SLA on a metric the target's API does not have (TTFT of an embeddings request, which
/// comes whole) could never be observed: refused where it is written.
fn metrics_fit_api(ctx: &mut Ctx<'_>, s: &Scenario) {
    let api = s.target.request.api;
    let answer = s.target.request.answer();
    for a in &s.sla {
        let metric = a.expr.value.metric;
        if metric.applies_to(answer) {
            continue;
        }
        let has: Vec<&str> = crate::sla::Metric::of_answer(answer)
            .filter(|m| m.curve().is_none() && !m.is_telemetry())
            .map(|m| m.name())
            .collect();
        let why = if answer.streams() {
            "it is measured only for a pooling API"
        } else {
            "its answer comes whole, not streamed"
        };
        let asked = if answer == crate::protocol::Answer::Whole {
            " with stream #false"
        } else {
            ""
        };
        ctx.error(
            a.expr.span,
            format!("api \"{api}\"{asked} has no `{metric}`"),
            why,
            Some(format!(
                "the metrics of api \"{api}\": {} (and the telemetry and curve figures)",
                has.join(", ")
            )),
        );
    }
}
