//! What an `until-decided` stage's looks record beside the rule it ran under (`UntilDecided`
//! in `summary.rs`): which look decided it, and the complete prefix's verdicts at the stop —
//! the first `requests` requests in send order, all completed — so that a verdict the whole
//! stage leaves undecided can be taken from the prefix, and recomputed from the file.
//! *Added in schema 3.*

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which look stopped an `until-decided` stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// Every request begun, those still in flight taken as unknown (checked first: when both
    /// decide at one look, this is the one recorded).
    InFlight,
    /// The complete prefix: the first requests in send order, all completed.
    Prefix,
}

impl DecidedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            DecidedBy::InFlight => "in_flight",
            DecidedBy::Prefix => "prefix",
        }
    }
}

/// The complete prefix at an `until-decided` stage's last look: its length and its verdicts
/// on the assertions that hold the stage open, judged on the same confidence sequences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PrefixLook {
    /// `m`: the first `m` requests in send order, every one of them completed (failed and
    /// timed-out requests included: they completed).
    pub requests: u64,
    /// One verdict per assertion holding the stage open, in the scenario's order.
    #[serde(default)]
    pub verdicts: Vec<LookVerdict>,
    /// The prefix stopped growing before the stage's end: so many later requests completed
    /// while an earlier one was still in flight that they could no longer be held back for
    /// it (see `docs/statistics.md`). Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stalled: bool,
}

/// One assertion's verdict on a look's numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LookVerdict {
    /// The assertion as written (`sla[].expr`).
    pub expr: String,
    /// `pass`, `fail` or `inconclusive`.
    pub outcome: LookOutcome,
    /// The observed value, in the assertion's unit.
    pub observed: f64,
    /// The confidence sequence's interval it was decided on, where it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<f64>,
    /// The interval's coverage.
    pub confidence: f64,
}

/// A look's outcome for one assertion (the words of `sla[].outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LookOutcome {
    Pass,
    Fail,
    Inconclusive,
}
