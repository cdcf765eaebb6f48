//! Plan types of file-backed data sets: the sampled items themselves (they are part of the
//! plan and its hash, so a run never rereads a file that may have changed), trace rows, and
//! what loading skipped.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One prompt of a ShareGPT or JSONL data set, with its token counts under the plan's
/// tokenizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataItem {
    pub prompt: ItemPrompt,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Extra request-body fields (JSONL lines' unknown keys), merged into the request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, serde_json::Value>,
    /// A session's turns (ShareGPT with `session`): `prompt` is then the whole conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<super::session::TurnTokens>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ItemPrompt {
    Text(String),
    Messages(Vec<ChatMessage>),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// One request of a replayed trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRow {
    /// Arrival time from the trace's first row, in nanoseconds (before any speed-up).
    pub at_ns: u64,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Mooncake prefix blocks: equal ids are equal text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hash_ids: Vec<u64>,
}

/// Where a data set came from and what loading it skipped.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LoadReport {
    /// As written in the scenario.
    pub path: String,
    /// Hex sha256 of the file's bytes.
    pub sha256: String,
    /// Records (conversations, lines, rows) in the file.
    pub records: u64,
    /// Skipped records by rule (`fewer_than_2_turns`, `prompt_under_4_tokens`…).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skipped: BTreeMap<String, u64>,
}

/// A dataset's `hooks` script: its text is in the plan, so its hash covers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookPlan {
    /// As written in the scenario (relative to it).
    pub path: String,
    pub sha256: String,
    pub source: String,
}
