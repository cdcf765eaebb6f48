//! `stage "name" { … }` with its arrival and limit, `warmup`, and `sla { assert … }` blocks
//! (each expression parsed by the `sla` grammar and kept typed with its span).

use kdl::{KdlNode, KdlValue};
use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, Once, one_arg};
use super::error::suggest;
use super::model::{AssertionSpec, ProfileSpec, SlaPolicySpec, StageLimit, StageSpec, Warmup};
use super::written::Spanned;
use crate::arrival::ArrivalSpec;
use crate::sla::{Assertion, InconclusiveAs, Untrusted};
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

/// `warmup requests=N | duration="30s" | until="stable" … [dataset="…"] [clients=N]`.
pub(crate) fn warmup(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<Warmup> {
    let mut r = NodeReader::new(ctx, node);
    let requests = r.prop(ctx, "requests");
    let duration = r.prop(ctx, "duration");
    let dataset = r.prop(ctx, "dataset").and_then(|v| {
        ctx.name_string(&v, "dataset")
            .map(|s| Spanned::new(s, v.span))
    });
    let clients = match r.prop(ctx, "clients") {
        Some(v) => ctx.u32_at_least(&v, "clients", 1),
        None if node.entry("clients").is_some() => None,
        None => Some(4),
    };
    let until = super::warmup::until(ctx, &mut r, node);
    let limit = match (requests, duration) {
        (req, dur) if until.given => super::warmup::limit(ctx, &until, req, dur),
        (Some(_), Some(d)) => {
            ctx.error(
                d.span,
                "`warmup` has both `requests` and `duration`",
                "second limit",
                Some("keep one of requests= and duration=".into()),
            );
            None
        }
        (Some(v), None) => ctx
            .uint(&v, "requests", 1, u64::MAX)
            .map(StageLimit::Requests),
        (None, Some(v)) => ctx
            .positive_duration(&v, "duration")
            .map(StageLimit::Duration),
        (None, None) => {
            if node.entry("requests").is_none() && node.entry("duration").is_none() {
                ctx.error(
                    ctx.name_span(node),
                    "`warmup` has no limit",
                    "missing requests= or duration=",
                    Some("write warmup requests=10 or warmup duration=\"30s\"".into()),
                );
            }
            None
        }
    };
    r.finish(ctx);
    Some(Warmup {
        limit: limit?,
        dataset,
        clients: clients?,
        until: if until.given { Some(until.spec?) } else { None },
    })
}

/// What an `sla` block says: its assertions and, at the top level only, how they are decided.
#[derive(Default)]
pub(crate) struct SlaOut {
    pub assertions: Vec<AssertionSpec>,
    pub policy: SlaPolicySpec,
}

const SLA_CHILDREN: &[&str] = &[
    "assert",
    "window",
    "confidence",
    "inconclusive",
    "untrusted",
    "abort-min-samples",
    "abort-grace",
];

/// `sla { assert "…" [stage="…"] [abort-on-fail=#true] [every-point=#true]; confidence "95%"; inconclusive
/// "fail"; untrusted "judge" }`; `scope` is the enclosing stage (whose block takes assertions
/// only: how they are decided is the scenario's).
pub(crate) fn sla_block(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    scope: Option<&Spanned<String>>,
) -> SlaOut {
    let mut r = NodeReader::new(ctx, node);
    let mut out = Vec::new();
    let mut policy = SlaPolicySpec::default();
    let mut window = None;
    for child in r.children() {
        let cname = child.name().value();
        if !SLA_CHILDREN.contains(&cname) {
            ctx.unknown_node(child, "`sla`", SLA_CHILDREN);
            continue;
        }
        if cname == "window" {
            if window.is_some() {
                ctx.error(
                    ctx.name_span(child),
                    "`window` given twice in one `sla` block",
                    "second window",
                    Some("keep one `window`".into()),
                );
                continue;
            }
            window = sla_window(ctx, child);
            continue;
        }
        if cname != "assert" {
            if scope.is_some() {
                ctx.error(
                    ctx.name_span(child),
                    format!("`{cname}` inside a stage's `sla`"),
                    "settings apply to every assertion of the scenario",
                    Some(format!("move `{cname}` to the top-level sla block")),
                );
                continue;
            }
            sla_setting(ctx, child, &mut policy);
            continue;
        }
        out.extend(assert_node(ctx, child, scope));
    }
    r.finish(ctx);
    if let Some(w) = window {
        for a in &mut out {
            windowed(ctx, a, w);
        }
    }
    SlaOut {
        assertions: out,
        policy,
    }
}

/// `assert "…" [stage="…"] [abort-on-fail=#true] [every-point=#true]`, or `None` where it is
/// wrong (the diagnostics said why).
fn assert_node(
    ctx: &mut Ctx<'_>,
    child: &KdlNode,
    scope: Option<&Spanned<String>>,
) -> Option<AssertionSpec> {
    let mut ar = NodeReader::new(ctx, child);
    let expr = one_arg(ctx, &mut ar, "an assertion like \"ttft.p95 < 200ms\"").and_then(|v| {
        let s = ctx.string(&v, "assert")?;
        if s.trim().is_empty() {
            ctx.error(
                v.span,
                "empty assertion",
                "expected e.g. \"ttft.p95 < 200ms\"",
                None,
            );
            return None;
        }
        let span = content_span(ctx, child, v.span, &s);
        parse_assertion(ctx, &s, span).map(|a| Spanned::new(a, span))
    });
    let stage = match (ar.prop(ctx, "stage"), scope) {
        (Some(v), Some(_)) => {
            ctx.error(
                v.span,
                "`stage=` inside a stage",
                "this assertion already belongs to the enclosing stage",
                Some("remove stage=, or move the assertion to the top-level sla block".into()),
            );
            None
        }
        (Some(v), None) => ctx
            .name_string(&v, "stage")
            .map(|s| Spanned::new(s, v.span)),
        (None, scope) => scope.cloned(),
    };
    let abort = match ar.prop(ctx, "abort-on-fail") {
        Some(v) => ctx.boolean(&v, "abort-on-fail").unwrap_or(false),
        None => false,
    };
    let every_point = match ar.prop(ctx, "every-point") {
        Some(v) => ctx.boolean(&v, "every-point").unwrap_or(false),
        None => false,
    };
    ar.finish(ctx);
    Some(AssertionSpec {
        expr: expr?,
        stage,
        abort_on_fail: abort,
        every_point,
    })
}

/// `window "steady"|"stage"`: the window every assertion of the block is judged on, unless
/// it names its own (`ttft.p99[window=stage]`).
fn sla_window(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<crate::sla::Window> {
    let mut r = NodeReader::new(ctx, node);
    let w = one_arg(ctx, &mut r, "a window: \"steady\" or \"stage\"").and_then(|v| {
        let s = ctx.string(&v, "window")?;
        let w = crate::sla::Window::from_name(&s);
        if w.is_none() {
            ctx.error(
                v.span,
                format!("unknown window `{s}`"),
                "expected \"steady\" or \"stage\"",
                Some(
                    "window \"steady\": the steady-state window; \"stage\": the whole stage".into(),
                ),
            );
        }
        w
    });
    r.finish(ctx);
    w
}

/// Puts assertion `a` on window `w`, refusing a metric that has none.
fn windowed(ctx: &mut Ctx<'_>, a: &mut AssertionSpec, w: crate::sla::Window) {
    let span = a.expr.span;
    let assertion = a.expr.value.clone();
    if w == crate::sla::Window::Steady
        && assertion.window == crate::sla::Window::Stage
        && !assertion.expr.contains("window=")
        && let Err(e) = crate::sla::check_windowed(assertion.metric, (0, 1))
    {
        ctx.error(
            span,
            e.message,
            "in an sla block with window \"steady\"",
            Some(e.hint),
        );
        return;
    }
    a.expr.value = assertion.in_window(w);
}

/// `confidence "95%"`, `inconclusive "fail"|"pass"|"inconclusive"`, `untrusted
/// "inconclusive"|"judge"`, `abort-min-samples 20`, `abort-grace "10s"`.
fn sla_setting(ctx: &mut Ctx<'_>, node: &KdlNode, policy: &mut SlaPolicySpec) {
    let name = node.name().value().to_string();
    let mut r = NodeReader::new(ctx, node);
    let Some(v) = one_arg(ctx, &mut r, "a value") else {
        r.finish(ctx);
        return;
    };
    if name == "abort-min-samples" {
        match &v.value {
            KdlValue::Integer(i) if *i >= 1 => {
                policy.abort_min_samples = u64::try_from(*i).ok();
            }
            _ => ctx.error(
                v.span,
                "invalid `abort-min-samples`",
                "expected a whole number of requests, at least 1",
                Some("write e.g. abort-min-samples 20".into()),
            ),
        }
        r.finish(ctx);
        return;
    }
    if name == "abort-grace" {
        if let Some(d) = ctx.duration(&v, &name) {
            policy.abort_grace = Some(d);
        }
        r.finish(ctx);
        return;
    }
    let Some(text) = ctx.name_string(&v, &name) else {
        r.finish(ctx);
        return;
    };
    let choice = |ctx: &mut Ctx<'_>, allowed: &[&str]| {
        if allowed.contains(&text.as_str()) {
            return Some(text.clone());
        }
        ctx.error(
            v.span,
            format!("unknown `{name}` value `{text}`"),
            "not one of the choices",
            Some(suggest(&text, allowed, "value")),
        );
        None
    };
    match name.as_str() {
        "confidence" => match text.parse::<crate::units::Percent>() {
            Ok(p) if (0.5..1.0).contains(&p.0) => policy.confidence = Some(p.0),
            Ok(_) => ctx.error(
                v.span,
                "`confidence` out of range",
                "must be at least 50% and below 100%",
                Some("write e.g. confidence \"95%\"".into()),
            ),
            Err(e) => ctx.error(
                v.span,
                "invalid `confidence`",
                e.to_string(),
                Some("write e.g. confidence \"95%\"".into()),
            ),
        },
        "inconclusive" => {
            policy.inconclusive = match choice(ctx, &["fail", "pass", "inconclusive"]).as_deref() {
                Some("fail") => Some(InconclusiveAs::Fail),
                Some("pass") => Some(InconclusiveAs::Pass),
                Some(_) => Some(InconclusiveAs::Inconclusive),
                None => None,
            }
        }
        _ => {
            policy.untrusted = match choice(ctx, &["inconclusive", "judge"]).as_deref() {
                Some("judge") => Some(Untrusted::Judge),
                Some(_) => Some(Untrusted::Inconclusive),
                None => None,
            }
        }
    }
    r.finish(ctx);
}

/// Parses the expression with the SLA grammar, once: the scenario keeps the typed assertion.
/// An error points at the offending character inside the string when the span allows it.
fn parse_assertion(ctx: &mut Ctx<'_>, expr: &str, span: SourceSpan) -> Option<Assertion> {
    let e = match crate::sla::parse(expr) {
        Ok(a) => return Some(a),
        Err(e) => e,
    };
    let exact = span.len() == expr.len();
    let at = if exact {
        SourceSpan::new(
            (span.offset() + e.offset).into(),
            e.len.max(1).min(expr.len().saturating_sub(e.offset).max(1)),
        )
    } else {
        span
    };
    ctx.error(
        at,
        format!("invalid assertion: {}", e.message),
        e.message.clone(),
        Some(e.hint),
    );
    None
}

/// The span of a string's content (inside the quotes), so that the `sla` module can point at
/// a character of the expression. Falls back to the whole value for escaped or multi-line
/// strings, whose source text differs from the value.
fn content_span(ctx: &Ctx<'_>, node: &KdlNode, entry_span: SourceSpan, value: &str) -> SourceSpan {
    let Some(entry) = node
        .entries()
        .iter()
        .find(|e| e.name().is_none() && e.ty().is_none())
    else {
        return entry_span;
    };
    if !matches!(entry.value(), KdlValue::String(_)) {
        return entry_span;
    }
    let start = entry_span.offset();
    let Some(src) = ctx.text.get(start..start + entry_span.len()) else {
        return entry_span;
    };
    let hashes = src.chars().take_while(|c| *c == '#').count();
    let open = hashes + 1;
    if src[hashes..].starts_with("\"\"\"") || !src[hashes..].starts_with('"') {
        return entry_span;
    }
    match src.get(open..open + value.len()) {
        Some(inner) if inner == value => SourceSpan::new((start + open).into(), value.len()),
        _ => entry_span,
    }
}
