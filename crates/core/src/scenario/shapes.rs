//! A sweep's `shapes "128/32" "1024/128"`: (input, output) token lengths its ladder runs
//! once each (docs/profiles.md, "Shapes"). Read here (each shape a string, at least one, each
//! once, each length 1 ..= 10,000,000) and checked against the rest of the scenario once it
//! is read ([`check_shapes`]: a synthetic data set, a generating API, within the target's
//! limits); the plan expands them (`plan::profile::expand_shapes`).

use super::ctx::{Ctx, NodeReader, Val};
use super::model::Shape;
use super::written::Spanned;

/// The sweep child that lists its (input, output) shapes.
pub(super) const SHAPES: &str = "shapes";

/// Most tokens a shape's input or its output may have.
pub const MAX_SHAPE_TOKENS: u64 = 10_000_000;

/// How a shape is written, for the help of every shape error.
const SHAPE_HELP: &str =
    "write each shape as \"INPUT/OUTPUT\" tokens, e.g. shapes \"128/32\" \"1024/128\" \"4096/256\"";

/// `shapes "128/32" "1024/128" …`: at least one, each once.
pub(super) fn read_shapes(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
) -> Option<Vec<Spanned<Shape>>> {
    let given = r.arg_count();
    let vals = r.args_from(ctx, 0);
    if given == 0 {
        ctx.error(
            ctx.name_span(r.node),
            "`shapes` lists no shape",
            "empty list",
            Some(SHAPE_HELP.into()),
        );
        return None;
    }
    let mut out: Vec<Spanned<Shape>> = Vec::with_capacity(vals.len());
    let mut ok = vals.len() == given;
    for v in &vals {
        let Some(shape) = read_shape(ctx, v) else {
            ok = false;
            continue;
        };
        if out.iter().any(|s| s.value == shape) {
            ctx.error(
                v.span,
                format!("shape `{}` is listed twice", shape.label()),
                "duplicate shape",
                Some("each shape runs the whole ladder once: list it once".into()),
            );
            ok = false;
            continue;
        }
        out.push(Spanned::new(shape, v.span));
    }
    ok.then_some(out)
}

/// One `"128/32"`: input and output tokens, each 1 ..= [`MAX_SHAPE_TOKENS`].
fn read_shape(ctx: &mut Ctx<'_>, v: &Val) -> Option<Shape> {
    let text = ctx.string(v, "shape")?;
    let parse = |t: &str| t.trim().parse::<u64>().ok();
    let Some((input, output)) = text
        .split_once('/')
        .and_then(|(i, o)| Some((parse(i)?, parse(o)?)))
    else {
        ctx.error(
            v.span,
            format!("`{text}` is not a shape"),
            "not INPUT/OUTPUT",
            Some(SHAPE_HELP.into()),
        );
        return None;
    };
    for (n, what) in [(input, "input"), (output, "output")] {
        if n == 0 || n > MAX_SHAPE_TOKENS {
            ctx.error(
                v.span,
                format!("shape `{text}` has {n} {what} tokens"),
                format!("{what} out of range"),
                Some(format!(
                    "a shape's input and output are each 1 to {MAX_SHAPE_TOKENS} tokens"
                )),
            );
            return None;
        }
    }
    Some(Shape {
        input_tokens: input as u32,
        output_tokens: output as u32,
    })
}

/// A sweep's `shapes` replace its data set's lengths: the data set must be synthetic (its
/// context, hooks and the rest kept), no class of the stage may bring its own, the API must
/// generate, and each shape must fit the simulator's KV cache and the declared
/// `infra { max-model-len }`: refused here, where the shape is written, rather than as one
/// HTTP 400 per request.
pub(crate) fn check_shapes(ctx: &mut Ctx<'_>, s: &super::model::Scenario) {
    use super::model::{DatasetKind, Endpoint};
    let max_model_len = s
        .infra
        .iter()
        .find(|(k, _)| k == "max_model_len")
        .and_then(|(_, v)| v.parse::<u64>().ok());
    let kv = match &s.target.endpoint {
        Endpoint::Sim(cfg) => Some(cfg.kv_capacity),
        _ => None,
    };
    for st in s.stages.iter().filter(|st| !st.shapes.is_empty()) {
        let first = st.shapes[0].span;
        let stage = &st.name.value;
        if !s.target.request.api.kind().answer().generates() {
            ctx.error(
                first,
                format!("stage `{stage}`: `shapes` set output lengths, and the target's API generates none"),
                "no output to shape",
                Some("sweep the load alone on a pooling API: drop `shapes`".into()),
            );
            continue;
        }
        let dataset = s.datasets.iter().find(|d| d.name.value == st.dataset.value);
        let extra = match dataset {
            Some(d) if matches!(d.kind, DatasetKind::Synthetic(_)) => d.context.extra_tokens(),
            Some(d) => {
                ctx.error(
                    first,
                    format!(
                        "stage `{stage}`: `shapes` set synthetic prompt lengths, and its data set `{}` is not synthetic",
                        d.name.value
                    ),
                    "needs a synthetic data set",
                    Some(
                        "name a data set with synthetic { input-tokens …; output-tokens … } in \
                         the stage: each shape replaces its lengths"
                            .into(),
                    ),
                );
                continue;
            }
            // An undeclared data set is reported where it is named.
            None => continue,
        };
        let own = st
            .groups
            .iter()
            .flat_map(|g| &g.labels)
            .find_map(|l| l.dataset.as_ref());
        if let Some(d) = own {
            ctx.error(
                d.span,
                format!(
                    "stage `{stage}` has `shapes`: its classes cannot bring their own data sets"
                ),
                "a shape sets every request's lengths",
                Some(
                    "drop the class's dataset, or move the class to a stage without shapes".into(),
                ),
            );
        }
        shapes_fit(ctx, &st.shapes, extra, [kv, max_model_len]);
    }
}

/// Each shape (its input, the data set's shared context `extra` and its output) fits the
/// simulator's KV cache and the declared `max-model-len`, each when known.
fn shapes_fit(
    ctx: &mut Ctx<'_>,
    shapes: &[Spanned<Shape>],
    extra: u32,
    [kv, max_model_len]: [Option<u64>; 2],
) {
    for shape in shapes {
        let v = shape.value;
        let need = u64::from(v.input_tokens) + u64::from(extra) + u64::from(v.output_tokens);
        let limits = [
            (
                kv,
                "the simulator's kv-capacity",
                "raise it: target \"sim\" { kv-capacity N }",
            ),
            (
                max_model_len,
                "the declared infra { max-model-len }",
                "the server refuses longer requests: raise infra { max-model-len } if it allows more",
            ),
        ];
        for (limit, what, fix) in limits {
            if let Some(limit) = limit.filter(|&l| need > l) {
                ctx.error(
                    shape.span,
                    format!(
                        "shape `{}` needs {need} tokens of context (input{} and output), more than {what} ({limit})",
                        v.label(),
                        if extra > 0 { ", shared context" } else { "" }
                    ),
                    "longer than the target allows",
                    Some(format!("{fix}, or shorten the shape")),
                );
            }
        }
    }
}
