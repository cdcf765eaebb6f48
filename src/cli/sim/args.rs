//! `infermeter sim`'s flags: one per simulator setting, named by its kebab-case key.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::app::OutputLenDist;
use crate::units::Duration;

/// Serve the embedded OpenAI-compatible simulator (a continuous-batching latency model) until
/// Ctrl-C. Settings come from the defaults, then `--config`, then the flags.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: SocketAddr,
    /// JSON file with simulator settings (kebab-case keys, as in a scenario's `target "sim"`).
    #[arg(long, value_name = "FILE.json")]
    pub config: Option<PathBuf>,
    /// Write one JSON line per finished request (ground truth) to this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Model name reported by /v1/models and in responses.
    #[arg(long)]
    pub model: Option<String>,
    /// Prefill cost per input token, e.g. 50us.
    #[arg(long)]
    pub prefill_per_token: Option<Duration>,
    /// Duration of one decode step with a single running sequence, e.g. 8ms.
    #[arg(long)]
    pub decode_base: Option<Duration>,
    /// Extra decode-step duration per running sequence, e.g. 100us.
    #[arg(long)]
    pub decode_per_seq: Option<Duration>,
    /// Maximum number of sequences decoded together.
    #[arg(long)]
    pub max_running: Option<u32>,
    /// Seed for jitter, output lengths and faults.
    #[arg(long)]
    pub seed: Option<u64>,
    /// KV-cache capacity in tokens (prompt + max output of running sequences).
    #[arg(long)]
    pub kv_capacity: Option<u64>,
    /// Most prompt tokens prefilled per step (0 = unlimited).
    #[arg(long)]
    pub prefill_chunk: Option<u64>,
    /// Step-duration jitter as a fraction in [0, 1).
    #[arg(long)]
    pub jitter: Option<f64>,
    /// Output length when a request gives no max_tokens (and the cap on drawn lengths).
    #[arg(long)]
    pub default_max_tokens: Option<u64>,
    /// Output-length distribution when ignore_eos is false: fixed, uniform or exponential.
    #[arg(long)]
    pub output_len_dist: Option<OutputLenDist>,
    /// Mean of the output-length distribution, in tokens.
    #[arg(long)]
    pub output_len_mean: Option<u64>,
    /// Probability of answering HTTP 429 before any token.
    #[arg(long)]
    pub fault_http_429: Option<f64>,
    /// Probability of answering HTTP 500 before any token.
    #[arg(long)]
    pub fault_http_500: Option<f64>,
    /// Probability of answering HTTP 503 before any token.
    #[arg(long)]
    pub fault_http_503: Option<f64>,
    /// Probability of cutting a response half-way (no `[DONE]`).
    #[arg(long)]
    pub fault_stream_cut: Option<f64>,
    /// Probability of stalling a response half-way for --stall-duration.
    #[arg(long)]
    pub fault_stall: Option<f64>,
    /// Probability of one malformed `data:` line half-way through a stream.
    #[arg(long)]
    pub fault_malformed_sse: Option<f64>,
    /// Probability of holding the first token back an extra --slow-first-byte-delay.
    #[arg(long)]
    pub fault_slow_first_byte: Option<f64>,
    /// How long a stalled response stops emitting, e.g. 30s.
    #[arg(long)]
    pub stall_duration: Option<Duration>,
    /// Extra delay before the first token of a slow-first-byte response, e.g. 2s.
    #[arg(long)]
    pub slow_first_byte_delay: Option<Duration>,
    /// Close the connection after every streamed response while advertising keep-alive, as
    /// llama-server does.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub close_after_stream: Option<bool>,
    /// Cache prompt-prefix blocks; cached tokens skip prefill and are reported as
    /// usage.prompt_tokens_details.cached_tokens.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub prefix_cache: Option<bool>,
    /// Prefix-cache capacity in tokens.
    #[arg(long, value_name = "TOKENS")]
    pub prefix_cache_capacity: Option<u32>,
    /// Tokens per prefix-cache block (only whole blocks are cached).
    #[arg(long, value_name = "TOKENS")]
    pub prefix_cache_block: Option<u16>,
    /// Add llama.cpp's `timings` object to the last streamed chunk and non-streaming bodies.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub timings: Option<bool>,
    /// Export vLLM's latency histograms on /metrics.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub metrics_histograms: Option<bool>,
    /// Output tokens each response spends reasoning before its answer (reasoning text in the
    /// stream, reasoning tokens in usage); a request's reasoning effort scales them.
    #[arg(long, value_name = "TOKENS")]
    pub reasoning_tokens: Option<u64>,
    /// Read a router's session-affinity header of this name (e.g. x-session-id) and count
    /// the requests carrying one and the distinct sessions seen on /metrics.
    #[arg(long, value_name = "NAME")]
    pub session_header: Option<String>,
    /// Export a span per traced request (one that came with a `traceparent`) to this OTLP/HTTP
    /// endpoint, with vLLM's queue, prefill and decode attributes.
    #[arg(long, value_name = "URL")]
    pub otlp_traces_endpoint: Option<String>,
    /// Serve first come, first served whatever a request's `priority` (by default a lower
    /// priority is admitted first, as vLLM's priority scheduling). Adapters (more model names,
    /// each with its cost) are set with --config: {"adapters": {"lora-sql": 1.5}}.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub ignore_priority: Option<bool>,
    /// The header a request's priority may come in instead of the body's `priority` field
    /// (it wins when both are sent). Default x-request-priority.
    #[arg(long, value_name = "NAME")]
    pub request_priority_header: Option<String>,
    /// Responses the Responses API's response store holds for `previous_response_id` (oldest
    /// evicted first; a request naming one gone gets 404). Default 10000; 0 stores none.
    #[arg(long, value_name = "RESPONSES")]
    pub response_store: Option<u32>,
    /// The most tokens of context one stored response may hold (a longer one is not stored).
    /// Default 65536.
    #[arg(long, value_name = "TOKENS")]
    pub response_store_max_tokens: Option<u64>,
}
