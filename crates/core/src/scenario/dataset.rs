//! `dataset "name" { synthetic { input-tokens …; output-tokens … } }` and the length
//! distribution forms (fixed, choice, uniform, normal, lognormal).

use kdl::{KdlNode, KdlValue};

use super::ctx::{Ctx, NodeReader, Once, Val};
use super::error::suggest;
use super::model::{Dataset, DatasetKind, SyntheticSpec};
use super::workload::{self, FILE_KINDS, MODIFIERS};
use super::written::Spanned;
use crate::dataset::{
    AgenticShape, ContextSpec, LengthDist, MAX_DEPTH, MAX_GENERATED_TASKS, MAX_GENERATED_TURNS,
    SHAPE_LIMITS,
};

const KINDS: &[&str] = &[
    "synthetic",
    "sharegpt",
    "jsonl",
    "agentic",
    "trace",
    "shared-prefix",
    "retrieved",
    "hooks",
    "session",
    "images",
];
const DISTS: &[&str] = &["uniform", "normal", "lognormal"];

/// The dataset's name (even when its body is invalid, so that references to it are not
/// reported too) and the dataset when it is valid. `generates`: the target's API generates
/// output (else a synthetic data set needs no `output-tokens`).
pub(crate) fn parse(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    generates: bool,
) -> (Option<Spanned<String>>, Option<Dataset>) {
    let mut r = NodeReader::new(ctx, node);
    let name = dataset_name(ctx, &mut r);
    let mut kind = None;
    let mut saw_source = false;
    let mut context = ContextSpec::default();
    let mut hooks = None;
    let mut session = None;
    let mut images = None;
    let mut modifiers_ok = true;
    let mut once = Once::default();
    for child in r.children() {
        if !KINDS.contains(&child.name().value()) {
            ctx.unknown_node(child, "`dataset`", KINDS);
            continue;
        }
        if child.name().value() == "session" {
            if once.first(ctx, child, "`dataset`") {
                session = super::session::parse(ctx, child);
                modifiers_ok &= session.is_some();
            }
            continue;
        }
        if child.name().value() == "images" {
            if once.first(ctx, child, "`dataset`") {
                images = super::images::parse(ctx, child);
                modifiers_ok &= images.is_some();
            }
            continue;
        }
        if MODIFIERS.contains(&child.name().value()) {
            if once.first(ctx, child, "`dataset`") {
                modifiers_ok &= workload::modifier(ctx, child, &mut context, &mut hooks);
            }
            continue;
        }
        if saw_source {
            ctx.error(
                ctx.name_span(child),
                "a dataset has exactly one source",
                "second source",
                Some("declare another dataset for it".into()),
            );
            continue;
        }
        saw_source = true;
        kind = if child.name().value() == "agentic" && child.children().is_some() {
            agentic_shape(ctx, child).map(DatasetKind::AgenticSynthetic)
        } else if FILE_KINDS.contains(&child.name().value()) {
            workload::source(ctx, child)
        } else {
            synthetic(ctx, child, generates).map(DatasetKind::Synthetic)
        };
    }
    if !saw_source {
        ctx.error(
            ctx.name_span(node),
            "dataset without a source",
            "needs a source block",
            Some("add e.g. synthetic { input-tokens 128; output-tokens 64 }".into()),
        );
    }
    r.finish(ctx);
    let dataset = match (&name, kind) {
        (Some(name), Some(kind)) if modifiers_ok => Some(Dataset {
            name: name.clone(),
            kind,
            context,
            hooks,
            session,
            images,
        }),
        _ => None,
    };
    (name, dataset)
}

/// The dataset's name argument, reported when missing.
fn dataset_name(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<Spanned<String>> {
    match r.arg(ctx, 0) {
        Some(v) => ctx
            .name_string(&v, "dataset name")
            .map(|s| Spanned::new(s, v.span)),
        None => {
            if r.arg_count() == 0 {
                ctx.error(
                    ctx.name_span(r.node),
                    "`dataset` needs a name",
                    "missing name",
                    Some("write dataset \"short\" { synthetic { … } }".into()),
                );
            }
            None
        }
    }
}

fn synthetic(ctx: &mut Ctx<'_>, node: &KdlNode, generates: bool) -> Option<SyntheticSpec> {
    let mut r = NodeReader::new(ctx, node);
    let mut input = None;
    let mut output = None;
    let mut once = Once::default();
    let mut ok = true;
    for child in r.children() {
        let slot = match child.name().value() {
            "input-tokens" => &mut input,
            "output-tokens" => &mut output,
            _ => {
                ctx.unknown_node(child, "`synthetic`", &["input-tokens", "output-tokens"]);
                continue;
            }
        };
        if !once.first(ctx, child, "`synthetic`") {
            continue;
        }
        match length_dist(ctx, child) {
            Some(d) => *slot = Some(d),
            None => ok = false,
        }
    }
    if !generates && output.is_none() && !once_saw(&r, "output-tokens") {
        // A pooling API generates nothing: no length to ask for.
        output = Some(Spanned::new(
            LengthDist::Fixed { value: 1 },
            ctx.name_span(node),
        ));
    }
    for (slot, name) in [(&input, "input-tokens"), (&output, "output-tokens")] {
        if slot.is_none() && !once_saw(&r, name) {
            ctx.error(
                ctx.name_span(node),
                format!("`synthetic` without `{name}`"),
                format!("missing `{name}`"),
                Some(format!(
                    "add e.g. {name} 128 or {name} \"uniform\" min=32 max=256"
                )),
            );
            ok = false;
        }
    }
    r.finish(ctx);
    if !ok {
        return None;
    }
    Some(SyntheticSpec {
        input_tokens: input?,
        output_tokens: output?,
    })
}

/// `agentic tasks=N fork-chance=P depth=D { turns …; fan-out …; tool-ms …; input-tokens …;
/// output-tokens … }`: generated agentic tasks (the lengths required, the rest defaulted).
fn agentic_shape(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<AgenticShape> {
    // The children are the limited distributions, in the order of their limits.
    let children = SHAPE_LIMITS.map(|(name, _, _)| name);
    let mut r = NodeReader::new(ctx, node);
    let tasks = match r.prop(ctx, "tasks") {
        Some(v) => ctx
            .uint(&v, "tasks", 1, u64::from(MAX_GENERATED_TASKS))
            .map(|n| n as u32),
        None => (node.entry("tasks").is_none()).then_some(100),
    };
    let fork_chance = match r.prop(ctx, "fork-chance") {
        Some(v) => ctx.number_min(&v, "fork-chance", 0.0, false).and_then(|p| {
            (p <= 1.0).then_some(p).or_else(|| {
                ctx.error(v.span, "`fork-chance` is a probability", "above 1", None);
                None
            })
        }),
        None => (node.entry("fork-chance").is_none()).then_some(0.3),
    };
    let depth = match r.prop(ctx, "depth") {
        Some(v) => ctx.uint(&v, "depth", 0, MAX_DEPTH as u64).map(|n| n as u32),
        None => (node.entry("depth").is_none()).then_some(1),
    };
    let mut dists: [Option<Spanned<LengthDist>>; 5] = Default::default();
    let mut once = Once::default();
    let mut ok = true;
    for child in r.children() {
        let Some(i) = children.iter().position(|n| *n == child.name().value()) else {
            ctx.unknown_node(child, "`agentic`", &children);
            continue;
        };
        if once.first(ctx, child, "`agentic`") {
            dists[i] = length_dist(ctx, child);
            ok &= dists[i].is_some();
        }
    }
    for name in ["input-tokens", "output-tokens"] {
        if !once_saw(&r, name) {
            ctx.error(
                ctx.name_span(node),
                format!("`agentic` without `{name}`"),
                format!("missing `{name}`"),
                Some(format!("add e.g. {name} \"uniform\" min=32 max=256")),
            );
            ok = false;
        }
    }
    r.finish(ctx);
    ok &= within_limits(ctx, &dists);
    let [turns, fan_out, tool_ms, input, output] = dists.map(|d| d.map(|d| d.value));
    if !ok {
        return None;
    }
    let shape = AgenticShape {
        tasks: tasks?,
        turns: turns.unwrap_or(LengthDist::Fixed { value: 4 }),
        fork_chance: fork_chance?,
        fan_out: fan_out.unwrap_or(LengthDist::Fixed { value: 2 }),
        depth: depth?,
        tool_ms: tool_ms.unwrap_or(LengthDist::Fixed { value: 500 }),
        input_tokens: input?,
        output_tokens: output?,
    };
    plan_sized(ctx, node, &shape).then_some(shape)
}

/// Whether every distribution of an `agentic` shape stays within its limit, as `tasks` and
/// `depth` do: one that can draw more is refused on its line, never clamped without a word.
/// `dists` are in the order of [`SHAPE_LIMITS`].
fn within_limits(ctx: &mut Ctx<'_>, dists: &[Option<Spanned<LengthDist>>; 5]) -> bool {
    let mut ok = true;
    for (dist, (name, limit, what)) in dists.iter().zip(SHAPE_LIMITS) {
        let Some(d) = dist else { continue };
        let most = d.value.bounds().1;
        if most > limit {
            ctx.error(
                d.span,
                format!("`{name}` can draw {most}, more than the {limit} {what}"),
                format!("at most {limit}"),
                Some(format!(
                    "write {name} {limit} or less (for a distribution, its largest value or \
                     `max=` at most {limit})"
                )),
            );
            ok = false;
        }
    }
    ok
}

/// Whether the turns `shape` can generate, at their most, fit in a plan
/// ([`MAX_GENERATED_TURNS`]); refused on the `agentic` line with the number when not.
fn plan_sized(ctx: &mut Ctx<'_>, node: &KdlNode, shape: &AgenticShape) -> bool {
    let most = shape.max_turns();
    if most <= MAX_GENERATED_TURNS {
        return true;
    }
    ctx.error(
        ctx.name_span(node),
        format!(
            "`agentic` can generate {most} turns ({} tasks × up to {} sessions × up to {} \
             turns), more than the {MAX_GENERATED_TURNS} a plan may hold",
            shape.tasks,
            shape.max_sessions(),
            shape.turns.bounds().1,
        ),
        "too many turns at its widest",
        Some(
            "lower `tasks`, `turns`, `fan-out` or `depth` (every task's turns are planned \
             ahead, each at its most)"
                .into(),
        ),
    );
    false
}

fn once_saw(r: &NodeReader<'_>, name: &str) -> bool {
    r.node
        .children()
        .is_some_and(|d| d.nodes().iter().any(|n| n.name().value() == name))
}

/// `N` (fixed), `N M …` (choice) or `"kind" key=value…`.
pub(crate) fn length_dist(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<Spanned<LengthDist>> {
    let mut r = NodeReader::new(ctx, node);
    let what = r.name();
    let span = ctx.line_span(node);
    let first = r.arg(ctx, 0);
    let dist = match first {
        None => {
            if r.arg_count() == 0 {
                ctx.error(
                    ctx.name_span(node),
                    format!("`{what}` needs a length"),
                    "missing length",
                    Some(format!(
                        "write {what} 128, {what} 64 128 256 or {what} \"uniform\" min=32 max=256"
                    )),
                );
            }
            None
        }
        Some(Val {
            value: KdlValue::String(kind),
            span: kind_span,
            ..
        }) => named_dist(ctx, &mut r, &kind, kind_span),
        Some(v) => {
            let mut values = vec![ctx.u32_at_least(&v, what, 1)];
            for v in r.args_from(ctx, 1) {
                values.push(ctx.u32_at_least(&v, what, 1));
            }
            let values: Option<Vec<u32>> = values.into_iter().collect();
            // Repeats are kept: `64 64 128` weights 64 twice as much.
            values.map(|v| match v[..] {
                [value] => LengthDist::Fixed { value },
                _ => LengthDist::Choice { values: v },
            })
        }
    };
    r.finish(ctx);
    dist.map(|d| Spanned::new(d, span))
}

fn named_dist(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    kind: &str,
    kind_span: miette::SourceSpan,
) -> Option<LengthDist> {
    let dist = match kind {
        "uniform" => {
            let min = need(ctx, r, kind, "min").and_then(|v| ctx.u32_at_least(&v, "min", 1));
            let max = need(ctx, r, kind, "max").and_then(|v| ctx.u32_at_least(&v, "max", 1));
            LengthDist::Uniform {
                min: min?,
                max: max?,
            }
        }
        "normal" | "lognormal" => bell_dist(ctx, r, kind)?,
        other => {
            ctx.error(
                kind_span,
                format!("unknown length distribution `{other}`"),
                "not a distribution",
                Some(format!(
                    "{}; or write a number (fixed) or several numbers (choice)",
                    suggest(other, DISTS, "distribution")
                )),
            );
            r.skip_all();
            return None;
        }
    };
    bounds_in_order(ctx, r, &dist).then_some(dist)
}

/// Property `key` of a `kind` distribution, reported when it is missing.
fn need(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, kind: &str, key: &'static str) -> Option<Val> {
    let v = r.prop(ctx, key);
    if v.is_none() && !has_prop(r, key) {
        let what = r.name();
        ctx.error(
            ctx.name_span(r.node),
            format!("`{what} \"{kind}\"` needs `{key}=`"),
            format!("missing {key}="),
            Some(format!("see docs/scenario.md: {}", dist_form(kind))),
        );
    }
    v
}

/// A normal (`mean`, `stddev`) or lognormal (`median`, `sigma`) distribution, clipped to
/// `min` (1 unless given) and `max`.
fn bell_dist(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, kind: &str) -> Option<LengthDist> {
    let (center_key, spread_key) = if kind == "normal" {
        ("mean", "stddev")
    } else {
        ("median", "sigma")
    };
    let center =
        need(ctx, r, kind, center_key).and_then(|v| ctx.number_min(&v, center_key, 1.0, false));
    let spread =
        need(ctx, r, kind, spread_key).and_then(|v| ctx.number_min(&v, spread_key, 0.0, false));
    let min = match r.prop(ctx, "min") {
        Some(v) => ctx.u32_at_least(&v, "min", 1),
        None if has_prop(r, "min") => None,
        None => Some(1),
    };
    let max = need(ctx, r, kind, "max").and_then(|v| ctx.u32_at_least(&v, "max", 1));
    let (center, spread, min, max) = (center?, spread?, min?, max?);
    Some(if kind == "normal" {
        LengthDist::Normal {
            mean: center,
            stddev: spread,
            min,
            max,
        }
    } else {
        LengthDist::LogNormal {
            median: center,
            sigma: spread,
            min,
            max,
        }
    })
}

/// Whether `dist`'s `min` is at most its `max`, reported on `max=` when not.
fn bounds_in_order(ctx: &mut Ctx<'_>, r: &NodeReader<'_>, dist: &LengthDist) -> bool {
    let (min, max) = match *dist {
        LengthDist::Uniform { min, max }
        | LengthDist::Normal { min, max, .. }
        | LengthDist::LogNormal { min, max, .. } => (min, max),
        _ => (1, 1),
    };
    if min > max {
        let span = r
            .node
            .entry("max")
            .map_or_else(|| ctx.name_span(r.node), |e| ctx.trim(e.span()));
        ctx.error(
            span,
            format!("`{}`: min is greater than max", r.name()),
            format!("max={max} is less than min={min}"),
            Some("min ≤ max; swap them?".into()),
        );
        return false;
    }
    true
}

fn has_prop(r: &NodeReader<'_>, key: &str) -> bool {
    r.node.entry(key).is_some()
}

fn dist_form(kind: &str) -> &'static str {
    match kind {
        "uniform" => "\"uniform\" min=32 max=256",
        "normal" => "\"normal\" mean=128 stddev=32 min=1 max=512",
        _ => "\"lognormal\" median=300 sigma=0.6 min=16 max=2048",
    }
}
