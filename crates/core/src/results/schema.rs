//! The JSON Schema of `results.json` (`infermeter schema results`), checked in as
//! `schemas/results.schema.json` (a test fails when that file is stale).

use super::model::Results;

/// The JSON Schema of [`Results`] as pretty-printed JSON, ending with a newline.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Results);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}
