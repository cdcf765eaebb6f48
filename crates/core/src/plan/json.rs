//! `infermeter plan --json`: the plan and every request recipe of every bounded stage, streamed
//! so that a million-request plan is never built as one JSON value.

use std::io::{BufWriter, Write};

use serde::Serialize;

use super::{Plan, RequestRecipe};

#[derive(Serialize)]
struct Row {
    #[serde(flatten)]
    recipe: RequestRecipe,
    #[serde(skip_serializing_if = "Option::is_none")]
    offset_ns: Option<u64>,
}

/// Writes `{"plan": …, "requests": [{"stage": name, "recipes": [...] | null}, …]}`, one entry
/// per stage in run order (warm-up first). `recipes` is `null` for a stage whose length is
/// only known at run time (a closed loop limited by time). In an open-loop stage each recipe
/// also carries its send offset, `offset_ns` (the plan itself stores how to draw them).
pub fn write_json(plan: &Plan, out: impl Write) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 16, out);
    w.write_all(b"{\"plan\":")?;
    // The plan as hashed, but printed: a header named like a secret (`Authorization`,
    // `X-Api-Key`) shows as masked. The hash keeps the real value, as the request does.
    let mut shown = serde_json::to_value(plan)?;
    if let Some(headers) = shown
        .pointer_mut("/target/headers")
        .and_then(serde_json::Value::as_array_mut)
    {
        for pair in headers {
            let secret = pair
                .get(0)
                .and_then(serde_json::Value::as_str)
                .is_some_and(crate::redact::is_secret_name);
            if secret && let Some(v) = pair.get_mut(1) {
                *v = serde_json::Value::String(crate::redact::MASK.into());
            }
        }
    }
    // Params named like a secret (or marked), and registered secrets and secret-shaped
    // strings anywhere.
    if let Some(params) = shown
        .get_mut("params")
        .and_then(serde_json::Value::as_object_mut)
    {
        for (name, v) in params.iter_mut() {
            if crate::redact::is_secret_name(name) && !v.is_boolean() {
                *v = serde_json::Value::String(crate::redact::MASK.into());
            }
        }
    }
    crate::redact::json_strings(&mut shown);
    serde_json::to_writer(&mut w, &shown)?;
    w.write_all(b",\"requests\":[")?;
    for (i, stage) in plan.stages_in_order().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(b"{\"stage\":")?;
        serde_json::to_writer(&mut w, &stage.name)?;
        w.write_all(b",\"recipes\":")?;
        match stage.request_count() {
            None => w.write_all(b"null")?,
            Some(n) => {
                w.write_all(b"[")?;
                let mut offsets = stage.offsets();
                for index in 0..n {
                    if index > 0 {
                        w.write_all(b",")?;
                    }
                    let row = Row {
                        recipe: plan.request(stage, index),
                        offset_ns: offsets.as_mut().and_then(Iterator::next),
                    };
                    serde_json::to_writer(&mut w, &row)?;
                }
                w.write_all(b"]")?;
            }
        }
        w.write_all(b"}")?;
    }
    w.write_all(b"]}\n")?;
    w.flush()
}
