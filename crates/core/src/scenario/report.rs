//! The `report { … }` node: templates, extra outputs, the baseline and the tolerances
//! `compare` allows.

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, Once, one_arg};
use super::model::ReportSpec;

/// `tolerance "5%"` (every metric) or `tolerance "ttft.p95" "10%"` (one, or `"itl"` for all of
/// a metric's aggregations): what `compare` allows a metric to move by, recorded in results.
fn tolerance(ctx: &mut Ctx<'_>, node: &KdlNode, rep: &mut ReportSpec) {
    let mut r = NodeReader::new(ctx, node);
    let args = r.args_from(ctx, 0);
    let percent = |ctx: &mut Ctx<'_>, v: &super::ctx::Val| -> Option<f64> {
        let text = ctx.name_string(v, "tolerance")?;
        match text.parse::<crate::units::Percent>() {
            Ok(p) => Some(p.0),
            Err(e) => {
                ctx.error(
                    v.span,
                    "invalid tolerance",
                    e.to_string(),
                    Some("write e.g. tolerance \"10%\" or tolerance \"ttft.p95\" \"10%\"".into()),
                );
                None
            }
        }
    };
    match args.as_slice() {
        [v] => {
            if let Some(p) = percent(ctx, v) {
                rep.tolerance = Some(p);
            }
        }
        [m, v] => {
            let metric = ctx.name_string(m, "tolerance");
            let known = metric.as_deref().is_some_and(|m| {
                crate::sla::Metric::from_name(m.split('.').next().unwrap_or(m)).is_some()
            });
            if let Some(name) = metric.filter(|_| !known) {
                ctx.error(
                    m.span,
                    format!("unknown metric `{name}`"),
                    "not a metric compare watches",
                    Some("e.g. \"ttft.p95\", \"itl\", \"error_rate\"".into()),
                );
            }
            if let (Some(name), Some(p)) = (
                known
                    .then_some(m)
                    .and_then(|m| ctx.name_string(m, "tolerance")),
                percent(ctx, v),
            ) {
                rep.tolerances.insert(name, p);
            }
        }
        _ => ctx.error(
            ctx.name_span(node),
            "`tolerance` takes a percentage, or a metric and a percentage",
            "wrong number of values",
            Some("write tolerance \"10%\" or tolerance \"ttft.p95\" \"10%\"".into()),
        ),
    }
    r.finish(ctx);
}

pub(super) fn report(ctx: &mut Ctx<'_>, node: &KdlNode) -> ReportSpec {
    let mut r = NodeReader::new(ctx, node);
    let mut rep = ReportSpec::default();
    let known = [
        "template",
        "requests-jsonl",
        "llm-d",
        "parquet",
        "baseline",
        "tolerance",
    ];
    let mut once = Once::default();
    for child in r.children() {
        let cname = child.name().value();
        if !known.contains(&cname) {
            ctx.unknown_node(child, "`report`", &known);
            continue;
        }
        if cname == "tolerance" {
            tolerance(ctx, child, &mut rep);
            continue;
        }
        if !once.first(ctx, child, "`report`") {
            continue;
        }
        let mut cr = NodeReader::new(ctx, child);
        match cname {
            "requests-jsonl" | "llm-d" | "parquet" => {
                if let Some(b) =
                    one_arg(ctx, &mut cr, "#true or #false").and_then(|v| ctx.boolean(&v, cname))
                {
                    match cname {
                        "requests-jsonl" => rep.requests_jsonl = b,
                        "llm-d" => rep.llm_d = b,
                        _ => rep.parquet = b,
                    }
                }
            }
            _ => {
                let arg = one_arg(ctx, &mut cr, "a path");
                let path = arg.as_ref().and_then(|v| ctx.name_string(v, cname));
                // A baseline is a results file, which may come through a pipe.
                let path = match (&arg, path) {
                    (Some(v), Some(p)) if cname == "template" => {
                        ctx.regular_file(&p, v.span, "`template`").then_some(p)
                    }
                    (_, p) => p,
                };
                if cname == "template" {
                    rep.template = path.map(Into::into);
                } else {
                    rep.baseline = path.map(Into::into);
                }
            }
        }
        cr.finish(ctx);
    }
    r.finish(ctx);
    rep
}
