//! `infermeter sim`: serves the embedded simulator until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::error::Error;
use crate::sim::{OutputLenDist, SimConfig, TraceOptions};
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
}

impl SimArgs {
    /// Defaults, then the `--config` file, then each flag given.
    pub fn resolve(&self) -> Result<SimConfig, String> {
        let mut c = match &self.config {
            None => SimConfig::default(),
            Some(path) => {
                let text = crate::files::read_text(path, crate::files::MAX_TEXT_FILE)
                    .map_err(|e| format!("failed to read {}: {e}", path.display()))?;
                serde_json::from_str(&text)
                    .map_err(|e| format!("invalid simulator config {}: {e}", path.display()))?
            }
        };
        fn set<T: Clone>(slot: &mut T, flag: &Option<T>) {
            if let Some(v) = flag {
                *slot = v.clone();
            }
        }
        set(&mut c.model, &self.model);
        set(&mut c.prefill_per_token, &self.prefill_per_token);
        set(&mut c.decode_base, &self.decode_base);
        set(&mut c.decode_per_seq, &self.decode_per_seq);
        set(&mut c.max_running, &self.max_running);
        set(&mut c.seed, &self.seed);
        set(&mut c.kv_capacity, &self.kv_capacity);
        set(&mut c.prefill_chunk, &self.prefill_chunk);
        set(&mut c.jitter, &self.jitter);
        set(&mut c.default_max_tokens, &self.default_max_tokens);
        set(&mut c.output_len_dist, &self.output_len_dist);
        set(&mut c.output_len_mean, &self.output_len_mean);
        set(&mut c.fault_http_429, &self.fault_http_429);
        set(&mut c.fault_http_500, &self.fault_http_500);
        set(&mut c.fault_http_503, &self.fault_http_503);
        set(&mut c.fault_stream_cut, &self.fault_stream_cut);
        set(&mut c.fault_stall, &self.fault_stall);
        set(&mut c.fault_malformed_sse, &self.fault_malformed_sse);
        set(&mut c.fault_slow_first_byte, &self.fault_slow_first_byte);
        set(&mut c.stall_duration, &self.stall_duration);
        set(&mut c.slow_first_byte_delay, &self.slow_first_byte_delay);
        set(&mut c.close_after_stream, &self.close_after_stream);
        set(&mut c.prefix_cache, &self.prefix_cache);
        set(&mut c.prefix_cache_capacity, &self.prefix_cache_capacity);
        set(&mut c.prefix_cache_block, &self.prefix_cache_block);
        set(&mut c.timings, &self.timings);
        set(&mut c.metrics_histograms, &self.metrics_histograms);
        c.validate().map_err(|e| e.to_string())?;
        Ok(c)
    }
}

/// Runs `infermeter sim` until Ctrl-C.
pub fn run(args: SimArgs) -> Result<(), Error> {
    let config = args.resolve().map_err(|message| {
        Error::usage(
            message,
            "see `infermeter sim --help` and docs/simulator.md for the settings",
        )
    })?;
    let runtime = tokio::runtime::Runtime::new().map_err(Error::Runtime)?;
    runtime.block_on(serve(config, args.listen, args.trace))
}

async fn serve(config: SimConfig, listen: SocketAddr, trace: Option<PathBuf>) -> Result<(), Error> {
    let model = config.model.clone();
    let options = TraceOptions {
        file: trace,
        record: false,
    };
    let handle = crate::sim::start_with_trace(config, listen, options).await?;
    println!(
        "infermeter sim listening on {} (model {model}); Ctrl-C to stop",
        handle.base_url()
    );
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("error: failed to wait for Ctrl-C: {e}");
    }
    eprintln!("shutting down (waiting for in-flight responses; Ctrl-C again to quit now)");
    tokio::select! {
        r = handle.shutdown() => Ok(r?),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn resolve(args: &[&str]) -> SimConfig {
        let cli = Cli::try_parse_from(std::iter::once("sim").chain(args.iter().copied()))
            .expect("flags parse");
        cli.sim.resolve().expect("valid settings")
    }

    #[test]
    fn real_server_behaviour_flags() {
        assert_eq!(resolve(&[]), SimConfig::default());
        let c = resolve(&[
            "--close-after-stream",
            "--prefix-cache",
            "--prefix-cache-capacity",
            "1000",
            "--prefix-cache-block",
            "128",
            "--timings",
            "true",
            "--metrics-histograms",
        ]);
        assert!(c.close_after_stream && c.prefix_cache && c.timings && c.metrics_histograms);
        assert_eq!((c.prefix_cache_capacity, c.prefix_cache_block), (1000, 128));
        assert!(!resolve(&["--timings", "false"]).timings);
        let bad = Cli::try_parse_from(["sim", "--prefix-cache-block", "0"])
            .unwrap()
            .sim
            .resolve();
        assert!(bad.unwrap_err().contains("prefix-cache-block"));
    }
}
