//! The priority check's figures (`priority` in results.json): whether a stage's classes were
//! served in the order of the priorities the server was told. Computed in `groups.rs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a stage's classes were served in their priority order. *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PriorityCheck {
    /// The latency compared: `ttft` (`e2e` for an API answered whole).
    pub metric: String,
    /// Some class told to go first was served slower than one told to go later, on p50 or
    /// p95, their intervals apart.
    pub inverted: bool,
    /// The stage's `priority-inversion "fail"`: an inversion fails the run's gate.
    pub gates: bool,
    /// Every pair of classes with different priorities, the higher first, on p50 and p95.
    pub pairs: Vec<PriorityPair>,
}

/// One comparison of a higher-priority class with a lower one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PriorityPair {
    /// The class told to go first (the lower `priority` value).
    pub higher: String,
    pub lower: String,
    /// `p50` or `p95`.
    pub figure: String,
    /// The figure of each class, ms.
    pub higher_ms: f64,
    pub lower_ms: f64,
    /// Each figure's confidence interval, where there are enough samples for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub higher_interval: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_interval: Option<(f64, f64)>,
    pub outcome: PairOutcome,
}

/// What a pair's intervals show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairOutcome {
    /// The higher class's interval lies wholly below the lower's: served first.
    Honoured,
    /// The higher class's interval lies wholly above the lower's: served slower.
    Inverted,
    /// The intervals overlap (or one is missing): nothing shown either way.
    Undecided,
}
