//! `sla { assert … }` blocks, top-level or a stage's (each expression parsed by the `sla`
//! grammar and kept typed with its span), and the settings that say how they are decided.

use kdl::{KdlNode, KdlValue};
use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, Val, one_arg};
use super::error::suggest;
use super::model::{AssertionSpec, SlaPolicySpec};
use super::settings::{Setting, find, names, with_reader};
use super::written::Spanned;
use crate::sla::{Assertion, InconclusiveAs, Untrusted};

/// What an `sla` block says: its assertions and, at the top level only, how they are decided.
#[derive(Default)]
pub(crate) struct SlaOut {
    pub assertions: Vec<AssertionSpec>,
    pub policy: SlaPolicySpec,
}

/// The children of every `sla` block.
const SLA: &[Setting<ReadSla>] = &[
    Setting::many("assert", |ctx, node, st| {
        st.out.extend(assert_node(ctx, node, st.scope));
    }),
    Setting::many("window", |ctx, node, st| {
        if st.window.is_some() {
            ctx.error(
                ctx.name_span(node),
                "`window` given twice in one `sla` block",
                "second window",
                Some("keep one `window`".into()),
            );
            return;
        }
        st.window = sla_window(ctx, node);
    }),
];

type ReadSla = fn(&mut Ctx<'_>, &KdlNode, &mut SlaRead<'_>);

/// How the assertions of the scenario are decided: the top-level block's alone. Each is read
/// from its one value; given twice, the last one counts.
const POLICY: &[Setting<ReadPolicy>] = &[
    Setting::many("confidence", |ctx, name, v, policy| {
        let text = ctx.name_string(v, name)?;
        match text.parse::<crate::units::Percent>() {
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
        }
        Some(())
    }),
    Setting::many("inconclusive", |ctx, name, v, policy| {
        const ALL: [InconclusiveAs; 3] = [
            InconclusiveAs::Fail,
            InconclusiveAs::Pass,
            InconclusiveAs::Inconclusive,
        ];
        let text = ctx.name_string(v, name)?;
        policy.inconclusive = choice(ctx, name, v, &text, &ALL, InconclusiveAs::as_str);
        Some(())
    }),
    Setting::many("untrusted", |ctx, name, v, policy| {
        const ALL: [Untrusted; 2] = [Untrusted::Inconclusive, Untrusted::Judge];
        let text = ctx.name_string(v, name)?;
        policy.untrusted = choice(ctx, name, v, &text, &ALL, Untrusted::as_str);
        Some(())
    }),
    Setting::many("abort-min-samples", |ctx, _, v, policy| {
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
        Some(())
    }),
    Setting::many("abort-grace", |ctx, name, v, policy| {
        policy.abort_grace = Some(ctx.duration(v, name)?);
        Some(())
    }),
];
/// Reads a policy setting's value (its name given for messages); `None` where it stopped at a
/// reported problem.
type ReadPolicy = fn(&mut Ctx<'_>, &str, &Val, &mut SlaPolicySpec) -> Option<()>;

/// One `sla` block as it is read.
struct SlaRead<'s> {
    /// The enclosing stage, if any.
    scope: Option<&'s Spanned<String>>,
    out: Vec<AssertionSpec>,
    window: Option<crate::sla::Window>,
}

/// `sla { assert "…" [stage="…"] [abort-on-fail=#true] [every-point=#true]; confidence "95%"; inconclusive
/// "fail"; untrusted "judge" }`; `scope` is the enclosing stage (whose block takes assertions
/// only: how they are decided is the scenario's).
pub(crate) fn sla_block(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    scope: Option<&Spanned<String>>,
) -> SlaOut {
    let mut r = NodeReader::new(ctx, node);
    let mut st = SlaRead {
        scope,
        out: Vec::new(),
        window: None,
    };
    let mut policy = SlaPolicySpec::default();
    for child in r.children() {
        let cname = child.name().value();
        if let Some(setting) = find(&[SLA], cname) {
            (setting.read)(ctx, child, &mut st);
        } else if let Some(setting) = find(&[POLICY], cname) {
            if scope.is_some() {
                ctx.error(
                    ctx.name_span(child),
                    format!("`{cname}` inside a stage's `sla`"),
                    "settings apply to every assertion of the scenario",
                    Some(format!("move `{cname}` to the top-level sla block")),
                );
                continue;
            }
            with_reader(ctx, child, |ctx, r| {
                if let Some(v) = one_arg(ctx, r, "a value") {
                    (setting.read)(ctx, setting.name, &v, &mut policy);
                }
            });
        } else {
            let mut known = names(&[SLA]);
            known.extend(names(&[POLICY]));
            ctx.unknown_node(child, "`sla`", &known);
        }
    }
    r.finish(ctx);
    let mut out = st.out;
    if let Some(w) = st.window {
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

/// The value `text` (of setting `name`, written at `v`) among `all`, named by `as_str`.
fn choice<T: Copy>(
    ctx: &mut Ctx<'_>,
    name: &str,
    v: &Val,
    text: &str,
    all: &[T],
    as_str: fn(T) -> &'static str,
) -> Option<T> {
    if let Some(found) = all.iter().copied().find(|c| as_str(*c) == text) {
        return Some(found);
    }
    let allowed: Vec<&str> = all.iter().map(|c| as_str(*c)).collect();
    ctx.error(
        v.span,
        format!("unknown `{name}` value `{text}`"),
        "not one of the choices",
        Some(suggest(text, &allowed, "value")),
    );
    None
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
