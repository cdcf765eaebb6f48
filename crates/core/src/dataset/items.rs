//! Loaded data set content: the sampled prompts of ShareGPT and JSONL files, the rows of a
//! trace, each turn's lengths, and what loading skipped. They are part of the plan (and its
//! hash), so a run never rereads a file that may have changed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::spec::{LengthDist, TraceFormat};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DatasetSource {
    Synthetic {
        input_tokens: LengthDist,
        output_tokens: LengthDist,
    },
    /// ShareGPT or JSONL prompts, already sampled and filtered; request `i` uses item
    /// `i mod len`.
    Items {
        format: ItemFormat,
        load: LoadReport,
        items: Vec<DataItem>,
    },
    /// A production trace: lengths (and, for Mooncake, prefix blocks) per row, in time order.
    Trace {
        format: TraceFormat,
        block_tokens: u32,
        load: LoadReport,
        rows: Vec<TraceRow>,
    },
}

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
    /// Images named by a JSONL line (`images`), sent in its last message's content parts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<super::ItemImage>,
    /// A session's turns (ShareGPT with `session`): `prompt` is then the whole conversation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnTokens>,
    /// An agentic task (an `agentic` data set): its sessions, turns, forks and joins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Box<super::agent_task::AgentTask>>,
    /// A JSONL line's `reference` answers and `reference_tokens`, for a data set's
    /// `quality` block; never sent. Absent from the plan's JSON (and hash) when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Box<super::quality::Reference>>,
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
    /// A session's tool calls (an assistant message) or tool result (its text the result),
    /// set by the runner when a turn was answered with tool calls; never read from a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<crate::protocol::ToolPart>,
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

/// One turn's lengths: the new user message, the output asked for, and the data set's reply
/// (what later turns carry under `history "dataset"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnTokens {
    pub user_tokens: u32,
    pub output_tokens: u32,
    pub reply_tokens: u32,
}

/// The file format of an item data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemFormat {
    #[serde(rename = "sharegpt")]
    ShareGpt,
    Jsonl,
    Agentic,
}

impl ItemFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemFormat::ShareGpt => "sharegpt",
            ItemFormat::Jsonl => "jsonl",
            ItemFormat::Agentic => "agentic",
        }
    }
}

impl std::fmt::Display for ItemFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
