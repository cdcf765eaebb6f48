//! The outcome of one assertion, as recorded in `results.json`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlaVerdict {
    /// The assertion as written, e.g. `ttft.p95 < 200ms`.
    pub expr: String,
    /// The stage it was evaluated on; `null` for a scenario-level assertion over all stages.
    pub stage: Option<String>,
    /// The metric's observed value, in the unit of the threshold (ms, %, req/s, tok/s).
    pub observed: f64,
    /// The threshold, in the same unit.
    pub threshold: f64,
    /// The unit of `observed` and `threshold`.
    pub unit: String,
    pub passed: bool,
}
