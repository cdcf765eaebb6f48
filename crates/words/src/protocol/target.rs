//! What a target's requests carry and how a run treats them: the settings a scenario's
//! `target { … }` states once and the plan carries as they are. `scenario::Target` and
//! `plan::TargetPlan` are these two plus the endpoint, each in its own stage's terms.
//! The cache reset a run may ask for and the default bound on one event live here too.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::body::ReasoningEffort;
use super::{Answer, Api};
use crate::units::{Bandwidth, Duration, Percent};

/// What every request to the target carries: the workload's side of the target, in the
/// plan's JSON and hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestSettings {
    pub api: Api,
    /// Model name sent in every request. Default: the simulator's model, or for a URL target
    /// the first model `/v1/models` lists (resolved by the runner, recorded in the result).
    pub model: Option<String>,
    /// Name of the environment variable holding the API key. The key itself is never stored.
    pub api_key_env: Option<String>,
    /// Per-request timeout. Default 60s.
    pub timeout: Duration,
    /// Extra HTTP headers, in file order.
    pub headers: Vec<(String, String)>,
    /// Extra JSON body fields merged into every request (`body { temperature 0.0 }`).
    pub extra_body: BTreeMap<String, serde_json::Value>,
    /// Send `ignore_eos: true` so outputs have exactly the planned length. Default: the
    /// API's (`ApiKind::ignore_eos_default`): on for chat and completions, off for responses.
    pub ignore_eos: bool,
    /// `batch N`: a pooling API's inputs per request (embeddings' texts, rerank's documents,
    /// score's `text_2`). Default 1; absent from the plan's JSON (and hash) when 1.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub batch: u32,
    /// `reasoning-effort "low"|"medium"|"high"`: how hard a reasoning model should think
    /// (chat's `reasoning_effort`, the Responses API's `reasoning.effort`). Default: not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// `affinity-header "x-session-id"`: the header that carries each request's
    /// session-affinity id (see [`super::affinity_id`]): one per session, on every turn; one
    /// per request without sessions. Absent from the plan's JSON (and hash) when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity_header: Option<String>,
    /// `priority-as "header"|"both"`: the header a class's `priority` goes in (lowercase;
    /// `priority-header`, default [`DEFAULT_PRIORITY_HEADER`]), for a server or gateway that
    /// reads a request's priority from a header. Absent from the plan's JSON (and hash) when
    /// not sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_header: Option<String>,
    /// Whether a class's `priority` goes in vLLM's `priority` body field: yes unless
    /// `priority-as "header"`. Absent from the plan's JSON (and hash) when yes.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub priority_body: bool,
    /// `stream #false`: ask for each answer whole, in one JSON body, instead of a stream
    /// (only an API that [answers whole](super::ApiKind::answers_whole)). Default: streamed;
    /// absent from the plan's JSON (and hash) when streamed.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub stream: bool,
}

impl RequestSettings {
    /// How the target's requests are answered: the API's way, or whole where the target
    /// asked (`stream #false`) and the API can answer so. Which metrics a run has follows.
    pub fn answer(&self) -> Answer {
        answer_of(self.api, self.stream)
    }
}

/// The header a class's priority goes in under `priority-as "header"` when `priority-header`
/// names none, and the one the simulator reads by default.
pub const DEFAULT_PRIORITY_HEADER: &str = "x-request-priority";

/// How `api` answers when asked to stream or not.
pub fn answer_of(api: super::Api, stream: bool) -> Answer {
    let kind = api.kind();
    if !stream && kind.answers_whole() {
        Answer::Whole
    } else {
        kind.answer()
    }
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

impl Default for RequestSettings {
    fn default() -> Self {
        RequestSettings {
            api: Api::default(),
            model: None,
            api_key_env: None,
            timeout: Duration(std::time::Duration::from_secs(60)),
            headers: Vec::new(),
            extra_body: BTreeMap::new(),
            ignore_eos: true,
            batch: 1,
            reasoning_effort: None,
            affinity_header: None,
            priority_header: None,
            priority_body: true,
            stream: true,
        }
    }
}

/// A target's settings that change how a run is carried out but not the workload: kept out
/// of the plan's JSON and hash (like a stage's `rounds`), so that runs with and without them
/// compare as the same workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct RunSettings {
    /// `max-event-size`: the most bytes one SSE event may take (default 1 MiB); a larger one
    /// fails its request as `malformed`.
    pub max_event_bytes: u64,
    /// `cache-salt #true`: start every prompt with a few words drawn afresh for each run, so
    /// a server's prompt cache cannot serve a rerun's prompts (the plan's hash is unchanged).
    pub cache_salt: bool,
    /// `reset-cache "auto"|"vllm"|"sglang"|"llama-cpp"`: ask the server to drop its prompt
    /// cache before the warm-up and before each stage (and round).
    pub reset_cache: Option<CacheReset>,
    /// `gpus N`: the GPUs serving the target, declared (nothing measures it), for the
    /// per-GPU throughput (`output_throughput_per_gpu`) and the sweep's frontier.
    pub gpus: Option<u32>,
    /// `network { delay "25ms" … }`: a shaping proxy between the client and the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkShape>,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            cache_salt: false,
            reset_cache: None,
            gpus: None,
            network: None,
        }
    }
}

/// The default `max-event-size` of a target: an OpenAI chunk is a few hundred bytes, a final
/// chunk with usage and timings about a kilobyte, a chunk with top log-probabilities a few
/// kilobytes.
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 1 << 20;

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

/// `network { delay "25ms" jitter="5ms" bandwidth="100Mbit" loss="0.1%" }` in a target: the
/// link a userspace proxy between the client and the server emulates, the same in both
/// directions (see `docs/network.md`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NetworkShape {
    /// One-way delay added to every segment, each direction.
    pub delay: Duration,
    /// Up to this much more, drawn per segment (uniform in 0..jitter) from the scenario's
    /// seed; never reorders bytes.
    pub jitter: Duration,
    /// Each direction of each connection is held to this rate: a segment is serialised
    /// onto the link after the one before it. `None`: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Bandwidth>,
    /// Share of segments "lost": delivered a retransmission timeout
    /// ([`NetworkShape::RETRANSMIT`]) late, as TCP experiences a loss. A fraction (0.001 is
    /// 0.1 %).
    pub loss: Percent,
}

impl NetworkShape {
    /// What a lost segment waits for: Linux's minimum retransmission timeout.
    pub const RETRANSMIT: std::time::Duration = std::time::Duration::from_millis(200);
    /// The longest one-way delay (and jitter) a scenario may ask for: far past any real path,
    /// close enough that a typo ("25s" for "25ms") is caught.
    pub const MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(60);
    /// The most loss a scenario may ask for: past it, a connection is mostly retransmissions.
    pub const MAX_LOSS: f64 = 0.5;
}
