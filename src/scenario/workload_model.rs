//! The typed form of file-backed data sets (`sharegpt`, `jsonl`, `trace`) and of the prompt
//! modifiers a dataset block may carry (`shared-prefix`, `retrieved`, `hooks`). Kept apart from
//! `model.rs` so that the workload issue adds types without reshaping the core model.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::model::Spanned;

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

/// vLLM's default ShareGPT sampling rules; each is overridable in the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShareGptFilters {
    /// Conversations with fewer turns are skipped. Default 2.
    pub min_turns: u32,
    /// Default 4.
    pub min_prompt_tokens: u32,
    /// Default 4.
    pub min_output_tokens: u32,
    /// Default 1024.
    pub max_prompt_tokens: u32,
    /// Prompt + output. Default 2048.
    pub max_total_tokens: u32,
}

impl Default for ShareGptFilters {
    fn default() -> Self {
        ShareGptFilters {
            min_turns: 2,
            min_prompt_tokens: 4,
            min_output_tokens: 4,
            max_prompt_tokens: 1024,
            max_total_tokens: 2048,
        }
    }
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

/// `trace "trace.jsonl" format="mooncake"`: production timing and lengths to replay.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TraceSpec {
    pub path: Spanned<PathBuf>,
    pub format: TraceFormat,
    /// Tokens per `hash_ids` block (Mooncake). Default 512.
    pub block_tokens: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// One JSON object a line: `timestamp` (ms), `input_length`, `output_length`, `hash_ids`.
    Mooncake,
    /// Azure LLM inference trace CSV: `TIMESTAMP,ContextTokens,GeneratedTokens`.
    Azure,
}

/// How a dataset's prompts are inflated: a shared system prefix per group, and retrieved
/// chunks appended (the RAG case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ContextSpec {
    /// `shared-prefix groups=N tokens=P`.
    pub shared_prefix: Option<SharedPrefix>,
    /// `retrieved chunks=K tokens=T corpus=C`.
    pub retrieved: Option<Retrieved>,
}

impl ContextSpec {
    /// Tokens the context adds to every prompt.
    pub fn extra_tokens(&self) -> u32 {
        let prefix = self.shared_prefix.map_or(0, |p| p.tokens);
        let chunks = self
            .retrieved
            .map_or(0, |r| r.chunks.saturating_mul(r.tokens));
        prefix.saturating_add(chunks)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SharedPrefix {
    /// Requests are spread over this many groups; a group's requests share its prefix.
    pub groups: u32,
    pub tokens: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Retrieved {
    /// Chunks appended to each prompt.
    pub chunks: u32,
    /// Tokens per chunk.
    pub tokens: u32,
    /// Distinct chunks they are drawn from (equal ids give equal text). Default 1000.
    pub corpus: u32,
}
