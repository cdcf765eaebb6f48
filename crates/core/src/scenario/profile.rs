//! Load profiles in the scenario: `sweep { … }` (one sub-stage per load point) and
//! `search { … }` (the highest rate meeting the SLAs) inside a stage, and the `ramp` arrival's
//! and `ramp-concurrency` arrivals' properties. Parsed here so that `stage.rs` only dispatches.
//! Their types (`ProfileSpec`, `SweepSpec`) are the model's.

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, Val, one_arg};
use super::model::{ProfileSpec, Shape, StageLimit, SweepSpec};
use super::settings::{Entries, Setting, find, names, read_children, with_reader};
use super::written::Spanned;
use crate::arrival::{ArrivalSpec, SearchAxis, SearchSpec};
use crate::units::{Duration, Rate};

/// A sweep's lists of load points: it has exactly one.
const SWEEP: &[Setting<ReadSweep>] = &[
    Setting::many("rates", |ctx, r| {
        let vals = r.args_from(ctx, 0);
        let rates: Option<Vec<Rate>> = vals.iter().map(|v| ctx.rate(v, "rate")).collect();
        non_empty(ctx, r.node, rates).map(SweepSpec::Rates)
    }),
    Setting::many("rate", |ctx, r| rate_range(ctx, r).map(SweepSpec::Rates)),
    Setting::many("concurrency", |ctx, r| {
        let vals = r.args_from(ctx, 0);
        let levels: Option<Vec<u32>> = vals
            .iter()
            .map(|v| ctx.u32_at_least(v, "clients", 1))
            .collect();
        non_empty(ctx, r.node, levels).map(SweepSpec::Concurrency)
    }),
];
type ReadSweep = fn(&mut Ctx<'_>, &mut NodeReader<'_>) -> Option<SweepSpec>;

/// A search's bounds: it has one of them.
const SEARCH_BOUNDS: &[Setting<Entries<SearchRead>>] = &[
    Setting::many("rate", |ctx, r, st| {
        if st.first_bounds(ctx, r) {
            let from = required(ctx, r, "from").and_then(|v| ctx.rate(&v, "from"));
            let to = required(ctx, r, "to").and_then(|v| ctx.rate(&v, "to"));
            st.bounds = from.zip(to);
        }
    }),
    Setting::many("concurrency", |ctx, r, st| {
        if st.first_bounds(ctx, r) {
            st.spec.axis = SearchAxis::Concurrency;
            let from = required(ctx, r, "from")
                .and_then(|v| ctx.u32_at_least(&v, "from", 1))
                .map(|n| Rate(f64::from(n)));
            let to = required(ctx, r, "to")
                .and_then(|v| ctx.u32_at_least(&v, "to", 1))
                .map(|n| Rate(f64::from(n)));
            st.bounds = from.zip(to);
        }
    }),
];

/// A search's settings; given twice, the last one counts.
const SEARCH_SETTINGS: &[Setting<Entries<SearchRead>>] = &[
    Setting::many("tolerance", |ctx, r, st| {
        let t = one_arg(ctx, r, "a tolerance such as \"5%\"").and_then(|v| tolerance(ctx, &v));
        st.set(t, |spec, t| spec.tolerance = t);
    }),
    Setting::many("max-probes", |ctx, r, st| {
        let n = one_arg(ctx, r, "a count").and_then(|v| ctx.uint(&v, r.name(), 2, 1000));
        st.set(n, |spec, n| spec.max_probes = n as u32);
    }),
    Setting::many("max-time", |ctx, r, st| {
        let d = probe_time(ctx, r);
        st.set(d, |spec, d| spec.max_time = d);
    }),
    Setting::many("probe", |ctx, r, st| {
        let d = probe_time(ctx, r);
        st.set(d, |spec, d| spec.probe = d);
    }),
];

/// Most points a sweep may expand into.
const MAX_POINTS: u64 = 1000;

/// Parses `sweep { rates 10 20 40 }`, `sweep { rate from=10 to=200 steps=6
/// scale="geometric" }` or `sweep { concurrency 1 2 4 8 }`, each with optional `shapes
/// "128/32" "1024/128"` (into `shapes`).
pub(crate) fn sweep(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    shapes: &mut Vec<Spanned<Shape>>,
) -> Option<ProfileSpec> {
    let mut r = NodeReader::new(ctx, node);
    let mut out = None;
    let mut count = 0;
    let mut shapes_ok = true;
    let mut shapes_seen = false;
    for child in r.children() {
        if child.name().value() == super::shapes::SHAPES {
            if shapes_seen {
                ctx.error(
                    ctx.name_span(child),
                    "`sweep` has more than one `shapes`",
                    "second `shapes`",
                    Some("list every shape on one line: shapes \"128/32\" \"1024/128\"".into()),
                );
                shapes_ok = false;
                continue;
            }
            shapes_seen = true;
            match with_reader(ctx, child, super::shapes::read_shapes) {
                Some(list) => *shapes = list,
                None => shapes_ok = false,
            }
            continue;
        }
        let Some(list) = find(&[SWEEP], child.name().value()) else {
            let mut known = names(&[SWEEP]);
            known.push(super::shapes::SHAPES);
            ctx.unknown_node(child, "`sweep`", &known);
            continue;
        };
        count += 1;
        let spec = with_reader(ctx, child, list.read);
        out = out.or(spec);
    }
    r.finish(ctx);
    if count != 1 {
        ctx.error(
            ctx.name_span(node),
            "`sweep` needs exactly one list of load points",
            if count == 0 {
                "no load points"
            } else {
                "more than one list"
            },
            Some("write e.g. sweep { rates 10 20 40 } or sweep { concurrency 1 4 16 }".into()),
        );
        return None;
    }
    let out = out.filter(|_| shapes_ok)?;
    let points = match &out {
        SweepSpec::Rates(r) => r.len(),
        SweepSpec::Concurrency(c) => c.len(),
    };
    let total = points as u64 * shapes.len().max(1) as u64;
    if total > MAX_POINTS {
        ctx.error(
            ctx.name_span(node),
            format!("the sweep expands into {total} points, more than {MAX_POINTS}"),
            format!("{} shapes × {points} load points", shapes.len()),
            Some("list fewer shapes or load points, or split the sweep into stages".into()),
        );
        return None;
    }
    Some(ProfileSpec::Sweep(out))
}

fn non_empty<T>(ctx: &mut Ctx<'_>, node: &KdlNode, v: Option<Vec<T>>) -> Option<Vec<T>> {
    let v = v?;
    if v.is_empty() {
        ctx.error(
            ctx.name_span(node),
            format!("`{}` lists no load point", node.name().value()),
            "empty list",
            Some("give at least one value".into()),
        );
        return None;
    }
    Some(v)
}

/// `rate from=10 to=200 steps=6 scale="linear"|"geometric"`, expanded to its points.
fn rate_range(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<Vec<Rate>> {
    let from = required(ctx, r, "from").and_then(|v| ctx.rate(&v, "from"));
    let to = required(ctx, r, "to").and_then(|v| ctx.rate(&v, "to"));
    let steps = required(ctx, r, "steps").and_then(|v| ctx.uint(&v, "steps", 2, MAX_POINTS));
    let geometric = match r.prop(ctx, "scale") {
        None => Some(false),
        Some(v) => match ctx.string(&v, "scale")?.as_str() {
            "linear" => Some(false),
            "geometric" => Some(true),
            other => {
                ctx.error(
                    v.span,
                    format!("unknown scale `{other}`"),
                    "not a scale",
                    Some("use scale=\"linear\" or scale=\"geometric\"".into()),
                );
                None
            }
        },
    };
    let (from, to, steps, geometric) = (from?.0, to?.0, steps?, geometric?);
    Some(expand_range(from, to, steps, geometric))
}

/// `steps` points from `from` to `to` inclusive, evenly spaced or in a constant ratio.
pub fn expand_range(from: f64, to: f64, steps: u64, geometric: bool) -> Vec<Rate> {
    let n = steps.max(2);
    (0..n)
        .map(|i| {
            let f = i as f64 / (n - 1) as f64;
            Rate(if geometric {
                from * (to / from).powf(f)
            } else {
                from + (to - from) * f
            })
        })
        .collect()
}

fn required(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, key: &'static str) -> Option<Val> {
    let v = r.prop(ctx, key);
    if v.is_none() && r.node.entry(key).is_none() {
        ctx.error(
            ctx.name_span(r.node),
            format!("`{}` needs `{key}=`", r.name()),
            format!("missing {key}="),
            None,
        );
    }
    v
}

/// Parses `search { rate from=1 to=500; tolerance "5%"; max-probes 12; max-time "10m";
/// probe "20s" }`.
pub(crate) fn search(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<ProfileSpec> {
    let mut r = NodeReader::new(ctx, node);
    let mut st = SearchRead {
        spec: SearchSpec {
            from: Rate(0.0),
            to: Rate(0.0),
            axis: SearchAxis::Rate,
            tolerance: 0.05,
            max_probes: 12,
            max_time: Duration::from_secs_f64(600.0),
            probe: Duration::from_secs_f64(20.0),
        },
        bounds: None,
        bounds_seen: false,
        ok: true,
    };
    let tables = [SEARCH_BOUNDS, SEARCH_SETTINGS];
    read_children(ctx, r.children(), "`search`", &tables, &mut st);
    r.finish(ctx);
    let mut spec = st.spec;
    (spec.from, spec.to) = search_range(ctx, node, st.bounds)?;
    st.ok.then_some(ProfileSpec::Search(spec))
}

/// A search as its children are read; `ok` until one is invalid.
struct SearchRead {
    spec: SearchSpec,
    bounds: Option<(Rate, Rate)>,
    bounds_seen: bool,
    ok: bool,
}

impl SearchRead {
    /// Whether `r`'s node gives the search's first bounds; a second is reported.
    fn first_bounds(&mut self, ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> bool {
        if self.bounds_seen {
            ctx.error(
                ctx.name_span(r.node),
                "`search` has more than one set of bounds",
                "second `rate` or `concurrency`",
                Some("search either the rate or the concurrency, in two stages for both".into()),
            );
            self.ok = false;
            r.skip_all();
            return false;
        }
        self.bounds_seen = true;
        true
    }

    /// A setting's value into the spec, when valid.
    fn set<T>(&mut self, value: Option<T>, put: impl FnOnce(&mut SearchSpec, T)) {
        match value {
            Some(v) => put(&mut self.spec, v),
            None => self.ok = false,
        }
    }
}

/// `max-time` or `probe`: a positive duration.
fn probe_time(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<Duration> {
    one_arg(ctx, r, "a duration").and_then(|v| ctx.positive_duration(&v, r.name()))
}

/// The search's bounds, once its children are read: present (reported unless a bounds node
/// was there and already reported as invalid) and a non-empty range.
fn search_range(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    bounds: Option<(Rate, Rate)>,
) -> Option<(Rate, Rate)> {
    let Some((from, to)) = bounds else {
        if !node.children().is_some_and(|d| {
            d.nodes()
                .iter()
                .any(|c| find(&[SEARCH_BOUNDS], c.name().value()).is_some())
        }) {
            ctx.error(
                ctx.name_span(node),
                "`search` has no bounds",
                "missing `rate from=… to=…`",
                Some("add rate from=1 to=500 or concurrency from=1 to=256".into()),
            );
        }
        return None;
    };
    if from.0 >= to.0 {
        ctx.error(
            ctx.line_span(node),
            "`search` needs `from` below `to`",
            "empty search range",
            None,
        );
        return None;
    }
    Some((from, to))
}

/// `"5%"` or a fraction such as `0.05`; strictly between 0 and 1.
fn tolerance(ctx: &mut Ctx<'_>, v: &Val) -> Option<f64> {
    let t = match v.value.as_string() {
        Some(s) => s
            .trim()
            .strip_suffix('%')
            .and_then(|n| n.trim().parse::<f64>().ok())
            .map(|n| n / 100.0),
        None => ctx.number(v, "tolerance"),
    };
    match t {
        Some(t) if t > 0.0 && t < 1.0 => Some(t),
        _ => {
            ctx.error(
                v.span,
                "tolerance must be between 0% and 100%",
                "not a tolerance",
                Some("write e.g. tolerance \"5%\"".into()),
            );
            None
        }
    }
}

/// A `sweep` or `search` child of a stage; a stage has at most one.
pub(crate) fn parse_in_stage(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    current: &mut Option<ProfileSpec>,
    shapes: &mut Vec<Spanned<Shape>>,
) -> Option<ProfileSpec> {
    if current.is_some() {
        ctx.error(
            ctx.name_span(node),
            "a stage has at most one `sweep` or `search`",
            "second load profile",
            Some("split it into two stages".into()),
        );
        return current.take();
    }
    if node.name().value() == "sweep" {
        sweep(ctx, node, shapes)
    } else {
        search(ctx, node)
    }
}

/// A profiled stage may leave out its arrival (the sweep or search sets the load) and a search
/// its limit (each probe lasts `probe`).
pub(crate) fn fill_defaults(
    ctx: &Ctx<'_>,
    stage: &KdlNode,
    profile: Option<&ProfileSpec>,
    arrival: Option<Spanned<ArrivalSpec>>,
    limit: Option<StageLimit>,
) -> (Option<Spanned<ArrivalSpec>>, Option<StageLimit>) {
    let Some(profile) = profile else {
        return (arrival, limit);
    };
    let span = ctx.line_span(stage);
    let default = match profile {
        ProfileSpec::Sweep(SweepSpec::Rates(r)) => ArrivalSpec::Poisson { rate: r[0] },
        ProfileSpec::Sweep(SweepSpec::Concurrency(c)) => ArrivalSpec::Concurrency { clients: c[0] },
        ProfileSpec::Search(s) if s.axis == SearchAxis::Concurrency => ArrivalSpec::Concurrency {
            clients: s.from.0 as u32,
        },
        ProfileSpec::Search(s) => ArrivalSpec::Poisson { rate: s.from },
    };
    let limit = match profile {
        ProfileSpec::Search(s) => limit.or(Some(StageLimit::Duration(s.probe))),
        ProfileSpec::Sweep(_) => limit,
    };
    (arrival.or(Some(Spanned::new(default, span))), limit)
}

/// `arrival "ramp" from=10 to=200 over="5m" [shape="linear"|"steps"] [steps=5]`.
pub(crate) fn ramp(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<ArrivalSpec> {
    let from = required(ctx, r, "from").and_then(|v| ctx.rate(&v, "from"));
    let to = required(ctx, r, "to").and_then(|v| ctx.rate(&v, "to"));
    let over = required(ctx, r, "over").and_then(|v| ctx.positive_duration(&v, "over"));
    let shape = match r.prop(ctx, "shape") {
        None => Some("linear".to_string()),
        Some(v) => {
            let s = ctx.string(&v, "shape")?;
            if s != "linear" && s != "steps" {
                ctx.error(
                    v.span,
                    format!("unknown ramp shape `{s}`"),
                    "not a shape",
                    Some("use shape=\"linear\" or shape=\"steps\"".into()),
                );
                return None;
            }
            Some(s)
        }
    };
    let steps = match r.prop(ctx, "steps") {
        Some(v) => Some(ctx.uint(&v, "steps", 2, 10_000)? as u32),
        None => None,
    };
    let steps = match (shape?.as_str(), steps) {
        ("steps", None) => Some(5),
        ("linear", Some(_)) => {
            ctx.error(
                ctx.name_span(r.node),
                "`steps=` needs shape=\"steps\"",
                "a linear ramp has no steps",
                Some("add shape=\"steps\" or remove steps=".into()),
            );
            return None;
        }
        (_, s) => s,
    };
    Some(ArrivalSpec::Ramp {
        from: from?,
        to: to?,
        over: over?,
        steps,
    })
}

/// `arrival "ramp-concurrency" from=1 to=64 over="60s" [steps=N]`.
pub(crate) fn ramp_concurrency(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<ArrivalSpec> {
    let from = required(ctx, r, "from").and_then(|v| ctx.u32_at_least(&v, "from", 1));
    let to_val = required(ctx, r, "to");
    let to = to_val
        .as_ref()
        .and_then(|v| ctx.u32_at_least(v, "to", 1).map(|n| (n, v.span)));
    let over = required(ctx, r, "over").and_then(|v| ctx.positive_duration(&v, "over"));
    let steps = match r.prop(ctx, "steps") {
        Some(v) => Some(Some(ctx.uint(&v, "steps", 2, 10_000)? as u32)),
        None if r.node.entry("steps").is_some() => None,
        None => Some(None),
    };
    let (from, (to, to_span), over, steps) = (from?, to?, over?, steps?);
    if to <= from {
        ctx.error(
            to_span,
            "a concurrency ramp needs `to` above `from`",
            format!("{to} ≤ from={from}"),
            Some("for a fixed client count write arrival \"concurrency\" clients=N".into()),
        );
        return None;
    }
    Some(ArrivalSpec::RampConcurrency {
        from,
        to,
        over,
        steps,
    })
}

/// Curve assertions (`sla_max_rate > 20/s`) read a sweep's or search's points: each must be
/// on a stage with a `sweep` or `search` (or, scenario-level, in a scenario that has one),
/// with a fixed threshold, and cannot abort a run (the curve is known only at its end).
pub(crate) fn check_curve_assertions(ctx: &mut Ctx<'_>, s: &super::model::Scenario) {
    let profiled = |name: &str| {
        s.stages
            .iter()
            .any(|st| st.name.value == name && st.profile.is_some())
    };
    let any_profile = s.stages.iter().any(|st| st.profile.is_some());
    for a in &s.sla {
        let assertion = &a.expr.value;
        if assertion.metric.curve().is_none() {
            continue;
        }
        let metric = assertion.metric;
        let on_profile = match &a.stage {
            Some(st) => profiled(&st.value),
            None => any_profile,
        };
        if !on_profile {
            ctx.error(
                a.expr.span,
                format!("`{metric}` is a figure of a sweep's or search's curve"),
                match &a.stage {
                    Some(st) => format!("stage `{}` has no `sweep` or `search`", st.value),
                    None => "the scenario has no `sweep` or `search`".to_string(),
                },
                Some("assert it inside a stage with `sweep { rates … }` or `search { … }`".into()),
            );
        }
        if let crate::sla::Threshold::Baseline { .. } = assertion.threshold {
            ctx.error(
                a.expr.span,
                format!("`{metric}` takes a fixed threshold"),
                "not a baseline",
                Some(format!("write e.g. `{metric} > {}`", metric.def().example)),
            );
        }
        if a.abort_on_fail {
            ctx.error(
                a.expr.span,
                format!("`{metric}` cannot abort a run"),
                "the curve is known only when every point has run",
                Some("drop abort-on-fail".into()),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_inclusively() {
        let lin: Vec<f64> = expand_range(10.0, 50.0, 5, false)
            .iter()
            .map(|r| r.0)
            .collect();
        assert_eq!(lin, vec![10.0, 20.0, 30.0, 40.0, 50.0]);
        let geo: Vec<f64> = expand_range(1.0, 8.0, 4, true)
            .iter()
            .map(|r| r.0)
            .collect();
        for (g, want) in geo.iter().zip([1.0, 2.0, 4.0, 8.0]) {
            assert!((g - want).abs() < 1e-9, "{geo:?}");
        }
    }
}
