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
    /// Why the verdict is what it is when the numbers alone do not say, e.g. "no ttft samples"
    /// (the assertion then fails with `observed` 0) or "no baseline given".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl SlaVerdict {
    /// How far `observed` is from `threshold`, relative to the threshold (`0.157` = 15.7 % over),
    /// or `None` when the threshold is 0.
    pub fn relative_margin(&self) -> Option<f64> {
        (self.threshold != 0.0 && self.threshold.is_finite())
            .then(|| (self.observed - self.threshold) / self.threshold.abs())
    }
}
