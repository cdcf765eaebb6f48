//! Which load profile a stage belongs to, as the plan states it: the sweep or search that
//! declared it and the load of this point ([`LoadPoint`]). What the point turned out to be
//! (saturated, client-bound, passed) is the result's, `metrics::ProfilePoint`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    /// One load point of a `sweep`.
    #[default]
    Sweep,
    /// One probe of a rate `search`.
    Probe,
}

/// One point of a load profile: the group it belongs to, and its load on one axis.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct LoadPoint {
    /// The stage that declared the sweep or search.
    pub group: String,
    pub kind: PointKind,
    /// Offered request rate (open loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rate_per_s: Option<f64>,
    /// Closed-loop clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    /// A shaped sweep's (input/output) shape, `"128/32"`: the point's prompts and answers
    /// have these token lengths, and its group is its stage's for this shape
    /// (`stage@128/32`). *Added in 0.3.0.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
}

impl LoadPoint {
    /// The point's load on one axis: offered rate, else clients.
    pub fn load(&self) -> f64 {
        self.offered_rate_per_s
            .or(self.clients.map(f64::from))
            .unwrap_or(0.0)
    }
}
