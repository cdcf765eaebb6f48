//! Simulator settings: one struct shared by `infermeter sim` flags and a scenario's
//! `target "sim" { … }` block (which is decoded through serde, so every field here is settable
//! from KDL as a kebab-case child node, e.g. `decode-base "8ms"`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::Duration;

/// The latency model and fault settings of the simulator. Defaults resemble a 7–8B model on one
/// modern GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct SimConfig {
    /// Model name reported by `/v1/models` and in responses.
    pub model: String,
    /// Prefill cost per input token.
    pub prefill_per_token: Duration,
    /// Duration of one decode step with a single running sequence.
    pub decode_base: Duration,
    /// Extra decode-step duration per running sequence.
    pub decode_per_seq: Duration,
    /// Maximum number of sequences decoded together (vLLM's max_num_seqs).
    pub max_running: u32,
    /// Seed for jitter, output lengths and faults.
    pub seed: u64,
    /// KV-cache capacity in tokens: a request is admitted only while the prompt plus maximum
    /// output tokens of every running sequence, its own included, fit. A request that could
    /// never fit is rejected with HTTP 400.
    pub kv_capacity: u64,
    /// Most prompt tokens prefilled in one step (chunked prefill); a longer prompt takes several
    /// steps. 0 means unlimited.
    pub prefill_chunk: u64,
    /// Random variation of each step's duration, as a fraction: a step lasts its modelled
    /// duration times a uniform factor in [1 − jitter, 1 + jitter]. 0 disables it; must be < 1.
    pub jitter: f64,
    /// Output length used when the request sets `ignore_eos: true` but no `max_tokens`, and
    /// the cap on drawn lengths when the request sets no `max_tokens`.
    pub default_max_tokens: u64,
    /// Values in each embedding the embeddings API answers with (a small embedding model's
    /// size; it sets the answer's bytes: about 20 per value).
    #[serde(skip_serializing_if = "is_default_embedding_dim")]
    pub embedding_dim: u32,
    /// Distribution of the output length when `ignore_eos` is false (the model "stops" on its
    /// own): `fixed` (always the mean), `uniform` (1 ..= 2 × mean) or `exponential` (mean).
    /// The drawn length is capped by `max_tokens` and raised to `min_tokens`.
    pub output_len_dist: OutputLenDist,
    /// Mean of the output-length distribution, in tokens.
    pub output_len_mean: u64,
    /// Probability that a request is answered with HTTP 429 before any token.
    pub fault_http_429: f64,
    /// Probability that a request is answered with HTTP 500 before any token.
    pub fault_http_500: f64,
    /// Probability that a request is answered with HTTP 503 before any token.
    pub fault_http_503: f64,
    /// Probability that a response is cut half-way: the connection is closed without
    /// `data: [DONE]` (or, non-streaming, mid-body).
    pub fault_stream_cut: f64,
    /// Probability that a response stops emitting half-way for `stall-duration`, holding its
    /// batch slot, then resumes.
    pub fault_stall: f64,
    /// Probability that one `data:` line half-way through a stream carries malformed JSON (a
    /// non-streaming body is truncated JSON).
    pub fault_malformed_sse: f64,
    /// Probability that the first token is held back an extra `slow-first-byte-delay`.
    pub fault_slow_first_byte: f64,
    /// How long a stalled response stops emitting.
    pub stall_duration: Duration,
    /// Extra delay before the first token of a slow-first-byte response.
    pub slow_first_byte_delay: Duration,
    /// Close the TCP connection after every streamed response while advertising
    /// `Connection: keep-alive` / `Keep-Alive: timeout=5, max=100` on every response, as
    /// llama.cpp's llama-server does: a pooling client reuses a connection that is already
    /// closed.
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(extend("default" = false))]
    pub close_after_stream: bool,
    /// Keep an LRU cache of prompt-prefix blocks (vLLM's automatic prefix caching): cached
    /// tokens skip their prefill cost and are reported as
    /// `usage.prompt_tokens_details.cached_tokens`.
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(extend("default" = false))]
    pub prefix_cache: bool,
    /// Prefix-cache capacity in tokens (rounded down to whole blocks); least recently used
    /// blocks are evicted beyond it.
    #[serde(skip_serializing_if = "is_default_prefix_cache_capacity")]
    #[schemars(extend("default" = DEFAULT_PREFIX_CACHE_CAPACITY))]
    pub prefix_cache_capacity: u32,
    /// Tokens per prefix-cache block (vLLM's `--block-size`); only whole blocks are cached.
    #[serde(skip_serializing_if = "is_default_prefix_cache_block")]
    #[schemars(extend("default" = DEFAULT_PREFIX_CACHE_BLOCK))]
    pub prefix_cache_block: u16,
    /// Add llama.cpp's `timings` object (server-side prompt and decode times) to the last
    /// streamed chunk and to non-streaming bodies.
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(extend("default" = false))]
    pub timings: bool,
    /// Export vLLM's latency histograms (`vllm:time_to_first_token_seconds`,
    /// `vllm:inter_token_latency_seconds`, …) on `/metrics`.
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(extend("default" = false))]
    pub metrics_histograms: bool,
    /// Answer a streamed chat or Responses request that offers `tools` with a call of its
    /// first tool (chat's `delta.tool_calls` and `finish_reason: "tool_calls"`, a Responses
    /// `function_call` item) instead of text; a request whose last message is a tool result
    /// is answered with text.
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(extend("default" = false))]
    pub tool_calls: bool,
    /// Output tokens each response spends reasoning before its answer, as a reasoning model
    /// does: streamed as reasoning text (chat's `delta.reasoning_content`, the Responses API's
    /// `response.reasoning_text.delta`) and counted in `usage` as reasoning tokens. They are
    /// part of the output, so a `max_tokens` at or under them leaves no answer. A request's
    /// reasoning effort scales them: `low` a quarter, `high` twice. 0: no reasoning.
    #[serde(skip_serializing_if = "is_zero")]
    #[schemars(extend("default" = 0))]
    pub reasoning_tokens: u64,
    /// Read a router's session-affinity header of this name (e.g. `x-session-id`) and count,
    /// on `/metrics`, the requests that carried one and the distinct sessions seen. In a
    /// scenario's `target "sim"`, the target's `affinity-header` sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_header: Option<String>,
    /// Export a span per finished request that came with a W3C `traceparent` to this OTLP/HTTP
    /// endpoint (e.g. `http://127.0.0.1:4318`; spans go to its `/v1/traces`), with vLLM's
    /// attributes (`gen_ai.latency.time_in_queue`, `…time_in_model_prefill`, `…decode`,
    /// `…time_to_first_token`, `…e2e`), as vLLM's `--otlp-traces-endpoint` does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_traces_endpoint: Option<String>,
    /// More model names served beside `model` (LoRA adapters, or other models), each with the
    /// cost of its tokens relative to the base model's (`adapters { lora-sql 1.5 }`: its
    /// prefill and per-sequence decode cost 1.5 times as much). A request naming a model
    /// that is neither is refused with 404, as vLLM does.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub adapters: BTreeMap<String, f64>,
    /// Serve waiting requests first come, first served whatever their `priority` (a server
    /// without priority scheduling); by default a lower `priority` is admitted first, as
    /// vLLM's `--scheduling-policy priority` does.
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(extend("default" = false))]
    pub ignore_priority: bool,
    /// The header a request's priority may come in instead of the body's `priority` field
    /// (a gateway's; it wins over the field when both are sent); default
    /// `x-request-priority`. In a scenario's `target "sim"`, the target's `priority-header`
    /// sets it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_priority_header: Option<String>,
    /// Responses the Responses API's response store holds (`"store": true`), for a later
    /// request's `previous_response_id`; the oldest stored go first beyond it, and a request
    /// naming one gone is answered 404. 0 stores none.
    #[serde(skip_serializing_if = "is_default_response_store")]
    #[schemars(extend("default" = DEFAULT_RESPONSE_STORE))]
    pub response_store: u32,
    /// The most tokens of context (the conversation so far, the response's output included)
    /// one stored response may hold; a longer one is not stored. With `prefix-cache` an entry
    /// keeps 8 bytes per `prefix-cache-block` tokens, so the store's memory is at most
    /// `response-store` × this / `prefix-cache-block` × 8 bytes.
    #[serde(skip_serializing_if = "is_default_response_store_max_tokens")]
    #[schemars(extend("default" = DEFAULT_RESPONSE_STORE_MAX_TOKENS))]
    pub response_store_max_tokens: u64,
    /// Answer the questions the simulator can work out itself (`What is 17 + 25?`, see
    /// docs/quality.md) as a model would, "The answer is 42.", stopping there; this share of
    /// them right, the rest off by one, drawn per question from the seed. Unset: every
    /// answer is filler words, as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_accuracy: Option<f64>,
    /// With `answer-accuracy`: the share of answers that degenerate, one phrase repeated to
    /// the token budget, drawn per question from the seed.
    #[serde(skip_serializing_if = "is_zero_f64")]
    #[schemars(extend("default" = 0.0))]
    pub repetition: f64,
    /// With `answer-accuracy`: a served model's own accuracy (`adapter-accuracy { lora-sql
    /// 0.7 }`), so that a split run can have a worse model; the others answer with
    /// `answer-accuracy`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("default" = {}))]
    pub adapter_accuracy: BTreeMap<String, f64>,
    /// Speculative decoding with a draft model: the draft tokens proposed per decode step
    /// (vLLM's `num_speculative_tokens`, at most 32). The target verifies them and keeps the
    /// leading run it accepts plus one token of its own, so a step emits 1 to 1 + this many
    /// tokens at once; counted on `/metrics` as vLLM counts them and in `timings` as
    /// llama.cpp does. 0: no draft model.
    #[serde(skip_serializing_if = "is_zero_u32")]
    #[schemars(extend("default" = 0))]
    pub draft_tokens: u32,
    /// With `draft-tokens`: the probability that the first draft position is accepted,
    /// drawn per step from the seed, the request and the step.
    #[serde(skip_serializing_if = "is_default_draft_acceptance")]
    #[schemars(extend("default" = DEFAULT_DRAFT_ACCEPTANCE))]
    pub draft_acceptance: f64,
    /// With `draft-tokens`: each later position's acceptance probability is the one before
    /// times this (1: every position alike), as a draft model's guesses grow worse further
    /// ahead.
    #[serde(skip_serializing_if = "is_one_f64")]
    #[schemars(extend("default" = 1.0))]
    pub draft_acceptance_decay: f64,
}

/// Most draft tokens per step (each position is a series on `/metrics`).
pub const MAX_DRAFT_TOKENS: u32 = 32;
const DEFAULT_DRAFT_ACCEPTANCE: f64 = 0.7;

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

fn is_one_f64(n: &f64) -> bool {
    *n == 1.0
}

fn is_default_draft_acceptance(n: &f64) -> bool {
    *n == DEFAULT_DRAFT_ACCEPTANCE
}

fn is_zero_f64(n: &f64) -> bool {
    *n == 0.0
}

const DEFAULT_RESPONSE_STORE: u32 = 10_000;
const DEFAULT_RESPONSE_STORE_MAX_TOKENS: u64 = 65_536;

fn is_default_response_store(n: &u32) -> bool {
    *n == DEFAULT_RESPONSE_STORE
}

fn is_default_response_store_max_tokens(n: &u64) -> bool {
    *n == DEFAULT_RESPONSE_STORE_MAX_TOKENS
}

const DEFAULT_PREFIX_CACHE_CAPACITY: u32 = 400_000;
/// Most adapters one simulator serves (vLLM's `--max-loras` is far below).
const MAX_ADAPTERS: usize = 256;
const DEFAULT_PREFIX_CACHE_BLOCK: u16 = 16;

// Settings added after plan hashes were pinned are left out of the serialised config at their
// defaults, so that a plan written without them hashes as before.
/// A small embedding model's size (the tiny model of `docs/metrics.md`'s vLLM figures).
const DEFAULT_EMBEDDING_DIM: u32 = 256;

fn is_default_embedding_dim(n: &u32) -> bool {
    *n == DEFAULT_EMBEDDING_DIM
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_default_prefix_cache_capacity(n: &u32) -> bool {
    *n == DEFAULT_PREFIX_CACHE_CAPACITY
}

fn is_default_prefix_cache_block(n: &u16) -> bool {
    *n == DEFAULT_PREFIX_CACHE_BLOCK
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            model: "infermeter-sim".into(),
            prefill_per_token: Duration(std::time::Duration::from_micros(50)),
            decode_base: Duration::from_millis(8),
            decode_per_seq: Duration(std::time::Duration::from_micros(100)),
            max_running: 256,
            seed: 0,
            kv_capacity: 400_000,
            prefill_chunk: 8192,
            jitter: 0.0,
            default_max_tokens: 1024,
            embedding_dim: DEFAULT_EMBEDDING_DIM,
            output_len_dist: OutputLenDist::Exponential,
            output_len_mean: 256,
            fault_http_429: 0.0,
            fault_http_500: 0.0,
            fault_http_503: 0.0,
            fault_stream_cut: 0.0,
            fault_stall: 0.0,
            fault_malformed_sse: 0.0,
            fault_slow_first_byte: 0.0,
            stall_duration: Duration::from_millis(30_000),
            slow_first_byte_delay: Duration::from_millis(2_000),
            close_after_stream: false,
            prefix_cache: false,
            prefix_cache_capacity: DEFAULT_PREFIX_CACHE_CAPACITY,
            prefix_cache_block: DEFAULT_PREFIX_CACHE_BLOCK,
            timings: false,
            metrics_histograms: false,
            tool_calls: false,
            reasoning_tokens: 0,
            session_header: None,
            otlp_traces_endpoint: None,
            adapters: BTreeMap::new(),
            ignore_priority: false,
            request_priority_header: None,
            response_store: DEFAULT_RESPONSE_STORE,
            response_store_max_tokens: DEFAULT_RESPONSE_STORE_MAX_TOKENS,
            answer_accuracy: None,
            repetition: 0.0,
            adapter_accuracy: BTreeMap::new(),
            draft_tokens: 0,
            draft_acceptance: DEFAULT_DRAFT_ACCEPTANCE,
            draft_acceptance_decay: 1.0,
        }
    }
}

/// Why a [`SimConfig`] cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid simulator setting `{field}`: {reason}")]
pub struct ConfigError {
    pub field: &'static str,
    pub reason: String,
}

impl SimConfig {
    /// The cost factor of a request naming `model` (1 for the base model or none), or `None`
    /// for a model this simulator does not serve.
    pub fn cost_of(&self, model: Option<&str>) -> Option<f64> {
        match model {
            None => Some(1.0),
            Some(m) if m == self.model => Some(1.0),
            Some(m) => self.adapters.get(m).copied(),
        }
    }

    /// The header a request's priority is read from (see `request_priority_header`).
    pub fn priority_header(&self) -> &str {
        self.request_priority_header
            .as_deref()
            .unwrap_or(crate::protocol::DEFAULT_PRIORITY_HEADER)
    }

    /// The fault probabilities in the order they are drawn, with their kebab-case names.
    pub(crate) fn fault_rates(&self) -> [(&'static str, f64); 7] {
        [
            ("fault-http-429", self.fault_http_429),
            ("fault-http-500", self.fault_http_500),
            ("fault-http-503", self.fault_http_503),
            ("fault-stream-cut", self.fault_stream_cut),
            ("fault-stall", self.fault_stall),
            ("fault-malformed-sse", self.fault_malformed_sse),
            ("fault-slow-first-byte", self.fault_slow_first_byte),
        ]
    }

    /// `answer-accuracy`, `repetition` and the draft model's probabilities are shares.
    fn validate_answers(&self) -> Result<(), ConfigError> {
        let share = |field: &'static str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(ConfigError {
                    field,
                    reason: "must be between 0 and 1".into(),
                })
            }
        };
        share("answer-accuracy", self.answer_accuracy.unwrap_or(0.0))?;
        share("repetition", self.repetition)?;
        share("draft-acceptance", self.draft_acceptance)?;
        share("draft-acceptance-decay", self.draft_acceptance_decay)?;
        if self.draft_tokens > MAX_DRAFT_TOKENS {
            return Err(ConfigError {
                field: "draft-tokens",
                reason: format!("at most {MAX_DRAFT_TOKENS}"),
            });
        }
        if self.adapter_accuracy.len() > MAX_ADAPTERS {
            return Err(ConfigError {
                field: "adapter-accuracy",
                reason: "at most 256 models".into(),
            });
        }
        for p in self.adapter_accuracy.values() {
            share("adapter-accuracy", *p)?;
        }
        Ok(())
    }

    /// The share of `model`'s answers that are right (`adapter-accuracy`, else
    /// `answer-accuracy`); `None` when the simulator answers no questions.
    pub(crate) fn accuracy_of(&self, model: Option<&str>) -> Option<f64> {
        let base = self.answer_accuracy?;
        Some(
            model
                .and_then(|m| self.adapter_accuracy.get(m).copied())
                .unwrap_or(base),
        )
    }

    /// Checks ranges the types cannot express.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, reason: &str| {
            Err(ConfigError {
                field,
                reason: reason.into(),
            })
        };
        if self.max_running == 0 {
            return err("max-running", "must be at least 1");
        }
        if self.kv_capacity == 0 {
            return err("kv-capacity", "must be at least 1 token");
        }
        if self.default_max_tokens == 0 {
            return err("default-max-tokens", "must be at least 1");
        }
        if self.embedding_dim == 0 || self.embedding_dim > 65_536 {
            return err("embedding-dim", "must be between 1 and 65536");
        }
        if self.output_len_mean == 0 {
            return err("output-len-mean", "must be at least 1");
        }
        if self.prefix_cache_block == 0 {
            return err("prefix-cache-block", "must be at least 1 token");
        }
        if let Some(h) = &self.session_header
            && axum::http::HeaderName::from_bytes(h.as_bytes()).is_err()
        {
            return err("session-header", "must be an HTTP header name");
        }
        if let Some(h) = &self.request_priority_header
            && axum::http::HeaderName::from_bytes(h.as_bytes()).is_err()
        {
            return err("request-priority-header", "must be an HTTP header name");
        }
        if self.prefix_cache_capacity == 0 {
            return err("prefix-cache-capacity", "must be at least 1 token");
        }
        self.validate_answers()?;
        if !(0.0..1.0).contains(&self.jitter) {
            return err("jitter", "must be a fraction in [0, 1)");
        }
        if let Some(u) = &self.otlp_traces_endpoint
            && !url::Url::parse(u).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
        {
            return err("otlp-traces-endpoint", "must be an http:// or https:// URL");
        }
        if self.adapters.len() > MAX_ADAPTERS {
            return err("adapters", "at most 256 adapters");
        }
        for (name, cost) in &self.adapters {
            if name.is_empty() || name.len() > 256 || *name == self.model {
                return err(
                    "adapters",
                    "each a name of 1 to 256 bytes, not the base model's",
                );
            }
            if !(cost.is_finite() && (0.01..=100.0).contains(cost)) {
                return err("adapters", "each cost a factor between 0.01 and 100");
            }
        }
        let mut total = 0.0;
        for (field, p) in self.fault_rates() {
            if !(0.0..=1.0).contains(&p) {
                return err(field, "must be a probability in [0, 1]");
            }
            total += p;
        }
        if total > 1.0 + 1e-9 {
            return err(
                "fault-*",
                "fault probabilities add up to more than 1 (at most one fault applies per request)",
            );
        }
        Ok(())
    }
}

/// How output lengths are drawn when the request lets the model stop on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OutputLenDist {
    /// Always `output-len-mean` tokens.
    Fixed,
    /// Uniform in 1 ..= 2 × `output-len-mean`.
    Uniform,
    /// Exponential with mean `output-len-mean` (at least 1): many short answers, a long tail.
    Exponential,
}

impl FromStr for OutputLenDist {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "fixed" => Ok(OutputLenDist::Fixed),
            "uniform" => Ok(OutputLenDist::Uniform),
            "exponential" => Ok(OutputLenDist::Exponential),
            _ => Err(ConfigError {
                field: "output-len-dist",
                reason: format!("`{s}` is not one of fixed, uniform, exponential"),
            }),
        }
    }
}

impl fmt::Display for OutputLenDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputLenDist::Fixed => "fixed",
            OutputLenDist::Uniform => "uniform",
            OutputLenDist::Exponential => "exponential",
        })
    }
}

#[cfg(test)]
mod tests;
