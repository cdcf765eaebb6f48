//! Parsing of file-backed data sets (`sharegpt`, `jsonl`, `agentic`, `trace`), of generated
//! agentic tasks (`agentic { … }`) and of the dataset modifiers (`shared-prefix`,
//! `retrieved`, `hooks`). Files are only named here: the plan compiler opens them.

use std::path::PathBuf;

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader};
use super::error::suggest;
use super::lengths::{Length, Written, missing};
use super::model::DatasetKind;
use super::settings::{Setting, find, names, read_children};
use super::workload_model::{AgenticSpec, JsonlSpec, ShareGptSpec, TraceSpec};
use super::written::Spanned;
use crate::dataset::{
    AgenticShape, ContextSpec, LengthDist, MAX_DEPTH, MAX_GENERATED_TASKS, MAX_GENERATED_TURNS,
    Retrieved, SHAPE_LIMITS, ShareGptFilters, SharedPrefix, TraceFormat,
};
use crate::hub::HfFile;

/// Source kinds this module parses.
pub(super) const FILE_KINDS: &[Setting<ReadSource>] = &[
    Setting::once("sharegpt", sharegpt_source),
    Setting::once("jsonl", jsonl_source),
    Setting::once("agentic", agentic_source),
    Setting::once("trace", trace_source),
];
type ReadSource = fn(&mut Ctx<'_>, &mut NodeReader<'_>) -> Option<DatasetKind>;

/// Dataset children that modify prompts rather than provide them; each reads into the data
/// set's context or hooks, false after an error.
pub(super) const MODIFIERS: &[Setting<ReadModifier>] = &[
    Setting::once("shared-prefix", shared_prefix),
    Setting::once("retrieved", retrieved),
    Setting::once("hooks", |ctx, r, _, hooks| {
        match path_arg(ctx, r, "hooks/mutate.rhai") {
            Some(p) => {
                *hooks = Some(p);
                true
            }
            None => false,
        }
    }),
];
type ReadModifier =
    fn(&mut Ctx<'_>, &mut NodeReader<'_>, &mut ContextSpec, &mut Option<Spanned<PathBuf>>) -> bool;

/// The path argument of a source or `hooks` node.
fn path_arg(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, example: &str) -> Option<Spanned<PathBuf>> {
    let what = r.name();
    let Some(v) = r.arg(ctx, 0) else {
        if r.arg_count() == 0 {
            ctx.error(
                ctx.name_span(r.node),
                format!("`{what}` needs a file path"),
                "missing path",
                Some(format!("write {what} \"{example}\"")),
            );
        }
        return None;
    };
    let s = ctx.name_string(&v, what)?;
    if !ctx.regular_file(&s, v.span, &format!("`{what}`")) {
        return None;
    }
    if HfFile::is_uri(&s) {
        // Checked now so `validate` catches a typo; resolved through the cache at compile time.
        let problem = match HfFile::parse(&s) {
            Err(e) => Some(e.to_string()),
            Ok(_) if what == "hooks" => Some("hooks are read from a local file".into()),
            Ok(_) => None,
        };
        if let Some(message) = problem {
            ctx.error(
                v.span,
                message,
                "not a Hub data set file",
                Some(
                    "write hf://datasets/OWNER/NAME/PATH or hf://datasets/OWNER/NAME@REVISION/PATH"
                        .into(),
                ),
            );
            return None;
        }
    }
    Some(Spanned::new(PathBuf::from(s), v.span))
}

/// An optional `key=N` property (≥ `min`), `default` when absent; `None` after an error.
fn u32_prop(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    key: &'static str,
    min: u32,
    default: u32,
) -> Option<u32> {
    match r.prop(ctx, key) {
        Some(v) => ctx.u32_at_least(&v, key, min),
        None if r.node.entry(key).is_some() => None,
        None => Some(default),
    }
}

fn opt_u64_prop(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    key: &'static str,
) -> Option<Option<u64>> {
    match r.prop(ctx, key) {
        Some(v) => ctx.uint(&v, key, 1, u64::MAX).map(Some),
        None if r.node.entry(key).is_some() => None,
        None => Some(None),
    }
}

/// `sharegpt "f.json" count=… min-turns=… …`, `jsonl "f.jsonl" count=… max-tokens=…`,
/// `agentic "f.jsonl" count=… max-tokens=…` or
/// `trace "f.jsonl" format="mooncake"|"azure" block-tokens=…`; any other name is an error
/// naming the kinds there are.
pub(crate) fn source(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<DatasetKind> {
    let mut r = NodeReader::new(ctx, node);
    let kind = match find(&[FILE_KINDS], r.name()) {
        Some(kind) => (kind.read)(ctx, &mut r),
        None => {
            let other = r.name();
            ctx.error(
                ctx.name_span(node),
                format!("unknown data set source `{other}`"),
                "not a file-backed data set kind",
                Some(suggest(other, &names(&[FILE_KINDS]), "data set kind")),
            );
            r.skip_all();
            None
        }
    };
    r.finish(ctx);
    kind
}

fn sharegpt_source(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<DatasetKind> {
    let path = path_arg(ctx, r, "ShareGPT_V3_unfiltered_cleaned_split.json");
    let d = ShareGptFilters::default();
    let count = opt_u64_prop(ctx, r, "count");
    let min_turns = u32_prop(ctx, r, "min-turns", 2, d.min_turns);
    let min_prompt = u32_prop(ctx, r, "min-prompt-tokens", 0, d.min_prompt_tokens);
    let min_output = u32_prop(ctx, r, "min-output-tokens", 0, d.min_output_tokens);
    let max_prompt = u32_prop(ctx, r, "max-prompt-tokens", 1, d.max_prompt_tokens);
    let max_total = u32_prop(ctx, r, "max-total-tokens", 1, d.max_total_tokens);
    let output = match r.prop(ctx, "output-tokens") {
        Some(v) => ctx.u32_at_least(&v, "output-tokens", 1).map(Some),
        None if r.node.entry("output-tokens").is_some() => None,
        None => Some(None),
    };
    Some(DatasetKind::ShareGpt(ShareGptSpec {
        path: path?,
        count: count?.unwrap_or(1000),
        filters: ShareGptFilters {
            min_turns: min_turns?,
            min_prompt_tokens: min_prompt?,
            min_output_tokens: min_output?,
            max_prompt_tokens: max_prompt?,
            max_total_tokens: max_total?,
        },
        output_tokens: output?,
    }))
}

fn jsonl_source(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<DatasetKind> {
    let path = path_arg(ctx, r, "prompts.jsonl");
    let count = opt_u64_prop(ctx, r, "count");
    let max_tokens = u32_prop(ctx, r, "max-tokens", 1, 256);
    Some(DatasetKind::Jsonl(JsonlSpec {
        path: path?,
        count: count?,
        max_tokens: max_tokens?,
    }))
}

/// `agentic "tasks.jsonl" …`, or with a block, generated tasks of the block's shape.
fn agentic_source(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<DatasetKind> {
    if r.node.children().is_some() {
        return agentic_shape(ctx, r).map(DatasetKind::AgenticSynthetic);
    }
    let path = path_arg(ctx, r, "tasks.jsonl");
    let count = opt_u64_prop(ctx, r, "count");
    let max_tokens = u32_prop(ctx, r, "max-tokens", 1, 256);
    Some(DatasetKind::Agentic(AgenticSpec {
        path: path?,
        count: count?,
        max_tokens: max_tokens?,
    }))
}

/// The lengths of generated agentic tasks.
const AGENTIC_LENGTHS: &[Setting<Length<AgenticLengths>>] = &[
    Setting::once("turns", Length::optional(|l| &mut l.turns)),
    Setting::once("fan-out", Length::optional(|l| &mut l.fan_out)),
    Setting::once("tool-ms", Length::optional(|l| &mut l.tool_ms)),
    Setting::once("input-tokens", Length::required(|l| &mut l.input)),
    Setting::once("output-tokens", Length::required(|l| &mut l.output)),
];

#[derive(Default)]
struct AgenticLengths {
    turns: Written,
    fan_out: Written,
    tool_ms: Written,
    input: Written,
    output: Written,
}

/// `agentic tasks=N fork-chance=P depth=D { turns …; fan-out …; tool-ms …; input-tokens …;
/// output-tokens … }`: generated agentic tasks (the lengths required, the rest defaulted).
fn agentic_shape(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<AgenticShape> {
    let node = r.node;
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
    let mut l = AgenticLengths::default();
    read_children(ctx, r.children(), "`agentic`", &[AGENTIC_LENGTHS], &mut l);
    for name in missing(AGENTIC_LENGTHS, &mut l) {
        ctx.error(
            ctx.name_span(node),
            format!("`agentic` without `{name}`"),
            format!("missing `{name}`"),
            Some(format!("add e.g. {name} \"uniform\" min=32 max=256")),
        );
    }
    // In the order of `SHAPE_LIMITS`.
    let written =
        [&l.turns, &l.fan_out, &l.tool_ms, &l.input, &l.output].map(|w| w.clone().flatten());
    let within = within_limits(ctx, &written);
    let or_fixed = |written: Written, value: u32| match written {
        None => Some(LengthDist::Fixed { value }),
        Some(d) => d.map(|d| d.value),
    };
    let shape = AgenticShape {
        tasks: tasks?,
        turns: or_fixed(l.turns, 4)?,
        fork_chance: fork_chance?,
        fan_out: or_fixed(l.fan_out, 2)?,
        depth: depth?,
        tool_ms: or_fixed(l.tool_ms, 500)?,
        input_tokens: l.input.flatten()?.value,
        output_tokens: l.output.flatten()?.value,
    };
    (within && plan_sized(ctx, node, &shape)).then_some(shape)
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

fn trace_source(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<DatasetKind> {
    let path = path_arg(ctx, r, "mooncake_trace.jsonl");
    let format = match r.prop(ctx, "format") {
        Some(v) => match ctx.string(&v, "format").as_deref() {
            Some("mooncake") => Some(TraceFormat::Mooncake),
            Some("azure") => Some(TraceFormat::Azure),
            Some(other) => {
                ctx.error(
                    v.span,
                    format!("unknown trace format `{other}`"),
                    "not a trace format",
                    Some("use format=\"mooncake\" or format=\"azure\"".into()),
                );
                None
            }
            None => None,
        },
        None if r.node.entry("format").is_some() => None,
        // A CSV file is the Azure trace; anything else Mooncake's JSONL.
        None => Some(match &path {
            Some(p) if p.value.extension().is_some_and(|e| e == "csv") => TraceFormat::Azure,
            _ => TraceFormat::Mooncake,
        }),
    };
    let block = u32_prop(ctx, r, "block-tokens", 1, 512);
    Some(DatasetKind::Trace(TraceSpec {
        path: path?,
        format: format?,
        block_tokens: block?,
    }))
}

/// A modifier child of a dataset, applied to `context` / `hooks`. False after an error.
pub(crate) fn modifier(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    context: &mut ContextSpec,
    hooks: &mut Option<Spanned<PathBuf>>,
) -> bool {
    let mut r = NodeReader::new(ctx, node);
    let ok = match find(&[MODIFIERS], r.name()) {
        Some(modifier) => (modifier.read)(ctx, &mut r, context, hooks),
        None => {
            let other = r.name();
            ctx.error(
                ctx.name_span(node),
                format!("unknown data set modifier `{other}`"),
                "not a data set modifier",
                Some(suggest(other, &names(&[MODIFIERS]), "modifier")),
            );
            r.skip_all();
            false
        }
    };
    r.finish(ctx);
    ok
}

/// `shared-prefix groups=N tokens=T`.
fn shared_prefix(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    context: &mut ContextSpec,
    _: &mut Option<Spanned<PathBuf>>,
) -> bool {
    let groups = u32_prop(ctx, r, "groups", 1, 1);
    let tokens = u32_prop(ctx, r, "tokens", 1, 0);
    match (groups, tokens) {
        (Some(_), Some(0)) => {
            ctx.error(
                ctx.name_span(r.node),
                "`shared-prefix` needs `tokens=`",
                "missing tokens=",
                Some("write shared-prefix groups=4 tokens=512".into()),
            );
            false
        }
        (Some(groups), Some(tokens)) => {
            context.shared_prefix = Some(SharedPrefix { groups, tokens });
            true
        }
        _ => false,
    }
}

/// `retrieved chunks=N tokens=T corpus=C`.
fn retrieved(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    context: &mut ContextSpec,
    _: &mut Option<Spanned<PathBuf>>,
) -> bool {
    let chunks = u32_prop(ctx, r, "chunks", 1, 5);
    let tokens = u32_prop(ctx, r, "tokens", 1, 128);
    let corpus = u32_prop(ctx, r, "corpus", 1, 1000);
    match (chunks, tokens, corpus) {
        (Some(chunks), Some(tokens), Some(corpus)) => {
            context.retrieved = Some(Retrieved {
                chunks,
                tokens,
                corpus,
            });
            true
        }
        _ => false,
    }
}

/// `arrival "trace" speedup=2.0 start="10m" window="5m"`: all optional.
pub(crate) fn trace_arrival(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
) -> Option<crate::arrival::ArrivalSpec> {
    let speedup = match r.prop(ctx, "speedup") {
        Some(v) => ctx.number_min(&v, "speedup", 0.0, true),
        None if r.node.entry("speedup").is_some() => None,
        None => Some(1.0),
    };
    let start = match r.prop(ctx, "start") {
        Some(v) => ctx.duration(&v, "start"),
        None if r.node.entry("start").is_some() => None,
        None => Some(crate::units::Duration::ZERO),
    };
    let window = match r.prop(ctx, "window") {
        Some(v) => ctx.positive_duration(&v, "window").map(Some),
        None if r.node.entry("window").is_some() => None,
        None => Some(None),
    };
    Some(crate::arrival::ArrivalSpec::Trace {
        speedup: speedup?,
        start: start?,
        window: window?,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kdl::KdlDocument;
    use miette::NamedSource;

    use super::*;
    use crate::scenario::error::{Problem, Snippets};

    /// What `parse` reports for the first node of `text`.
    fn problems(text: &str, parse: impl FnOnce(&mut Ctx<'_>, &KdlNode)) -> Vec<Problem> {
        let doc = KdlDocument::parse_v2(text).unwrap();
        let src = NamedSource::new("t.kdl", Snippets(Arc::from(text)));
        let mut ctx = Ctx::new(text, src);
        parse(&mut ctx, &doc.nodes()[0]);
        ctx.problems
    }

    #[test]
    fn an_unknown_source_kind_is_an_error_not_a_trace() {
        let text = "jsnl \"p.jsonl\" count=3";
        let found = problems(text, |ctx, node| assert!(source(ctx, node).is_none()));
        assert_eq!(found.len(), 1, "one problem, not one per property");
        let p = &found[0];
        assert_eq!(p.message, "unknown data set source `jsnl`");
        assert_eq!(p.help.as_deref(), Some("did you mean `jsonl`?"));
        assert_eq!(p.span, Some((0, 4).into()), "points at the name");
        let text = "zebra \"x\"";
        let found = problems(text, |ctx, node| assert!(source(ctx, node).is_none()));
        let help = found[0].help.as_deref().unwrap();
        assert_eq!(
            help,
            "expected one of: `sharegpt`, `jsonl`, `agentic`, `trace`"
        );
    }

    #[test]
    fn an_unknown_modifier_is_an_error_not_hooks() {
        let text = "hook \"m.rhai\"";
        let (mut context, mut hooks) = (ContextSpec::default(), None);
        let found = problems(text, |ctx, node| {
            assert!(!modifier(ctx, node, &mut context, &mut hooks));
        });
        assert!(hooks.is_none());
        assert_eq!(found[0].message, "unknown data set modifier `hook`");
        assert_eq!(found[0].help.as_deref(), Some("did you mean `hooks`?"));
    }
}
