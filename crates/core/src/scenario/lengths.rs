//! Token-length distributions as a data set writes them (`input-tokens 128`, `64 128 256`,
//! `"uniform" min=32 max=256`, `"normal" …`, `"lognormal" …`), and the blocks of lengths that
//! hold them (`synthetic { … }`, a generated `agentic { … }`).

use kdl::{KdlNode, KdlValue};

use super::ctx::{Ctx, NodeReader, Val};
use super::error::suggest;
use super::settings::{ReadChild, Setting, find, names};
use super::written::Spanned;
use crate::dataset::LengthDist;

/// The length distributions named by a string; their forms for the help on a missing
/// property.
const DISTS: &[Setting<Dist>] = &[
    Setting::once(
        "uniform",
        Dist {
            read: |ctx, r, kind| {
                let min = need(ctx, r, kind, "min").and_then(|v| ctx.u32_at_least(&v, "min", 1));
                let max = need(ctx, r, kind, "max").and_then(|v| ctx.u32_at_least(&v, "max", 1));
                Some(LengthDist::Uniform {
                    min: min?,
                    max: max?,
                })
            },
            form: "\"uniform\" min=32 max=256",
        },
    ),
    Setting::once(
        "normal",
        Dist {
            read: |ctx, r, kind| {
                let (mean, stddev, min, max) = bell_dist(ctx, r, kind, ("mean", "stddev"))?;
                Some(LengthDist::Normal {
                    mean,
                    stddev,
                    min,
                    max,
                })
            },
            form: "\"normal\" mean=128 stddev=32 min=1 max=512",
        },
    ),
    Setting::once(
        "lognormal",
        Dist {
            read: |ctx, r, kind| {
                let (median, sigma, min, max) = bell_dist(ctx, r, kind, ("median", "sigma"))?;
                Some(LengthDist::LogNormal {
                    median,
                    sigma,
                    min,
                    max,
                })
            },
            form: "\"lognormal\" median=300 sigma=0.6 min=16 max=2048",
        },
    ),
];

/// A named length distribution: how its properties are read (the name given for messages),
/// and its form as written.
struct Dist {
    read: fn(&mut Ctx<'_>, &mut NodeReader<'_>, &str) -> Option<LengthDist>,
    form: &'static str,
}

/// A length child's value: `None` when it is not written, `Some(None)` when it is invalid.
pub(super) type Written = Option<Option<Spanned<LengthDist>>>;

/// A length child: where its value goes in the block's lengths `S`, and whether it must be
/// written.
pub(super) struct Length<S> {
    pub slot: fn(&mut S) -> &mut Written,
    pub required: bool,
}

impl<S> Length<S> {
    pub const fn required(slot: fn(&mut S) -> &mut Written) -> Self {
        Length {
            slot,
            required: true,
        }
    }

    pub const fn optional(slot: fn(&mut S) -> &mut Written) -> Self {
        Length {
            slot,
            required: false,
        }
    }
}

/// The required lengths of `table` that `lengths` lacks: not written at all.
pub(super) fn missing<S>(table: &[Setting<Length<S>>], lengths: &mut S) -> Vec<&'static str> {
    table
        .iter()
        .filter(|l| l.read.required && (l.read.slot)(lengths).is_none())
        .map(|l| l.name)
        .collect()
}

/// Each length child is read once, into its slot.
impl<S> ReadChild<S> for Length<S> {
    fn read_child(&self, ctx: &mut Ctx<'_>, node: &KdlNode, lengths: &mut S) {
        *(self.slot)(lengths) = Some(length_dist(ctx, node));
    }
}

/// `N` (fixed), `N M …` (choice) or `"kind" key=value…`.
fn length_dist(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<Spanned<LengthDist>> {
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
    let Some(named) = find(&[DISTS], kind) else {
        ctx.error(
            kind_span,
            format!("unknown length distribution `{kind}`"),
            "not a distribution",
            Some(format!(
                "{}; or write a number (fixed) or several numbers (choice)",
                suggest(kind, &names(&[DISTS]), "distribution")
            )),
        );
        r.skip_all();
        return None;
    };
    let dist = (named.read.read)(ctx, r, kind)?;
    bounds_in_order(ctx, r, &dist).then_some(dist)
}

/// Property `key` of a `kind` distribution, reported when it is missing.
fn need(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, kind: &str, key: &'static str) -> Option<Val> {
    let v = r.prop(ctx, key);
    if v.is_none() && !has_prop(r, key) {
        let what = r.name();
        let form = find(&[DISTS], kind).map_or("", |d| d.read.form);
        ctx.error(
            ctx.name_span(r.node),
            format!("`{what} \"{kind}\"` needs `{key}=`"),
            format!("missing {key}="),
            Some(format!("see docs/scenario.md: {form}")),
        );
    }
    v
}

/// A normal (`mean`, `stddev`) or lognormal (`median`, `sigma`) distribution's center and
/// spread (under `keys`), clipped to `min` (1 unless given) and `max`.
fn bell_dist(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    kind: &str,
    (center_key, spread_key): (&'static str, &'static str),
) -> Option<(f64, f64, u32, u32)> {
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
    Some((center?, spread?, min?, max?))
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
