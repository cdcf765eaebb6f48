//! `param "name" DEFAULT` declarations and `--param name=value` overrides: read before the rest
//! of the file so that `(param)"name"` can stand anywhere a value goes, in any order.

use kdl::{KdlEntry, KdlNode, KdlValue};
use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, ParamDecl};
use super::error::did_you_mean;
use super::written::ParamValue;

/// Reads every top-level `param` node into `ctx.params`, then applies the overrides.
pub(crate) fn collect(ctx: &mut Ctx<'_>, nodes: &[KdlNode], overrides: &[(String, String)]) {
    for node in nodes.iter().filter(|n| n.name().value() == "param") {
        declare(ctx, node);
    }
    for (name, text) in overrides {
        apply_override(ctx, name, text);
    }
}

fn declare(ctx: &mut Ctx<'_>, node: &KdlNode) {
    let mut r = NodeReader::new(ctx, node);
    let name_span = ctx.name_span(node);
    // A param default may not itself be a (param): read raw entries.
    let args: Vec<_> = node
        .entries()
        .iter()
        .filter(|e| e.name().is_none())
        .collect();
    let name = param_name(ctx, args.first().copied(), name_span);
    let value = param_default(ctx, args.get(1).copied(), name.is_some(), name_span);
    // Mark the two positional arguments consumed; anything else is reported by `finish`.
    r.skip_args(2);
    // `secret=#true`: the value is masked in every output, like an `api_key`'s.
    let secret = r
        .prop(ctx, "secret")
        .and_then(|v| ctx.boolean(&v, "secret"))
        .unwrap_or(false);
    r.finish(ctx);
    let (Some(name), Some(value)) = (name, value) else {
        return;
    };
    if secret {
        crate::redact::mark_secret_name(&name);
    }
    if let Some(first) = ctx.params.get(&name) {
        let first_line = line_of(ctx.text, first.span.offset());
        ctx.error(
            name_span,
            format!("duplicate param `{name}`"),
            "declared again here",
            Some(format!(
                "`{name}` is first declared on line {first_line}; remove one"
            )),
        );
        return;
    }
    ctx.params.insert(
        name,
        ParamDecl {
            value,
            span: name_span,
        },
    );
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.matches('\n').count()) + 1
}

fn apply_override(ctx: &mut Ctx<'_>, name: &str, text: &str) {
    let Some(decl) = ctx.params.get(name) else {
        let help = match did_you_mean(name, ctx.params.keys().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`?"),
            None if ctx.params.is_empty() => "this scenario declares no params".into(),
            None => format!(
                "declared params: {}",
                ctx.params.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        };
        ctx.error(
            None,
            format!("--param {name}={text}: the scenario declares no param `{name}`"),
            "",
            Some(help),
        );
        return;
    };
    let parsed = match &decl.value {
        ParamValue::Int(_) => text.trim().parse::<i64>().ok().map(ParamValue::Int),
        ParamValue::Float(_) => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(ParamValue::Float),
        ParamValue::Bool(_) => match text.trim() {
            "true" | "#true" => Some(ParamValue::Bool(true)),
            "false" | "#false" => Some(ParamValue::Bool(false)),
            _ => None,
        },
        ParamValue::String(_) => Some(ParamValue::String(text.to_string())),
    };
    match parsed {
        Some(v) => {
            if let Some(d) = ctx.params.get_mut(name) {
                d.value = v;
            }
        }
        None => {
            let kind = match decl.value {
                ParamValue::Int(_) => "an integer",
                ParamValue::Float(_) => "a number",
                ParamValue::Bool(_) => "a boolean (true or false)",
                ParamValue::String(_) => "a string",
            };
            let span = decl.span;
            ctx.error(
                span,
                format!("--param {name}={text}: `{text}` is not {kind}"),
                format!("`{name}` is declared here with a default that is {kind}"),
                Some(format!("pass {kind}, e.g. --param {name}=…")),
            );
        }
    }
}

/// The param's name: its first argument, a plain string.
fn param_name(
    ctx: &mut Ctx<'_>,
    first: Option<&KdlEntry>,
    name_span: SourceSpan,
) -> Option<String> {
    match first {
        Some(e) if e.ty().is_none() && e.value().is_string() => {
            e.value().as_string().map(str::to_string)
        }
        Some(e) => {
            ctx.error(
                ctx.trim(e.span()),
                "a param name must be a string",
                format!("expected a name, got {}", super::ctx::show(e.value())),
                Some("write param \"rate\" 20".into()),
            );
            None
        }
        None => {
            ctx.error(
                name_span,
                "`param` needs a name and a default value",
                "missing name and default",
                Some("write param \"rate\" 20".into()),
            );
            None
        }
    }
}

/// The param's default: its second argument, a plain value. Its absence is reported only for a
/// `named` param (a nameless one has been reported already).
fn param_default(
    ctx: &mut Ctx<'_>,
    second: Option<&KdlEntry>,
    named: bool,
    name_span: SourceSpan,
) -> Option<ParamValue> {
    match second {
        Some(e) if e.ty().is_some() => {
            ctx.error(
                ctx.trim(e.span()),
                "a param default must be a plain value",
                "annotated value",
                Some("a param cannot refer to another param; write the value itself".into()),
            );
            None
        }
        Some(e) => default_value(ctx, e),
        None if named => {
            ctx.error(
                name_span,
                "`param` needs a default value",
                "missing default",
                Some("write e.g. param \"rate\" 20; override it with --param rate=40".into()),
            );
            None
        }
        None => None,
    }
}

fn default_value(ctx: &mut Ctx<'_>, e: &KdlEntry) -> Option<ParamValue> {
    match e.value() {
        KdlValue::Integer(i) => match i64::try_from(*i) {
            Ok(i) => Some(ParamValue::Int(i)),
            Err(_) => {
                ctx.error(
                    ctx.trim(e.span()),
                    "param default out of range",
                    "too large",
                    None,
                );
                None
            }
        },
        KdlValue::Float(f) => Some(ParamValue::Float(*f)),
        KdlValue::String(s) => Some(ParamValue::String(s.clone())),
        KdlValue::Bool(b) => Some(ParamValue::Bool(*b)),
        KdlValue::Null => {
            ctx.error(
                ctx.trim(e.span()),
                "a param default cannot be #null",
                "expected a number, string or boolean",
                None,
            );
            None
        }
    }
}
