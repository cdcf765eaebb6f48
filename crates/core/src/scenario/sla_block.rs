//! `sla { assert … }` blocks, top-level or a stage's (each expression parsed by the `sla`
//! grammar and kept typed with its span), and the settings that say how they are decided.

use kdl::{KdlNode, KdlValue};
use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, one_arg};
use super::error::suggest;
use super::model::{AssertionSpec, SlaPolicySpec};
use super::written::Spanned;
use crate::sla::{Assertion, InconclusiveAs, Untrusted};

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
