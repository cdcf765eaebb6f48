//! The `report { … }` node: templates, extra outputs, the baseline and the tolerances
//! `compare` allows.

use std::path::PathBuf;

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, one_arg};
use super::model::ReportSpec;
use super::settings::{Entries, Setting, read_children};

/// `tolerance "5%"` (every metric) or `tolerance "ttft.p95" "10%"` (one, or `"itl"` for all of
/// a metric's aggregations): what `compare` allows a metric to move by, recorded in results.
fn tolerance(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, rep: &mut ReportSpec) {
    let node = r.node;
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
}

/// The block's children.
const REPORT: &[Setting<Entries<ReportSpec>>] = &[
    Setting::once("template", |ctx, r, rep| rep.template = template(ctx, r)),
    Setting::once("requests-jsonl", |ctx, r, rep| {
        switch(ctx, r, |rep| &mut rep.requests_jsonl, rep);
    }),
    Setting::once("llm-d", |ctx, r, rep| {
        switch(ctx, r, |rep| &mut rep.llm_d, rep)
    }),
    Setting::once("parquet", |ctx, r, rep| {
        switch(ctx, r, |rep| &mut rep.parquet, rep)
    }),
    Setting::once("baseline", |ctx, r, rep| rep.baseline = path(ctx, r)),
    Setting::many("tolerance", tolerance),
];

/// An output's switch: `#true` or `#false` into `slot`.
fn switch(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    slot: fn(&mut ReportSpec) -> &mut bool,
    rep: &mut ReportSpec,
) {
    if let Some(b) = one_arg(ctx, r, "#true or #false").and_then(|v| ctx.boolean(&v, r.name())) {
        *slot(rep) = b;
    }
}

/// A template path, which must be a regular file where it exists (a FIFO or a directory
/// would hang or fail the run later); a baseline is a results file, which may come through a
/// pipe, so [`path`] alone.
fn template(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<PathBuf> {
    let arg = one_arg(ctx, r, "a path")?;
    let p = ctx.name_string(&arg, "template")?;
    ctx.regular_file(&p, arg.span, "`template`")
        .then(|| p.into())
}

/// A file's path.
fn path(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<PathBuf> {
    let path = one_arg(ctx, r, "a path").and_then(|v| ctx.name_string(&v, r.name()));
    path.map(Into::into)
}

pub(super) fn report(ctx: &mut Ctx<'_>, node: &KdlNode) -> ReportSpec {
    let mut r = NodeReader::new(ctx, node);
    let mut rep = ReportSpec::default();
    read_children(ctx, r.children(), "`report`", &[REPORT], &mut rep);
    r.finish(ctx);
    rep
}
