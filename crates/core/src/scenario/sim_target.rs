//! A simulator target's own settings: every child of `target "sim" { … }` that is not a
//! common target setting, decoded through serde into [`SimConfig`] so that fields the
//! simulator adds are settable without touching the scenario's code.

use kdl::{KdlNode, KdlValue};
use serde_json::{Map, Value};

use super::ctx::{Ctx, NodeReader};
use super::model::{Endpoint, Target};
use crate::sim::SimConfig;

/// The simulator's settings as written in KDL, read from its JSON Schema.
pub(super) fn fields() -> Vec<String> {
    let schema = schemars::schema_for!(SimConfig);
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default()
}

/// The simulator's configuration from its settings, which the target's own complete: the
/// in-process simulator reads the affinity and priority headers the target sends, unless the
/// scenario names others.
pub(super) fn config(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    t: &mut Target,
    mut sim: Map<String, Value>,
) {
    if let Some(h) = &t.request.affinity_header {
        sim.entry("session-header")
            .or_insert_with(|| Value::String(h.clone()));
    }
    if let Some(h) = &t.request.priority_header {
        sim.entry("request-priority-header")
            .or_insert_with(|| Value::String(h.clone()));
    }
    match serde_json::from_value::<SimConfig>(Value::Object(sim)) {
        // The ranges the types cannot hold (`jitter 1.5`, `max-running 0`) are the
        // simulator's own checks, run here so `validate` refuses what the run would.
        Ok(cfg) => match cfg.validate() {
            Ok(()) => t.endpoint = Endpoint::Sim(Box::new(cfg)),
            Err(e) => {
                let at = node
                    .children()
                    .and_then(|c| c.nodes().iter().find(|n| n.name().value() == e.field));
                ctx.error(
                    ctx.name_span(at.unwrap_or(node)),
                    format!("invalid simulator setting `{}`", e.field),
                    e.reason,
                    Some("see the simulator's settings in docs/simulator.md".into()),
                );
            }
        },
        // Each setting was checked on its own; a failure here is a cross-field one.
        Err(e) => ctx.error(
            ctx.name_span(node),
            "invalid simulator settings",
            e.to_string(),
            None,
        ),
    }
}

/// A simulator setting: checked on its own against `SimConfig` so that an error points at it.
pub(super) fn setting(ctx: &mut Ctx<'_>, child: &KdlNode, sim: &mut Map<String, Value>) {
    let mut r = NodeReader::new(ctx, child);
    let name = r.name();
    let Some((value, span)) = node_json(ctx, &mut r) else {
        r.finish(ctx);
        return;
    };
    r.finish(ctx);
    let mut one = Map::new();
    one.insert(name.to_string(), value.clone());
    if let Err(e) = serde_json::from_value::<SimConfig>(Value::Object(one)) {
        ctx.error(
            span,
            format!("invalid simulator setting `{name}`"),
            number_as_string_error(name, &value).unwrap_or_else(|| e.to_string()),
            None,
        );
        return;
    }
    sim.insert(name.to_string(), value);
}

/// A number given where a string-typed setting is expected is most likely a duration without
/// its unit: the setting's own message for the number as text says so ("`8` has no unit").
fn number_as_string_error(name: &str, value: &Value) -> Option<String> {
    let Value::Number(n) = value else {
        return None;
    };
    let mut one = Map::new();
    one.insert(name.to_string(), Value::String(n.to_string()));
    serde_json::from_value::<SimConfig>(Value::Object(one))
        .err()
        .map(|e| e.to_string())
}

/// A node as JSON: one argument is a value, several an array, a children block an object.
fn node_json(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) -> Option<(Value, miette::SourceSpan)> {
    let has_children = r.node.children().is_some();
    let args = r.args_from(ctx, 0);
    let span = args
        .first()
        .map_or_else(|| ctx.name_span(r.node), |v| v.span);
    if has_children && args.is_empty() {
        let mut obj = Map::new();
        for c in r.children() {
            let mut cr = NodeReader::new(ctx, c);
            if let Some((v, _)) = node_json(ctx, &mut cr) {
                obj.insert(cr.name().to_string(), v);
            }
            cr.finish(ctx);
        }
        return Some((Value::Object(obj), span));
    }
    let mut values = Vec::new();
    for a in &args {
        values.push(match &a.value {
            KdlValue::String(s) => Value::String(s.clone()),
            KdlValue::Bool(b) => Value::Bool(*b),
            KdlValue::Integer(i) => match i64::try_from(*i) {
                Ok(i) => Value::from(i),
                Err(_) => Value::from(*i as f64),
            },
            KdlValue::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
            KdlValue::Null => Value::Null,
        });
    }
    match values.len() {
        0 => {
            if r.arg_count() == 0 {
                ctx.error(
                    span,
                    format!("`{}` needs a value", r.name()),
                    "missing value",
                    None,
                );
            }
            None
        }
        1 => values.pop().map(|v| (v, span)),
        _ => Some((Value::Array(values), span)),
    }
}
