//! `body { … }` in a target: extra JSON fields for every request, with nested values written
//! as KDL children, so that `tools`, `response_format` and `chat_template_kwargs` need no JSON
//! text inside a string:
//!
//! - `name 0.7` is a scalar (a string, number or boolean);
//! - `name "a" "b"` (several arguments) is an array of scalars;
//! - `name { key … }` is an object, each child a key (once each) read by these same rules;
//! - `name { - …; - … }` is an array, each `-` child one element read by these same rules.
//!
//! `#null` is refused (leave the field out instead), as are integers outside JSON's 64-bit
//! range; an object mixing `-` and named children is refused rather than guessed.

use kdl::{KdlNode, KdlValue};
use serde_json::{Map, Value};

use super::ctx::{Ctx, NodeReader, Once, Val};

/// The children of `body { … }`, each a field written once.
pub(super) fn fields(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut once = Once::default();
    for field in r.children() {
        if !once.first(ctx, field, "`body`") {
            continue;
        }
        if let Some(v) = node_value(ctx, field) {
            out.insert(field.name().value().to_string(), v);
        }
    }
    out
}

/// One node's JSON value, by the rules in the module doc; `None` after an error.
fn node_value(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<Value> {
    let mut r = NodeReader::new(ctx, node);
    let name = r.name();
    let has_children = node.children().is_some();
    let value = match (r.arg_count(), has_children) {
        (0, true) => block(ctx, r.children(), name),
        (0, false) => {
            ctx.error(
                ctx.name_span(node),
                format!("body field `{name}` needs a value"),
                "expected a number, string or boolean, several of them, or a { … } block",
                None,
            );
            None
        }
        (_, true) => {
            ctx.error(
                ctx.name_span(node),
                format!("body field `{name}` has both values and a block"),
                "give either values or a { … } block",
                None,
            );
            r.skip_all();
            r.children();
            None
        }
        (1, false) => r.arg(ctx, 0).and_then(|v| scalar(ctx, &v, name)),
        (n, false) => {
            let args = (0..n).filter_map(|i| r.arg(ctx, i)).collect::<Vec<_>>();
            let values: Vec<Value> = args.iter().filter_map(|v| scalar(ctx, v, name)).collect();
            (values.len() == n).then_some(Value::Array(values))
        }
    };
    r.finish(ctx);
    value
}

/// A `{ … }` block: an array when every child is `-`, else an object.
fn block(ctx: &mut Ctx<'_>, children: &[KdlNode], name: &str) -> Option<Value> {
    let dashes = children.iter().filter(|c| c.name().value() == "-").count();
    if dashes > 0 && dashes < children.len() {
        let named = children.iter().find(|c| c.name().value() != "-")?;
        ctx.error(
            ctx.name_span(named),
            format!("body field `{name}` mixes `-` elements and named keys"),
            "a block is an array (every child `-`) or an object (every child a key)",
            None,
        );
        return None;
    }
    if dashes > 0 {
        let items: Vec<Value> = children.iter().filter_map(|c| node_value(ctx, c)).collect();
        return (items.len() == children.len()).then_some(Value::Array(items));
    }
    let mut obj = Map::new();
    let mut once = Once::default();
    let parent = format!("`{name}`");
    for c in children {
        if once.first(ctx, c, &parent)
            && let Some(v) = node_value(ctx, c)
        {
            obj.insert(c.name().value().to_string(), v);
        }
    }
    Some(Value::Object(obj))
}

fn scalar(ctx: &mut Ctx<'_>, v: &Val, name: &str) -> Option<Value> {
    let bad = |ctx: &mut Ctx<'_>, what: &str| {
        ctx.error(
            v.span,
            format!("wrong type for body field `{name}`"),
            format!("expected a number, string or boolean, got {what}"),
            None,
        );
        None
    };
    match &v.value {
        KdlValue::String(s) => Some(Value::String(s.clone())),
        KdlValue::Bool(b) => Some(Value::Bool(*b)),
        KdlValue::Integer(i) => match i64::try_from(*i) {
            Ok(i) => Some(Value::from(i)),
            Err(_) => bad(ctx, "an integer beyond 64 bits"),
        },
        KdlValue::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => Some(Value::Number(n)),
            None => bad(ctx, "a number JSON cannot hold"),
        },
        KdlValue::Null => bad(ctx, "#null"),
    }
}
