//! The JSON Schema of the scenario data model (`infermeter schema scenario`), checked in as
//! `schemas/scenario.schema.json`.

use super::model::Scenario;

/// The JSON Schema of [`Scenario`] as pretty-printed JSON, ending with a newline.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Scenario);
    let mut s = serde_json::to_string_pretty(&schema).unwrap_or_default();
    s.push('\n');
    s
}
