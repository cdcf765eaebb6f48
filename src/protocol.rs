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

/// `base` with `path` added to its path, its query string kept last:
/// `http://h/v1?api-version=2024-10-21` and `/chat/completions` give
/// `http://h/v1/chat/completions?api-version=2024-10-21` (Azure OpenAI passes its API version
/// so). A fragment is dropped: it never reaches a server.
pub fn join(base: &str, path: &str) -> String {
    let (head, query) = split_query(base);
    let mut url = format!("{}{path}", head.trim_end_matches('/'));
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        url.push('?');
        url.push_str(q);
    }
    url
}

/// The server's root: `base` without its query and the API's `/v1`, where vLLM, SGLang and
/// llama.cpp serve their own endpoints (`/tokenize`, `/metrics`, `/version`). Those are not
/// the OpenAI API, so the API's query (an `api-version`) is not theirs.
pub fn server_root(base: &str) -> String {
    let head = split_query(base).0.trim_end_matches('/');
    head.strip_suffix("/v1").unwrap_or(head).to_string()
}

/// (what precedes `?`, the query), the fragment dropped.
fn split_query(url: &str) -> (&str, Option<&str>) {
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    match url.split_once('?') {
        Some((head, q)) => (head, Some(q)),
        None => (url, None),
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn a_path_goes_before_the_query() {
        assert_eq!(
            join("http://h:8000/v1", "/models"),
            "http://h:8000/v1/models"
        );
        assert_eq!(
            join("http://h:8000/v1/", "/chat/completions"),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(
            join(
                "https://x.openai.azure.com/openai/v1?api-version=2024-10-21#f",
                "/models"
            ),
            "https://x.openai.azure.com/openai/v1/models?api-version=2024-10-21"
        );
        assert_eq!(join("http://h/v1/?", "/models"), "http://h/v1/models");
    }

    #[test]
    fn the_server_root_has_no_api_prefix_and_no_query() {
        assert_eq!(server_root("http://h:8000/v1"), "http://h:8000");
        assert_eq!(
            server_root("http://h:8000/v1/?api-version=1"),
            "http://h:8000"
        );
        assert_eq!(server_root("http://h:8000"), "http://h:8000");
        assert_eq!(server_root("http://h/api/v1"), "http://h/api");
    }
}
