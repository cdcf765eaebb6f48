//! `mlperf "llama3.1-8b" scenario="server" stage="…" require=#true smoke=#true`: the scenario
//! follows an MLPerf Inference preset (the table is `sla::mlperf`). Reading it checks the name
//! and scenario; once every stage and assertion is read, [`apply`] names the stage it judges,
//! adds the preset's `ttft.p99` and `tpot.p99` bounds as ordinary assertions on it, and
//! reports an explicit assertion looser than the preset's bound (docs/sla.md, "MLPerf
//! presets").

use std::collections::BTreeMap;

use kdl::KdlNode;
use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, one_arg};
use super::error::did_you_mean;
use super::model::{AssertionSpec, MlperfSpec, Scenario};
use super::settings::with_reader;
use super::written::Spanned;
use crate::metrics::LatencyMetric;
use crate::sla::mlperf::{MlperfScenario, PRESETS, preset};
use crate::sla::{Aggregation, Metric, Op, Percentile, Threshold, Window};

/// Reads the `mlperf` node.
pub(super) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<MlperfSpec> {
    with_reader(ctx, node, read)
}

fn read(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<MlperfSpec> {
    let name = one_arg(ctx, r, "a benchmark name, e.g. \"llama3.1-8b\"");
    let scenario = match r.prop(ctx, "scenario") {
        None => Some(MlperfScenario::Server),
        Some(v) => scenario_kind(ctx, &v),
    };
    let stage = r.prop(ctx, "stage").and_then(|v| {
        ctx.name_string(&v, "stage")
            .map(|s| Spanned::new(s, v.span))
    });
    let mut flag = |key: &'static str| {
        r.prop(ctx, key)
            .and_then(|v| ctx.boolean(&v, key))
            .unwrap_or(false)
    };
    let (require, smoke) = (flag("require"), flag("smoke"));
    let name = name?;
    let benchmark = ctx.name_string(&name, "mlperf")?;
    let Some(p) = preset(&benchmark) else {
        unknown_benchmark(ctx, name.span, &benchmark);
        return None;
    };
    let scenario = scenario?;
    let Some((ttft_ms, tpot_ms)) = p.bounds(scenario) else {
        ctx.error(
            name.span,
            format!("MLPerf `{benchmark}` has no interactive scenario"),
            "no interactive bounds",
            Some(format!(
                "use scenario=\"server\"; the benchmarks with an interactive variant are {}",
                list(PRESETS.iter().filter(|p| p.interactive.is_some()))
            )),
        );
        return None;
    };
    Some(MlperfSpec {
        benchmark: Spanned::new(benchmark, name.span),
        scenario,
        stage,
        require,
        smoke,
        ttft_ms,
        tpot_ms,
    })
}

fn scenario_kind(ctx: &mut Ctx<'_>, v: &super::ctx::Val) -> Option<MlperfScenario> {
    let s = ctx.name_string(v, "scenario")?;
    let kind = MlperfScenario::from_name(&s);
    if kind.is_none() {
        ctx.error(
            v.span,
            format!("unknown MLPerf scenario `{s}`"),
            "not a scenario with latency bounds",
            Some("use scenario=\"server\" or scenario=\"interactive\"".into()),
        );
    }
    kind
}

fn list<'a>(presets: impl Iterator<Item = &'a crate::sla::mlperf::Preset>) -> String {
    presets
        .map(|p| format!("\"{}\"", p.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn unknown_benchmark(ctx: &mut Ctx<'_>, span: SourceSpan, name: &str) {
    let known = list(PRESETS.iter());
    let help = match did_you_mean(name, PRESETS.iter().map(|p| p.name)) {
        Some(m) => format!("did you mean `{m}`? the known benchmarks are {known}"),
        None => format!("the known benchmarks are {known}"),
    };
    ctx.error(
        span,
        format!("unknown MLPerf benchmark `{name}`"),
        "not a known preset",
        Some(help),
    );
}

/// Names the preset's stage (its `stage=`, else the only stage), then adds its two bounds to
/// `s.sla` unless an explicit assertion on the stage is as strict; one that is looser is an
/// error, since the gate would then pass runs the preset fails.
pub(super) fn apply(ctx: &mut Ctx<'_>, s: &mut Scenario, stages: &BTreeMap<String, SourceSpan>) {
    let Some(spec) = s.mlperf.as_mut() else {
        return;
    };
    if spec.stage.is_none() {
        if stages.len() != 1 {
            ctx.error(
                spec.benchmark.span,
                "`mlperf` needs `stage=` in a scenario with several stages",
                "which stage is the MLPerf run?",
                Some("add e.g. stage=\"server\": the stage whose requests are judged".into()),
            );
            return;
        }
        let only = stages.keys().next().cloned().unwrap_or_default();
        spec.stage = Some(Spanned::new(only, spec.benchmark.span));
    }
    let spec = spec.clone();
    let Some(stage) = spec.stage.clone() else {
        return;
    };
    // An unknown stage is reported with the other references (`refs.rs` does not know this
    // one): here.
    if !stages.contains_key(&stage.value) {
        ctx.error(
            stage.span,
            format!(
                "`mlperf` names stage `{}`, which does not exist",
                stage.value
            ),
            "no such stage",
            Some(format!(
                "use one of: {}",
                stages.keys().cloned().collect::<Vec<_>>().join(", ")
            )),
        );
        return;
    }
    if !one_load(ctx, s, &stage) {
        return;
    }
    for (metric, name, bound) in [
        (LatencyMetric::Ttft, "ttft", spec.ttft_ms),
        (LatencyMetric::Tpot, "tpot", spec.tpot_ms),
    ] {
        if covered(ctx, s, &spec, &stage.value, Metric::Latency(metric), bound) {
            continue;
        }
        // Parsed as if written, so that it reads back exactly as a user's would.
        let Ok(assertion) = crate::sla::parse(&format!("{name}.p99 < {bound}ms")) else {
            continue;
        };
        s.sla.push(AssertionSpec {
            expr: Spanned::new(assertion, spec.benchmark.span),
            stage: Some(stage.clone()),
            abort_on_fail: false,
            every_point: false,
        });
    }
}

/// Whether an explicit upper bound on the stage's whole-stage p99 of `metric` is already at
/// least as strict as the preset's; a looser one is reported.
fn covered(
    ctx: &mut Ctx<'_>,
    s: &Scenario,
    spec: &MlperfSpec,
    stage: &str,
    metric: Metric,
    bound: f64,
) -> bool {
    let mut covered = false;
    for a in &s.sla {
        let e = &a.expr.value;
        let on_stage = a.stage.as_ref().is_none_or(|st| st.value == stage);
        let Threshold::Absolute(t) = e.threshold else {
            continue;
        };
        if !on_stage
            || e.metric != metric
            || e.aggregation != Some(Aggregation::Percentile(Percentile::P99))
            || !matches!(e.op, Op::Lt | Op::Le)
            || e.window != Window::Stage
            || e.label.is_some()
            || e.best
        {
            continue;
        }
        if t <= bound {
            covered = true;
        } else {
            ctx.error(
                a.expr.span,
                format!(
                    "`{}` is looser than MLPerf {} {}'s bound",
                    e.expr,
                    spec.benchmark.value,
                    spec.scenario.as_str()
                ),
                "conflicts with the `mlperf` preset",
                Some(format!(
                    "remove it (the preset asserts {}.p99 < {bound}ms) or make it at most {bound}ms",
                    e.metric.name()
                )),
            );
            covered = true;
        }
    }
    covered
}

/// Whether the preset's stage is one load, as an MLPerf Server run is: not a sweep or search
/// (a family of loads, each its own stage in the results), and not run once per server
/// configuration. Reports it when not.
fn one_load(ctx: &mut Ctx<'_>, s: &Scenario, stage: &Spanned<String>) -> bool {
    let profiled = s
        .stages
        .iter()
        .any(|st| st.name.value == stage.value && st.profile.is_some());
    let configs = s.server.as_ref().is_some_and(|sv| !sv.configs.is_empty());
    if !profiled && !configs {
        return true;
    }
    let what = if profiled {
        format!(
            "stage `{}` is a sweep or search, a family of loads",
            stage.value
        )
    } else {
        "the `server` block's configurations run every stage once each".to_string()
    };
    ctx.error(
        stage.span,
        format!("`mlperf` judges one run at one load, and {what}"),
        "not one load",
        Some(
            "point stage= at a stage of one load (e.g. arrival \"poisson\" rate=20 and \
             duration \"610s\"), without server configurations"
                .into(),
        ),
    );
    false
}
