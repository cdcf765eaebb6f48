//! What a scenario says about request content, in the types the data set code works with:
//! token-length distributions, tokenizers, ShareGPT sampling rules, trace formats, prompt
//! context (shared prefixes, retrieved chunks) and where a session's history comes from. The
//! scenario parses them; the plan carries them; this module draws and builds from them.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum TokenizerSpec {
    #[default]
    Cl100kBase,
    O200kBase,
    /// A Hugging Face `tokenizer.json`, path resolved against the scenario's directory.
    File(PathBuf),
}

/// A distribution of token counts. All bounds are inclusive and ≥ 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum LengthDist {
    /// Always this many.
    Fixed {
        value: u32,
    },
    /// One of these, equally likely.
    Choice {
        values: Vec<u32>,
    },
    Uniform {
        min: u32,
        max: u32,
    },
    /// Rounded and clamped to `[min, max]`.
    Normal {
        mean: f64,
        stddev: f64,
        min: u32,
        max: u32,
    },
    /// Long-tailed: `median · exp(sigma · N(0,1))`, clamped to `[min, max]`.
    LogNormal {
        median: f64,
        sigma: f64,
        min: u32,
        max: u32,
    },
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

/// How many turns a session may have at most (also the per-turn metrics' cap).
pub const MAX_TURNS: u32 = 64;

/// Where a session's earlier assistant replies come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum History {
    /// The data set's replies (synthetic text of the planned length, or ShareGPT's `gpt`
    /// turns): deterministic, the default.
    #[default]
    Dataset,
    /// The text the server actually sent.
    Server,
}

/// How a session's later turns carry the conversation so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SessionState {
    /// Every turn resends the whole history (chat's only way): the default.
    #[default]
    Resend,
    /// The server keeps it (the Responses API's `store` and `previous_response_id`): every
    /// turn asks it to store its response, and a later turn sends only its new message
    /// and the previous response's id.
    PreviousResponseId,
}

impl SessionState {
    /// The name a scenario writes.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Resend => "resend",
            SessionState::PreviousResponseId => "previous-response-id",
        }
    }

    /// The default, which plans leave out (so that their hashes stay as they were).
    pub fn is_resend(&self) -> bool {
        *self == SessionState::Resend
    }
}
