//! `requests 200 until-decided max=5000` and `duration "60s" until-decided max="10m"`: the
//! limit becomes the stage's minimum, and it keeps sending until every assertion on it is
//! decided, or the maximum. Parsed beside the limit it extends, then checked against what the
//! rest of the file says: it needs an assertion that can decide it, and it cannot apply where
//! one stage is many runs (sweeps, searches, rounds) or its requests are not one load
//! (ramps, trace replays, multi-turn sessions).

use kdl::KdlValue;

use super::ctx::{Ctx, NodeReader, Val};
use super::model::{Scenario, StageLimit, StageSpec};
use super::written::Spanned;
use crate::arrival::ArrivalSpec;

/// The word after the limit.
pub(crate) const UNTIL_DECIDED: &str = "until-decided";

/// The rest of a `requests`/`duration` node after its value: `until-decided max=…`, giving the
/// maximum (spanned at `until-decided`), `None` when the node has neither, or after an error.
pub(crate) fn parse(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    limit: Option<StageLimit>,
) -> Option<Spanned<StageLimit>> {
    let what = r.name();
    let example = if what == "duration" {
        "duration \"60s\" until-decided max=\"10m\""
    } else {
        "requests 200 until-decided max=5000"
    };
    let word = r.arg(ctx, 1);
    let max = r.prop(ctx, "max");
    let word = match (word, &max) {
        (None, None) => return None,
        (None, Some(m)) => {
            ctx.error(
                m.span,
                format!("`max=` on `{what}` without `{UNTIL_DECIDED}`"),
                "a maximum of what?",
                Some(format!("write {example}")),
            );
            return None;
        }
        (Some(w), _) => w,
    };
    if !is_word(&word) {
        ctx.error(
            word.span,
            format!("unexpected argument to `{what}`"),
            "not expected here",
            Some(format!("did you mean `{UNTIL_DECIDED}`? write {example}")),
        );
        return None;
    }
    let Some(max) = max else {
        ctx.error(
            word.span,
            format!("`{UNTIL_DECIDED}` needs `max=`"),
            "until decided, or how many at most?",
            Some(format!("write {example}")),
        );
        return None;
    };
    let max_limit = match limit? {
        StageLimit::Requests(min) => {
            let m = ctx.uint(&max, "max", 1, u64::MAX)?;
            (m >= min).then_some(StageLimit::Requests(m))
        }
        StageLimit::Duration(min) => {
            let m = ctx.positive_duration(&max, "max")?;
            (m >= min).then_some(StageLimit::Duration(m))
        }
    };
    let Some(max_limit) = max_limit else {
        ctx.error(
            max.span,
            format!("`max` is below the stage's minimum, its `{what}`"),
            "the most it may send must be at least the least",
            Some(format!("raise max, or write {example}")),
        );
        return None;
    };
    Some(Spanned::new(max_limit, word.span))
}

fn is_word(v: &Val) -> bool {
    matches!(&v.value, KdlValue::String(s) if s == UNTIL_DECIDED)
}

/// What a stage's own nodes rule out: a sweep or search (each point and probe has its own
/// length), rounds, and loads that are not one steady load.
pub(crate) fn check_stage(
    ctx: &mut Ctx<'_>,
    until: &Spanned<StageLimit>,
    arrival: Option<&ArrivalSpec>,
    profiled: bool,
    rounds: Option<u32>,
) {
    let refuse = |ctx: &mut Ctx<'_>, why: &str, help: &str| {
        ctx.error(
            until.span,
            format!("`{UNTIL_DECIDED}` cannot apply here: {why}"),
            "not on this stage",
            Some(help.to_string()),
        );
    };
    if profiled {
        refuse(
            ctx,
            "a sweep or a search runs many loads, each of its own length",
            "remove it, or give the load its own stage",
        );
    } else if rounds.is_some_and(|r| r > 1) {
        refuse(
            ctx,
            "rounds repeat the same requests, and a round that stopped early is not the same",
            "remove `rounds`, or `until-decided`",
        );
    } else if let Some(a) = arrival.filter(|a| !steady(a)) {
        let kind = match a {
            ArrivalSpec::Trace { .. } => "a trace replay sends what its trace holds",
            _ => "a ramp changes its load as it goes, so its samples are not of one load",
        };
        refuse(
            ctx,
            kind,
            "use a constant, poisson, gamma or concurrency arrival",
        );
    }
}

/// One load for the whole stage, so its requests are samples of one distribution.
fn steady(a: &ArrivalSpec) -> bool {
    matches!(
        a,
        ArrivalSpec::Constant { .. }
            | ArrivalSpec::Poisson { .. }
            | ArrivalSpec::Gamma { .. }
            | ArrivalSpec::Concurrency { .. }
    )
}

/// What the whole file rules out: the scenario's `rounds`, multi-turn data sets, and a stage
/// with no assertion that can decide it.
pub(crate) fn check_scenario(ctx: &mut Ctx<'_>, s: &Scenario) {
    for stage in &s.stages {
        let Some(until) = &stage.until_decided else {
            continue;
        };
        let refuse = |ctx: &mut Ctx<'_>, message: String, label: &str, help: &str| {
            ctx.error(until.span, message, label, Some(help.to_string()));
        };
        if stage.rounds.is_none() && s.rounds > 1 {
            refuse(
                ctx,
                format!(
                    "`{UNTIL_DECIDED}` cannot apply with the scenario's `rounds {}`",
                    s.rounds
                ),
                "repeated in rounds",
                "give the stage `rounds 1`, or remove `until-decided`",
            );
        }
        let sessions = s
            .datasets
            .iter()
            .any(|d| d.name.value == stage.dataset.value && d.session.is_some());
        if sessions {
            refuse(
                ctx,
                format!("`{UNTIL_DECIDED}` cannot apply to multi-turn sessions"),
                "a session's turns are not independent requests",
                "use a data set without `session`, or remove `until-decided`",
            );
        }
        if !decidable(s, stage) {
            refuse(
                ctx,
                format!(
                    "stage `{}` is `{UNTIL_DECIDED}`, but no assertion on it can decide it",
                    stage.name.value
                ),
                "until what is decided?",
                "add e.g. sla { assert \"ttft.p95 < 500ms\" } in the stage: error rates, goodput, \
                 latency percentiles and means decide a stage (throughputs, maxima and baseline \
                 thresholds are judged at its end)",
            );
        }
    }
}

/// Whether an assertion on the stage (its own, or a scenario-level one) can decide it.
fn decidable(s: &Scenario, stage: &StageSpec) -> bool {
    s.sla.iter().any(|a| {
        a.stage
            .as_ref()
            .is_none_or(|scope| scope.value == stage.name.value)
            && crate::sla::decides_stage(&a.expr.value)
    })
}
