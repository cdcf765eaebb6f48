//! The OpenAI-compatible protocol vocabulary that several stages share: which API a target
//! speaks. The scenario names it, the plan carries it, the client speaks it and the results
//! record it. It lives below all of them because the client may not depend on the scenario or
//! the plan on the client (see `docs/architecture.md`).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The default `max-event-size` of a target: an OpenAI chunk is a few hundred bytes, a final
/// chunk with usage and timings about a kilobyte, a chunk with top log-probabilities a few
/// kilobytes.
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 1 << 20;

/// The API requests are sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// `POST {base}/chat/completions` with `messages`.
    #[default]
    Chat,
    /// `POST {base}/completions` with `prompt`.
    Completions,
}

impl Api {
    /// The name a scenario writes (`api "completions"`) and results record.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
        }
    }

    /// The path below the base URL this API posts to.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/chat/completions",
            Api::Completions => "/completions",
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to ask a server to drop its prompt (prefix) cache: `reset-cache "…"` in a target. Each
/// engine has its own endpoint at the server's root (not below `/v1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CacheReset {
    /// Try vLLM's, then SGLang's, then llama.cpp's endpoint; keep the first that answers.
    Auto,
    /// `POST /reset_prefix_cache` (needs `VLLM_SERVER_DEV_MODE=1` on the server).
    Vllm,
    /// `POST /flush_cache`.
    Sglang,
    /// `POST /slots/{id}?action=erase` for every slot `GET /props` counts.
    LlamaCpp,
}

impl CacheReset {
    /// The name a scenario writes.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheReset::Auto => "auto",
            CacheReset::Vllm => "vllm",
            CacheReset::Sglang => "sglang",
            CacheReset::LlamaCpp => "llama-cpp",
        }
    }

    /// Every name a scenario may write.
    pub const NAMES: [&'static str; 4] = ["auto", "vllm", "sglang", "llama-cpp"];

    pub fn from_name(name: &str) -> Option<CacheReset> {
        Some(match name {
            "auto" => CacheReset::Auto,
            "vllm" => CacheReset::Vllm,
            "sglang" => CacheReset::Sglang,
            "llama-cpp" => CacheReset::LlamaCpp,
            _ => return None,
        })
    }
}
