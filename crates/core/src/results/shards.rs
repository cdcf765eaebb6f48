//! The part of `results.json` a distributed run adds: which shards a result holds, how far
//! each one's steps started from the agreed instants and how well its clock was known, the
//! shards whose result never came, and the plan's assertions (so that a merge judges the
//! merged numbers exactly as the run would have). *Added in schema 2*, optional.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::sla::ScopedAssertion;

/// One shard's own result, or the merge of several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sharding {
    /// Shards in the run (N of `--shard I/N`).
    pub count: u32,
    /// The shards whose numbers are in this result, by index (a shard's own result: itself).
    pub shards: Vec<ShardRecord>,
    /// A merged result only: shards whose result never came (killed, lost). Their share of the
    /// plan is not in the numbers, and every stage says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<u32>,
    /// A merged result only: the start skew beyond which a stage is flagged untrusted, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_skew_ms: Option<f64>,
    /// The plan's SLA assertions as written, which a merge evaluates on the merged stages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(with = "Vec<serde_json::Value>")]
    pub assertions: Vec<ScopedAssertion>,
}

/// One shard of a distributed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardRecord {
    /// 0-based.
    pub index: u32,
    /// Each step (warm-up, then each stage's rounds) was started at an instant agreed through
    /// a coordinator. Without one, the shards' schedules line up only as well as their starts.
    pub coordinated: bool,
    /// When each coordinated step started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub starts: Vec<ShardStart>,
    /// The shard stopped early (interrupted, aborted, or lost its coordinator).
    #[serde(default)]
    pub interrupted: bool,
    /// Why it stopped early, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// How one coordinated step started on one shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShardStart {
    pub stage: String,
    /// 0-based round of the stage.
    #[serde(default)]
    pub round: u32,
    /// The agreed instant on the coordinator's clock, nanoseconds since the Unix epoch.
    pub agreed_unix_ns: i64,
    /// Actual start minus the agreed instant, in ms (positive: late), on this shard's clock
    /// corrected by its estimated offset from the coordinator's.
    pub offset_ms: f64,
    /// The clock offset estimate is within this of the truth (half the least-delayed round
    /// trip to the coordinator), in ms.
    pub clock_error_ms: f64,
    /// Shards that had not reached this step when the coordinator stopped waiting for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<u32>,
}

impl ShardStart {
    /// The worst the start can be off the agreed instant, given what is known: the measured
    /// offset plus the clock's error bound, in ms.
    pub fn skew_bound_ms(&self) -> f64 {
        self.offset_ms.abs() + self.clock_error_ms
    }
}
