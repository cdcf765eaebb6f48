//! `stage "name" { … }` with its arrival and limit; its `sla` blocks are read by
//! `sla_block.rs`, the top-level `warmup` node by `warmup.rs`.

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, Once, one_arg};
use super::error::suggest;
use super::model::{AssertionSpec, ProfileSpec, StageLimit, StageSpec};
use super::sla_block::sla_block;
use super::written::Spanned;
use crate::arrival::ArrivalSpec;
use crate::units::Duration;

/// Most rounds a stage may run.
pub(crate) const MAX_ROUNDS: u64 = crate::sla::MAX_ROUNDS;

const STAGE_CHILDREN: &[&str] = &[
    "dataset",
    "arrival",
    "duration",
    "requests",
    "drain-timeout",
    "rounds",
    "sla",
    "sweep",
    "search",
    "model",
    "class",
    "priority-inversion",
];
const ARRIVALS: &[&str] = &[
    "constant",
    "poisson",
    "gamma",
    "concurrency",
    "ramp",
    "ramp-concurrency",
    "trace",
];

/// What a `stage` node yields: its name even when the rest is invalid (so that references to it
/// are not reported too), the stage when valid, and its scoped assertions.
pub(crate) struct StageOut {
    pub name: Option<Spanned<String>>,
    pub stage: Option<StageSpec>,
    pub sla: Vec<AssertionSpec>,
    /// The data sets it names (its own, its classes'), for the reference check even when
    /// the stage is invalid.
    pub dataset: Vec<Spanned<String>>,
}

pub(crate) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> StageOut {
    let mut r = NodeReader::new(ctx, node);
    let name = stage_name(ctx, &mut r);
    let shown = name
        .as_ref()
        .map_or_else(|| "`stage`".to_string(), |n| format!("stage `{}`", n.value));
    let mut read = Read::default();
    let mut once = Once::default();
    let mut split = super::labels::Split::default();
    for child in r.children() {
        let cname = child.name().value();
        if !STAGE_CHILDREN.contains(&cname) {
            ctx.unknown_node(child, &shown, STAGE_CHILDREN);
            continue;
        }
        if split_child(ctx, child, name.as_ref(), &mut split, &mut once, &shown) {
            continue;
        }
        if cname == "sla" {
            read.sla
                .extend(sla_block(ctx, child, name.as_ref()).assertions);
            continue;
        }
        if once.first(ctx, child, &shown) {
            read.child(ctx, child, &shown);
        }
    }
    r.finish(ctx);
    let ramp_over = ramp_over(read.arrival.as_ref().and_then(|a| a.as_ref()));
    let profiled = required(ctx, node, &shown, ramp_over.is_some());
    if let Some(u) = &read.until {
        let written = read
            .arrival
            .as_ref()
            .and_then(|a| a.as_ref())
            .map(|a| &a.value);
        super::until::check_stage(ctx, u, written, profiled, read.rounds);
    }
    let limit = read.limit.or(ramp_over.map(StageLimit::Duration));
    let (arrival, limit) = super::profile::fill_defaults(
        ctx,
        node,
        read.profile.as_ref(),
        read.arrival.flatten(),
        limit,
    );
    super::labels::check_gate(ctx, node, &split);
    let stage = match (&name, &read.dataset, arrival, limit) {
        (Some(n), Some(dataset), Some(arrival), Some(limit)) => Some(StageSpec {
            name: n.clone(),
            dataset: dataset.clone(),
            arrival,
            limit,
            drain_timeout: read.drain,
            profile: read.profile,
            rounds: read.rounds,
            until_decided: read.until,
            groups: split.groups,
            priority_gate: split.priority_gate,
        }),
        _ => None,
    };
    let mut sla = read.sla;
    sla.extend(split.sla);
    let mut dataset: Vec<Spanned<String>> = read.dataset.into_iter().collect();
    dataset.extend(split.datasets);
    StageOut {
        name,
        stage,
        sla,
        dataset,
    }
}

/// A `model`, `class` or `priority-inversion` node, read into `split`; false for any other.
fn split_child(
    ctx: &mut Ctx<'_>,
    child: &KdlNode,
    stage: Option<&Spanned<String>>,
    split: &mut super::labels::Split,
    once: &mut Once,
    shown: &str,
) -> bool {
    let cname = child.name().value();
    if let Some(by) = crate::protocol::Grouping::from_name(cname) {
        // A class's `sla` blocks are read here, where the stage's are.
        if let Some(on) = split.read(ctx, child, by) {
            let blocks = child.children().map(|c| c.nodes()).unwrap_or_default();
            for block in blocks.iter().filter(|n| n.name().value() == "sla") {
                let out = sla_block(ctx, block, stage).assertions;
                split.own_sla(ctx, &on, out);
            }
        }
        return true;
    }
    if cname == "priority-inversion" {
        if once.first(ctx, child, shown) {
            split.priority_gate = super::labels::priority_gate(ctx, child);
        }
        return true;
    }
    false
}

/// The stage's name argument, reported when missing.
fn stage_name(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<Spanned<String>> {
    match r.arg(ctx, 0) {
        Some(v) => ctx
            .name_string(&v, "stage name")
            .map(|s| Spanned::new(s, v.span)),
        None => {
            if r.arg_count() == 0 {
                ctx.error(
                    ctx.name_span(r.node),
                    "`stage` needs a name",
                    "missing name",
                    Some("write stage \"steady\" { … }".into()),
                );
            }
            None
        }
    }
}

/// What a stage's children say, each read once.
#[derive(Default)]
struct Read {
    dataset: Option<Spanned<String>>,
    /// `Some(None)`: an `arrival` was written but is invalid (its own error said why).
    arrival: Option<Option<Spanned<ArrivalSpec>>>,
    limit: Option<StageLimit>,
    limit_given: bool,
    until: Option<Spanned<StageLimit>>,
    drain: Option<Duration>,
    rounds: Option<u32>,
    profile: Option<ProfileSpec>,
    sla: Vec<AssertionSpec>,
}

impl Read {
    fn child(&mut self, ctx: &mut Ctx<'_>, child: &KdlNode, shown: &str) {
        let cname = child.name().value();
        let mut cr = NodeReader::new(ctx, child);
        match cname {
            "dataset" => {
                self.dataset = one_arg(ctx, &mut cr, "a dataset name").and_then(|v| {
                    ctx.name_string(&v, "dataset")
                        .map(|s| Spanned::new(s, v.span))
                });
            }
            "arrival" => self.arrival = Some(parse_arrival(ctx, &mut cr)),
            "duration" | "requests" => self.limit(ctx, &mut cr, child, shown),
            "drain-timeout" => {
                self.drain =
                    one_arg(ctx, &mut cr, "a duration").and_then(|v| ctx.duration(&v, cname));
            }
            "rounds" => {
                self.rounds = one_arg(ctx, &mut cr, "a number of rounds")
                    .and_then(|v| ctx.uint(&v, cname, 1, MAX_ROUNDS))
                    .map(|n| n as u32);
            }
            "sweep" | "search" => {
                cr.skip_all();
                let _ = cr.children();
                self.profile = super::profile::parse_in_stage(ctx, child, &mut self.profile);
            }
            _ => {}
        }
        cr.finish(ctx);
    }

    /// `duration` or `requests` (one of them), with its `until-decided`.
    fn limit(&mut self, ctx: &mut Ctx<'_>, cr: &mut NodeReader<'_>, child: &KdlNode, shown: &str) {
        let cname = child.name().value();
        if self.limit_given {
            ctx.error(
                ctx.name_span(child),
                format!("{shown} has both `duration` and `requests`"),
                "second limit",
                Some(
                    "a stage stops after a duration or after a number of requests: keep one".into(),
                ),
            );
            cr.skip_args(usize::MAX);
            return;
        }
        self.limit_given = true;
        self.limit = one_arg(ctx, cr, "a limit").and_then(|v| {
            if cname == "duration" {
                ctx.positive_duration(&v, cname).map(StageLimit::Duration)
            } else {
                ctx.uint(&v, cname, 1, u64::MAX).map(StageLimit::Requests)
            }
        });
        self.until = super::until::parse(ctx, cr, self.limit);
    }
}

/// A ramp's `over`: its limit when it has no other.
fn ramp_over(arrival: Option<&Spanned<ArrivalSpec>>) -> Option<Duration> {
    match arrival.map(|a| &a.value) {
        Some(ArrivalSpec::Ramp { over, .. } | ArrivalSpec::RampConcurrency { over, .. }) => {
            Some(*over)
        }
        _ => None,
    }
}

/// Reports a missing dataset, arrival or limit; whether the stage is a sweep or search.
fn required(ctx: &mut Ctx<'_>, node: &KdlNode, shown: &str, ramp_limited: bool) -> bool {
    let has = |n: &str| {
        node.children()
            .is_some_and(|d| d.nodes().iter().any(|c| c.name().value() == n))
    };
    let head = ctx.name_span(node);
    if !has("dataset") {
        ctx.error(
            head,
            format!("{shown} has no dataset"),
            "missing `dataset`",
            Some("add dataset \"NAME\" naming a declared dataset".into()),
        );
    }
    let profiled = has("sweep") || has("search");
    if !has("arrival") && !profiled {
        ctx.error(
            head,
            format!("{shown} has no arrival"),
            "missing `arrival`",
            Some(
                "add e.g. arrival \"poisson\" rate=10 or arrival \"concurrency\" clients=8".into(),
            ),
        );
    }
    // An invalid ramp has its own error; its missing `over` is not also a missing limit.
    let ramp_written = node.children().is_some_and(|d| {
        d.nodes().iter().any(|c| {
            c.name().value() == "arrival"
                && c.entries()
                    .first()
                    .and_then(|e| e.value().as_string())
                    .is_some_and(|k| k == "ramp" || k == "ramp-concurrency")
        })
    });
    let limited = has("duration") || has("requests") || ramp_limited || ramp_written;
    if !limited && !has("search") {
        ctx.error(
            head,
            format!("{shown} has no limit"),
            "missing `duration` or `requests`",
            Some("add duration \"60s\" or requests 500".into()),
        );
    }
    profiled
}

fn parse_arrival(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<Spanned<ArrivalSpec>> {
    let span = ctx.line_span(r.node);
    let kind_val = one_arg(ctx, r, "an arrival kind such as \"poisson\"")?;
    let kind = ctx.string(&kind_val, "arrival")?;
    let need = |ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, key: &'static str, example: &str| {
        let v = r.prop(ctx, key);
        if v.is_none() && r.node.entry(key).is_none() {
            ctx.error(
                ctx.name_span(r.node),
                format!("arrival \"{kind}\" needs `{key}=`"),
                format!("missing {key}="),
                Some(format!("write arrival \"{kind}\" {example}")),
            );
        }
        v
    };
    let spec = match kind.as_str() {
        "constant" | "poisson" => {
            let rate = need(ctx, r, "rate", "rate=20")?;
            let rate = ctx.rate(&rate, "rate")?;
            if kind == "constant" {
                ArrivalSpec::Constant { rate }
            } else {
                ArrivalSpec::Poisson { rate }
            }
        }
        "gamma" => {
            let rate =
                need(ctx, r, "rate", "rate=20 burstiness=0.5").and_then(|v| ctx.rate(&v, "rate"));
            let b = need(ctx, r, "burstiness", "rate=20 burstiness=0.5")
                .and_then(|v| ctx.burstiness(&v));
            ArrivalSpec::Gamma {
                rate: rate?,
                burstiness: b?,
            }
        }
        "concurrency" => {
            let clients = need(ctx, r, "clients", "clients=8")?;
            ArrivalSpec::Concurrency {
                clients: ctx.u32_at_least(&clients, "clients", 1)?,
            }
        }
        "ramp" => super::profile::ramp(ctx, r)?,
        "ramp-concurrency" => super::profile::ramp_concurrency(ctx, r)?,
        "trace" => super::workload::trace_arrival(ctx, r)?,
        other => {
            ctx.error(
                kind_val.span,
                format!("unknown arrival `{other}`"),
                "not an arrival kind",
                Some(suggest(other, ARRIVALS, "arrival")),
            );
            r.skip_all();
            return None;
        }
    };
    Some(Spanned::new(spec, span))
}
