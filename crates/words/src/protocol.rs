//! The OpenAI-compatible protocol vocabulary that several stages share: which API a target
//! speaks and everything that differs between APIs. The scenario names it, the plan carries
//! it, the client speaks it, the simulator serves it and the results record it. It lives below
//! all of them because the client may not depend on the scenario or the plan on the client (see
//! `docs/architecture.md`).
//!
//! Each API is one file beside this one implementing [`ApiKind`] (its name, path, request
//! body, event grammar and token accounting), registered once in [`REGISTRY`]; everything
//! else (KDL and `--api` parsing with their suggestions, the JSON Schema, `new`, `import
//! vllm`, the plan's checks, the simulator's routes) reads the registry. See "Adding an API
//! kind" in `docs/architecture.md`.

mod api;
mod base_url;
mod body;
mod chat;
mod chunk;
mod completions;
// An API kind for tests only, the example of what adding one takes (feature `echo`;
// docs/architecture.md, "Adding an API kind"). Never in a released binary.
#[cfg(feature = "echo")]
mod echo;
mod embeddings;
mod generated;
mod group;
mod image;
mod pooled;
mod rerank;
mod response_id;
mod responses;
mod route;
mod score;
mod target;
mod tool_turn;
mod trace;

use std::borrow::Cow;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use api::{Answer, Api, ApiKind, Inputs};
pub use base_url::{api_base, api_path_in, join, likely_base, server_root};
pub use body::{Message, PromptRef, ReasoningEffort, Request};
pub use chunk::{
    ChunkError, ChunkInfo, ChunkMemo, Event, EventKind, FinishReason, JsonStr, ServerTimings,
    ToolCallDelta, Usage, parse_chunk, parse_chunk_value, scan_chunk,
};
pub use generated::{Generated, ToolCall, ToolPart};
pub use group::{Group, Grouping, Label, LabelRef, Labels, MAX_LABEL_LEN, valid_label};
pub use image::{MAX_HEADER_PIXELS, header_pixels, image_size};
pub use pooled::{Pooled, Unanswered, WholeError};
pub use response_id::{MAX_ID_BYTES, ResponseId, continued_body};
pub use route::{RoutePolicy, RoutedUrl, Routes, affinity_id};
pub use target::{
    CacheReset, DEFAULT_MAX_EVENT_BYTES, DEFAULT_PRIORITY_HEADER, NetworkShape, RequestSettings,
    RunSettings, answer_of,
};
pub use tool_turn::{
    MAX_CALL_ID_LEN, MAX_KEPT_CALL_BYTES, MAX_KEPT_CALLS, kept_calls, usable_call,
};
pub use trace::{TRACEPARENT_LEN, TraceContext, TracedRequest};

/// The first line of an LLM judge's system message (docs/quality.md, "LLM judge"): the
/// embedded simulator answers a request holding it with a score instead of an answer, so a
/// run can use the simulator as its own judge over real HTTP.
pub const JUDGE_MARKER: &str = "[infermeter judge v1]";

/// Every API a target may speak, in the order help texts list them. The first is the default.
pub const REGISTRY: &[Api] = &[
    Api::CHAT,
    Api::COMPLETIONS,
    Api::EMBEDDINGS,
    Api::RERANK,
    Api::SCORE,
    Api::RESPONSES,
    #[cfg(feature = "echo")]
    Api::of(&echo::Echo),
];

impl Api {
    /// `chat`, the default.
    pub const CHAT: Api = Api::of(&chat::Chat);
    /// `completions`.
    pub const COMPLETIONS: Api = Api::of(&completions::Completions);
    /// `embeddings`.
    pub const EMBEDDINGS: Api = Api::of(&embeddings::Embeddings);
    /// `rerank`.
    pub const RERANK: Api = Api::of(&rerank::Rerank);
    /// `score`.
    pub const SCORE: Api = Api::of(&score::Score);
    /// `responses`.
    pub const RESPONSES: Api = Api::of(&responses::Responses);

    /// The registered API of this name.
    pub fn from_name(name: &str) -> Option<Api> {
        REGISTRY.iter().copied().find(|a| a.as_str() == name)
    }

    /// Every name a scenario may write, in registry order.
    pub fn names() -> &'static [&'static str] {
        static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
        NAMES.get_or_init(|| REGISTRY.iter().map(|a| a.as_str()).collect())
    }

    /// The names as a sentence's list: `"chat" or "completions"`.
    pub fn names_quoted() -> String {
        let quoted: Vec<String> = REGISTRY.iter().map(|a| format!("\"{a}\"")).collect();
        match quoted.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// The API whose path ends `endpoint` (`/v1/chat/completions`), the longest such path
    /// winning, and what precedes it (`/v1`).
    pub fn from_endpoint(endpoint: &str) -> Option<(&str, Api)> {
        REGISTRY
            .iter()
            .filter_map(|&a| endpoint.strip_suffix(a.path()).map(|prefix| (prefix, a)))
            .min_by_key(|(prefix, _)| prefix.len())
    }

    /// The first registered API that carries conversations (what to suggest instead of one
    /// that does not).
    pub fn conversational() -> Api {
        REGISTRY
            .iter()
            .copied()
            .find(|a| a.kind().conversation())
            .unwrap_or_default()
    }
}

impl Default for Api {
    fn default() -> Api {
        REGISTRY[0]
    }
}

/// A name that is not a registered API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown api `{name}`: expected {}", Api::names_quoted())]
pub struct UnknownApi {
    pub name: String,
}

impl FromStr for Api {
    type Err = UnknownApi;
    fn from_str(s: &str) -> Result<Api, UnknownApi> {
        Api::from_name(s).ok_or_else(|| UnknownApi {
            name: s.to_string(),
        })
    }
}

impl Serialize for Api {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Api {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Api, D::Error> {
        let name = Cow::<'de, str>::deserialize(d)?;
        Api::from_name(&name).ok_or_else(|| serde::de::Error::unknown_variant(&name, Api::names()))
    }
}

/// One string constant per registered API, each with its help: the schema a derived enum had.
impl JsonSchema for Api {
    fn schema_name() -> Cow<'static, str> {
        "Api".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one_of: Vec<serde_json::Value> = REGISTRY
            .iter()
            .map(|a| {
                serde_json::json!({
                    "description": a.kind().help(),
                    "type": "string",
                    "const": a.as_str(),
                })
            })
            .collect();
        schemars::json_schema!({
            "description": "The API requests are sent to.",
            "oneOf": one_of,
        })
    }
}
