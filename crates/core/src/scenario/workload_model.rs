//! The typed form of file-backed data sets (`sharegpt`, `jsonl`, `agentic`, `trace`) and of the prompt
//! modifiers a dataset block may carry (`shared-prefix`, `retrieved`, `hooks`). Kept apart from
//! `model.rs` so that the workload issue adds types without reshaping the core model.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Serialize;

use super::written::Spanned;
use crate::dataset::{ShareGptFilters, TraceFormat};

/// `sharegpt "file.json"`: ShareGPT conversations (a JSON array or JSONL), sampled and filtered
/// as vLLM's `benchmark_serving.py` does by default.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ShareGptSpec {
    /// Relative to the scenario's directory.
    pub path: Spanned<PathBuf>,
    /// How many conversations to sample (seeded). Default 1000.
    pub count: u64,
    pub filters: ShareGptFilters,
    /// Send every request with this many output tokens instead of the reply's length.
    pub output_tokens: Option<u32>,
}

/// `jsonl "prompts.jsonl"`: the user's prompts, one JSON object a line.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct JsonlSpec {
    pub path: Spanned<PathBuf>,
    /// Sample this many lines (seeded); default every line, in file order.
    pub count: Option<u64>,
    /// Output length of lines that give none. Default 256.
    pub max_tokens: u32,
}

/// `agentic "tasks.jsonl"`: agentic sessions, one session a line, whose turns fork and join
/// subagents (see `dataset::load_agentic`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AgenticSpec {
    pub path: Spanned<PathBuf>,
    /// Sample this many tasks (seeded); default every task, in file order.
    pub count: Option<u64>,
    /// Output length of turns that give neither `output_tokens` nor `reply`. Default 256.
    pub max_tokens: u32,
}

/// `trace "trace.jsonl" format="mooncake"`: production timing and lengths to replay.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TraceSpec {
    pub path: Spanned<PathBuf>,
    pub format: TraceFormat,
    /// Tokens per `hash_ids` block (Mooncake). Default 512.
    pub block_tokens: u32,
}
