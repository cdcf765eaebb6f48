//! `infermeter sim`'s flags: one per simulator setting, named by its kebab-case key, and the
//! settings they resolve to.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::app::{OutputLenDist, SimConfig};
use crate::error::Error;
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
    #[command(flatten)]
    pub settings: SimSettings,
}

// Each field is named as its setting in `SimConfig`, as JSON and KDL write it (kebab-case), so
// that `SimArgs::resolve` lays the flags given over the other settings as JSON, naming none; a
// flag not given is left out.
/// The flags that are simulator settings.
#[derive(Debug, Args, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct SimSettings {
    /// Model name reported by /v1/models and in responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub model: Option<String>,
    /// Prefill cost per input token, e.g. 50us.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub prefill_per_token: Option<Duration>,
    /// Duration of one decode step with a single running sequence, e.g. 8ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub decode_base: Option<Duration>,
    /// Extra decode-step duration per running sequence, e.g. 100us.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub decode_per_seq: Option<Duration>,
    /// Maximum number of sequences decoded together.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub max_running: Option<u32>,
    /// Seed for jitter, output lengths and faults.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub seed: Option<u64>,
    /// KV-cache capacity in tokens (prompt + max output of running sequences).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub kv_capacity: Option<u64>,
    /// Most prompt tokens prefilled per step (0 = unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub prefill_chunk: Option<u64>,
    /// Step-duration jitter as a fraction in [0, 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub jitter: Option<f64>,
    /// Output length when a request gives no max_tokens (and the cap on drawn lengths).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub default_max_tokens: Option<u64>,
    /// Output-length distribution when ignore_eos is false: fixed, uniform or exponential.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub output_len_dist: Option<OutputLenDist>,
    /// Mean of the output-length distribution, in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub output_len_mean: Option<u64>,
    /// Probability of answering HTTP 429 before any token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub fault_http_429: Option<f64>,
    /// Probability of answering HTTP 500 before any token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub fault_http_500: Option<f64>,
    /// Probability of answering HTTP 503 before any token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub fault_http_503: Option<f64>,
    /// Probability of cutting a response half-way (no `[DONE]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub fault_stream_cut: Option<f64>,
    /// Probability of stalling a response half-way for --stall-duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub fault_stall: Option<f64>,
    /// Probability of one malformed `data:` line half-way through a stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub fault_malformed_sse: Option<f64>,
    /// Probability of holding the first token back an extra --slow-first-byte-delay.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub fault_slow_first_byte: Option<f64>,
    /// How long a stalled response stops emitting, e.g. 30s.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub stall_duration: Option<Duration>,
    /// Extra delay before the first token of a slow-first-byte response, e.g. 2s.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub slow_first_byte_delay: Option<Duration>,
    /// Close the connection after every streamed response while advertising keep-alive, as
    /// llama-server does.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub close_after_stream: Option<bool>,
    /// Cache prompt-prefix blocks; cached tokens skip prefill and are reported as
    /// usage.prompt_tokens_details.cached_tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub prefix_cache: Option<bool>,
    /// Prefix-cache capacity in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "TOKENS")]
    pub prefix_cache_capacity: Option<u32>,
    /// Tokens per prefix-cache block (only whole blocks are cached).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "TOKENS")]
    pub prefix_cache_block: Option<u16>,
    /// Add llama.cpp's `timings` object to the last streamed chunk and non-streaming bodies.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub timings: Option<bool>,
    /// Export vLLM's latency histograms on /metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub metrics_histograms: Option<bool>,
    /// Output tokens each response spends reasoning before its answer (reasoning text in the
    /// stream, reasoning tokens in usage); a request's reasoning effort scales them.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "TOKENS")]
    pub reasoning_tokens: Option<u64>,
    /// Answer the questions the simulator can work out (`What is 17 + 25?`) with this share
    /// right and the rest off by one, drawn per question from the seed (docs/quality.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "SHARE")]
    pub answer_accuracy: Option<f64>,
    /// With --answer-accuracy: the share of answers that degenerate into one phrase repeated
    /// to the token budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "SHARE")]
    pub repetition: Option<f64>,
    /// Read a router's session-affinity header of this name (e.g. x-session-id) and count
    /// the requests carrying one and the distinct sessions seen on /metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "NAME")]
    pub session_header: Option<String>,
    /// Export a span per traced request (one that came with a `traceparent`) to this OTLP/HTTP
    /// endpoint, with vLLM's queue, prefill and decode attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "URL")]
    pub otlp_traces_endpoint: Option<String>,
    /// Serve first come, first served whatever a request's `priority` (by default a lower
    /// priority is admitted first, as vLLM's priority scheduling). Adapters (more model names,
    /// each with its cost) are set with --config: {"adapters": {"lora-sql": 1.5}}.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub ignore_priority: Option<bool>,
    /// The header a request's priority may come in instead of the body's `priority` field
    /// (it wins when both are sent). Default x-request-priority.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "NAME")]
    pub request_priority_header: Option<String>,
    /// Responses the Responses API's response store holds for `previous_response_id` (oldest
    /// evicted first; a request naming one gone gets 404). Default 10000; 0 stores none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "RESPONSES")]
    pub response_store: Option<u32>,
    /// The most tokens of context one stored response may hold (a longer one is not stored).
    /// Default 65536.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "TOKENS")]
    pub response_store_max_tokens: Option<u64>,
    /// Speculative decoding: draft tokens proposed per decode step (at most 32); a step emits
    /// 1 + the leading run the target accepts. Counted on /metrics as vLLM does.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "TOKENS")]
    pub draft_tokens: Option<u32>,
    /// With --draft-tokens: the probability that the first draft position is accepted
    /// (default 0.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "SHARE")]
    pub draft_acceptance: Option<f64>,
    /// With --draft-tokens: each later position's acceptance probability is the one before
    /// times this (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[arg(long, value_name = "FACTOR")]
    pub draft_acceptance_decay: Option<f64>,
}

impl SimArgs {
    /// Defaults, then the `--config` file, then each flag given, laid over them as JSON; a
    /// file that cannot be read or settings that do not hold are a usage error.
    pub fn resolve(&self) -> Result<SimConfig, Error> {
        let bad = |message: String| {
            Error::usage(
                message,
                "see `infermeter sim --help` and docs/simulator.md for the settings",
            )
        };
        let as_json = |e: serde_json::Error| bad(format!("invalid simulator settings: {e}"));
        let mut settings = match &self.config {
            // Every setting its default.
            None => Map::new(),
            Some(path) => {
                let text = crate::files::read_text(path, crate::files::MAX_TEXT_FILE)
                    .map_err(|e| bad(format!("failed to read {}: {e}", path.display())))?;
                // Read as settings for its errors, which point at a line and column; then laid
                // under the flags as written, so that each value is parsed once.
                let file: SimConfig = serde_json::from_str(&text).map_err(|e| {
                    bad(format!("invalid simulator config {}: {e}", path.display()))
                })?;
                match serde_json::from_str(&text) {
                    Ok(Value::Object(written)) => written,
                    // serde also reads the settings from an array of them, in order.
                    _ => json_object(&file).map_err(as_json)?,
                }
            }
        };
        let flags = json_object(&self.settings).map_err(as_json)?;
        // A number JSON cannot hold (NaN, infinity) becomes null; no setting takes one.
        if let Some((key, _)) = flags.iter().find(|(_, v)| v.is_null()) {
            let message = format!("invalid simulator setting `{key}`: must be a finite number");
            return Err(bad(message));
        }
        settings.extend(flags);
        let c: SimConfig = serde_json::from_value(Value::Object(settings)).map_err(as_json)?;
        c.validate().map_err(|e| bad(e.to_string()))?;
        Ok(c)
    }
}

/// `value` as a JSON object (the flags: those given; the settings: each one).
fn json_object(value: &impl Serialize) -> Result<Map<String, Value>, serde_json::Error> {
    match serde_json::to_value(value)? {
        Value::Object(map) => Ok(map),
        _ => Err(serde::ser::Error::custom("not a JSON object")),
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args, Command};

    use super::*;

    /// The overlay is only right while every flag is named as a setting.
    #[test]
    fn every_settings_flag_names_a_setting() {
        let flags = SimSettings::augment_args(Command::new("sim"));
        for name in flags.get_arguments().filter_map(|a| a.get_long()) {
            let one = serde_json::json!({ name: null });
            let unknown = serde_json::from_value::<SimConfig>(one)
                .is_err_and(|e| e.to_string().contains("unknown field"));
            assert!(!unknown, "--{name} is no simulator setting");
        }
    }

    #[test]
    fn a_number_json_cannot_hold_is_refused_by_name() {
        let args = SimArgs::augment_args(Command::new("sim"))
            .try_get_matches_from(["sim", "--jitter", "NaN"])
            .and_then(|m| <SimArgs as clap::FromArgMatches>::from_arg_matches(&m))
            .expect("flags parse");
        let e = args.resolve().expect_err("NaN is no fraction");
        assert!(e.to_string().contains("`jitter`"), "{e}");
    }
}
