//! `stage "name" { … }` with its arrival and limit; its `sla` blocks are read by
//! `sla_block.rs`, the top-level `warmup` node by `warmup.rs`.

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, Val, one_arg};
use super::error::suggest;
use super::model::{AssertionSpec, ProfileSpec, StageLimit, StageSpec};
use super::settings::{Block, Setting, find, names, read_children, with_reader};
use super::sla_block::sla_block;
use super::written::Spanned;
use crate::arrival::ArrivalSpec;
use crate::protocol::Grouping;
use crate::units::{Duration, Rate};

/// Most rounds a stage may run.
pub(crate) const MAX_ROUNDS: u64 = crate::sla::MAX_ROUNDS;

/// A stage's children.
const STAGE: &[Setting<Block<Read>>] = &[
    Setting::once("dataset", |ctx, node, st| {
        st.dataset = with_reader(ctx, node, |ctx, r| {
            let v = one_arg(ctx, r, "a dataset name")?;
            ctx.name_string(&v, "dataset")
                .map(|s| Spanned::new(s, v.span))
        });
    }),
    Setting::once("arrival", |ctx, node, st| {
        st.arrival = Some(with_reader(ctx, node, parse_arrival));
    }),
    Setting::once("duration", |ctx, node, st| {
        st.limit(ctx, node, |ctx, v, what| {
            ctx.positive_duration(v, what).map(StageLimit::Duration)
        });
    }),
    Setting::once("requests", |ctx, node, st| {
        st.limit(ctx, node, |ctx, v, what| {
            ctx.uint(v, what, 1, u64::MAX).map(StageLimit::Requests)
        });
    }),
    Setting::once("drain-timeout", |ctx, node, st| {
        st.drain = with_reader(ctx, node, |ctx, r| {
            one_arg(ctx, r, "a duration").and_then(|v| ctx.duration(&v, r.name()))
        });
    }),
    Setting::once("rounds", |ctx, node, st| {
        st.rounds = with_reader(ctx, node, |ctx, r| {
            one_arg(ctx, r, "a number of rounds")
                .and_then(|v| ctx.uint(&v, r.name(), 1, MAX_ROUNDS))
                .map(|n| n as u32)
        });
    }),
    Setting::many("sla", |ctx, node, st| {
        let out = sla_block(ctx, node, st.name.as_ref());
        st.sla.extend(out.assertions);
    }),
    Setting::once("sweep", Read::profile),
    Setting::once("search", Read::profile),
    Setting::many(Grouping::Model.as_str(), |ctx, node, st| {
        st.split_label(ctx, node, Grouping::Model);
    }),
    Setting::many(Grouping::Class.as_str(), |ctx, node, st| {
        st.split_label(ctx, node, Grouping::Class);
    }),
    Setting::once("priority-inversion", |ctx, node, st| {
        st.split.priority_gate = super::labels::priority_gate(ctx, node);
    }),
];
/// The arrival kinds, each read from the `arrival` node's properties (the kind as written is
/// given for messages).
const ARRIVALS: &[Setting<ReadArrival>] = &[
    Setting::once("constant", |ctx, r, kind| {
        Some(ArrivalSpec::Constant {
            rate: fixed_rate(ctx, r, kind)?,
        })
    }),
    Setting::once("poisson", |ctx, r, kind| {
        Some(ArrivalSpec::Poisson {
            rate: fixed_rate(ctx, r, kind)?,
        })
    }),
    Setting::once("gamma", |ctx, r, kind| {
        let rate =
            need(ctx, r, kind, "rate", "rate=20 burstiness=0.5").and_then(|v| ctx.rate(&v, "rate"));
        let b = need(ctx, r, kind, "burstiness", "rate=20 burstiness=0.5")
            .and_then(|v| ctx.burstiness(&v));
        Some(ArrivalSpec::Gamma {
            rate: rate?,
            burstiness: b?,
        })
    }),
    Setting::once("concurrency", |ctx, r, kind| {
        let clients = need(ctx, r, kind, "clients", "clients=8")?;
        Some(ArrivalSpec::Concurrency {
            clients: ctx.u32_at_least(&clients, "clients", 1)?,
        })
    }),
    Setting::once("ramp", |ctx, r, _| super::profile::ramp(ctx, r)),
    Setting::once("ramp-concurrency", |ctx, r, _| {
        super::profile::ramp_concurrency(ctx, r)
    }),
    Setting::once("trace", |ctx, r, _| super::workload::trace_arrival(ctx, r)),
];
type ReadArrival = fn(&mut Ctx<'_>, &mut NodeReader<'_>, &str) -> Option<ArrivalSpec>;

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
    let mut read = Read {
        name,
        shown,
        ..Read::default()
    };
    let shown = read.shown.clone();
    read_children(ctx, r.children(), &shown, &[STAGE], &mut read);
    r.finish(ctx);
    let ramp_over = ramp_over(read.arrival.as_ref().and_then(|a| a.as_ref()));
    let profiled = required(ctx, node, &read.shown, ramp_over.is_some());
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
    let split = read.split;
    super::labels::check_gate(ctx, node, &split);
    let stage = match (&read.name, &read.dataset, arrival, limit) {
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
            shapes: read.shapes,
        }),
        _ => None,
    };
    let mut sla = read.sla;
    sla.extend(split.sla);
    let mut dataset: Vec<Spanned<String>> = read.dataset.into_iter().collect();
    dataset.extend(split.datasets);
    StageOut {
        name: read.name,
        stage,
        sla,
        dataset,
    }
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

/// What a stage's children say.
#[derive(Default)]
struct Read {
    /// The stage's name, when valid, and how messages name the stage.
    name: Option<Spanned<String>>,
    shown: String,
    dataset: Option<Spanned<String>>,
    /// `Some(None)`: an `arrival` was written but is invalid (its own error said why).
    arrival: Option<Option<Spanned<ArrivalSpec>>>,
    limit: Option<StageLimit>,
    limit_given: bool,
    until: Option<Spanned<StageLimit>>,
    drain: Option<Duration>,
    rounds: Option<u32>,
    profile: Option<ProfileSpec>,
    /// The sweep's `shapes`, when it has them.
    shapes: Vec<Spanned<super::model::Shape>>,
    sla: Vec<AssertionSpec>,
    /// The `model`, `class` and `priority-inversion` children.
    split: super::labels::Split,
}

impl Read {
    /// A `model` or `class` node, with a class's own `sla` blocks, read here where the
    /// stage's are.
    fn split_label(&mut self, ctx: &mut Ctx<'_>, node: &KdlNode, by: Grouping) {
        if let Some(on) = self.split.read(ctx, node, by) {
            let blocks = node.children().map(|c| c.nodes()).unwrap_or_default();
            for block in blocks.iter().filter(|n| n.name().value() == "sla") {
                let out = sla_block(ctx, block, self.name.as_ref()).assertions;
                self.split.own_sla(ctx, &on, out);
            }
        }
    }

    /// A `sweep` or `search`, read by its own parser (this reader reads nothing: it only
    /// reports an annotation on the node, which that parser reports again).
    fn profile(ctx: &mut Ctx<'_>, node: &KdlNode, st: &mut Read) {
        with_reader(ctx, node, |_, r| {
            r.skip_all();
            let _ = r.children();
        });
        st.profile = super::profile::parse_in_stage(ctx, node, &mut st.profile, &mut st.shapes);
    }

    /// `duration` or `requests` (one of them, its value read by `value`), with its
    /// `until-decided`.
    fn limit(
        &mut self,
        ctx: &mut Ctx<'_>,
        node: &KdlNode,
        value: fn(&mut Ctx<'_>, &Val, &str) -> Option<StageLimit>,
    ) {
        with_reader(ctx, node, |ctx, r| {
            if self.limit_given {
                ctx.error(
                    ctx.name_span(node),
                    format!("{} has both `duration` and `requests`", self.shown),
                    "second limit",
                    Some(
                        "a stage stops after a duration or after a number of requests: keep one"
                            .into(),
                    ),
                );
                r.skip_args(usize::MAX);
                return;
            }
            self.limit_given = true;
            self.limit = one_arg(ctx, r, "a limit").and_then(|v| value(ctx, &v, r.name()));
            self.until = super::until::parse(ctx, r, self.limit);
        });
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
    let Some(arrival) = find(&[ARRIVALS], &kind) else {
        ctx.error(
            kind_val.span,
            format!("unknown arrival `{kind}`"),
            "not an arrival kind",
            Some(suggest(&kind, &names(&[ARRIVALS]), "arrival")),
        );
        r.skip_all();
        return None;
    };
    let spec = (arrival.read)(ctx, r, &kind)?;
    Some(Spanned::new(spec, span))
}

/// Property `key` of an arrival of kind `kind`, reported when missing.
fn need(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    kind: &str,
    key: &'static str,
    example: &str,
) -> Option<Val> {
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
}

/// The `rate=` of a constant or Poisson arrival.
fn fixed_rate(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, kind: &str) -> Option<Rate> {
    let rate = need(ctx, r, kind, "rate", "rate=20")?;
    ctx.rate(&rate, "rate")
}
