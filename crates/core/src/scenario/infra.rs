//! `infra { … }`: what the scenario declares about the infrastructure it runs on, for what the
//! server does not say itself (its GPUs, replicas, driver). Kept in results.json's
//! `provenance.infra` beside what the server and telemetry said, which win where both speak
//! (`results::infra`).

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, one_arg};
use super::settings::{Entries, Setting, read_children, with_reader};

/// Declared facts, by their results.json name, in file order.
pub type Declared = Vec<(String, String)>;

/// The most facts a block declares, and the longest name and value.
const MAX_FACTS: usize = 64;
const MAX_NAME: usize = 64;
const MAX_VALUE: usize = 256;

const SETTINGS: &[Setting<Entries<Declared>>] = &[
    Setting::once("engine", |ctx, r, d| text(ctx, r, d, "engine")),
    Setting::once("engine-version", |ctx, r, d| {
        text(ctx, r, d, "engine_version")
    }),
    Setting::once("max-model-len", |ctx, r, d| {
        count(ctx, r, d, "max_model_len")
    }),
    Setting::once("gpu-model", |ctx, r, d| text(ctx, r, d, "gpu_model")),
    Setting::once("gpu-count", |ctx, r, d| count(ctx, r, d, "gpu_count")),
    Setting::once("gpu-driver", |ctx, r, d| text(ctx, r, d, "gpu_driver")),
    Setting::once("replicas", |ctx, r, d| count(ctx, r, d, "replicas")),
    Setting::many("fact", fact),
];

pub(super) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> Declared {
    let mut declared = Declared::new();
    with_reader(ctx, node, |ctx, r| {
        let children = r.children();
        read_children(ctx, children, "`infra`", &[SETTINGS], &mut declared);
    });
    declared
}

/// A value written as text (`gpu-model "H100 SXM 80GB"`).
fn text(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, d: &mut Declared, name: &str) {
    let Some(v) = one_arg(ctx, r, "a value like \"H100\"") else {
        return;
    };
    let value = match v.value.as_integer() {
        Some(i) => Some(i.to_string()),
        None => ctx.string(&v, r.name()),
    };
    if let Some(value) = value.and_then(|s| bounded(ctx, &v, s)) {
        push(ctx, r, d, name.to_string(), value);
    }
}

/// A whole number of at least 1 (`gpu-count 8`).
fn count(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, d: &mut Declared, name: &str) {
    if let Some(n) =
        one_arg(ctx, r, "a whole number").and_then(|v| ctx.uint(&v, r.name(), 1, 1 << 40))
    {
        push(ctx, r, d, name.to_string(), n.to_string());
    }
}

/// `fact "NAME" "VALUE"`: any other fact, by a name of letters, digits, `_`, `-` and `.`.
fn fact(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, d: &mut Declared) {
    let (Some(n), Some(v)) = (r.arg(ctx, 0), r.arg(ctx, 1)) else {
        ctx.error(
            ctx.name_span(r.node),
            "`fact` takes a name and a value",
            "missing name or value",
            Some("write e.g. fact \"tensor-parallel\" \"8\"".into()),
        );
        return;
    };
    let Some(name) = ctx.string(&n, "fact") else {
        return;
    };
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !ok {
        ctx.error(
            n.span,
            "a fact's name is 1 to 64 letters, digits, `_`, `-` or `.`",
            "not a fact name",
            Some("write e.g. fact \"tensor-parallel\" \"8\"".into()),
        );
        return;
    }
    let value = match v.value.as_integer() {
        Some(i) => Some(i.to_string()),
        None => ctx.string(&v, "fact"),
    };
    if let Some(value) = value.and_then(|s| bounded(ctx, &v, s)) {
        push(ctx, r, d, name.replace('-', "_"), value);
    }
}

/// `s` when it is short enough to be a fact, else an error at `v`. Secrets are masked: a
/// fact ends up in every report.
fn bounded(ctx: &mut Ctx<'_>, v: &super::ctx::Val, s: String) -> Option<String> {
    if s.trim().is_empty() || s.chars().count() > MAX_VALUE {
        ctx.error(
            v.span,
            "a fact's value is 1 to 256 characters",
            "empty or too long",
            None,
        );
        return None;
    }
    Some(crate::redact::secrets(&s).into_owned())
}

fn push(ctx: &mut Ctx<'_>, r: &NodeReader<'_>, d: &mut Declared, name: String, value: String) {
    if d.iter().any(|(n, _)| *n == name) {
        ctx.error(
            ctx.name_span(r.node),
            format!("the fact `{name}` is declared twice"),
            "second declaration",
            Some("keep one".into()),
        );
    } else if d.len() >= MAX_FACTS {
        ctx.error(
            ctx.name_span(r.node),
            "an `infra` block declares at most 64 facts",
            "too many facts",
            None,
        );
    } else {
        d.push((name, value));
    }
}
