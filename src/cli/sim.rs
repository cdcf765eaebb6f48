//! `infermeter sim`: serves the embedded simulator until Ctrl-C.

mod args;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use args::SimArgs;

use crate::app::{SimConfig, TraceOptions};
use crate::error::Error;

impl SimArgs {
    /// Defaults, then the `--config` file, then each flag given; a file that cannot be read
    /// or settings that do not hold are a usage error.
    pub fn resolve(&self) -> Result<SimConfig, Error> {
        let bad = |message: String| {
            Error::usage(
                message,
                "see `infermeter sim --help` and docs/simulator.md for the settings",
            )
        };
        let mut c = match &self.config {
            None => SimConfig::default(),
            Some(path) => {
                let text = crate::files::read_text(path, crate::files::MAX_TEXT_FILE)
                    .map_err(|e| bad(format!("failed to read {}: {e}", path.display())))?;
                serde_json::from_str(&text)
                    .map_err(|e| bad(format!("invalid simulator config {}: {e}", path.display())))?
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
        set(&mut c.reasoning_tokens, &self.reasoning_tokens);
        if let Some(h) = &self.session_header {
            c.session_header = Some(h.clone());
        }
        if self.otlp_traces_endpoint.is_some() {
            c.otlp_traces_endpoint = self.otlp_traces_endpoint.clone();
        }
        set(&mut c.ignore_priority, &self.ignore_priority);
        if let Some(h) = &self.request_priority_header {
            c.request_priority_header = Some(h.clone());
        }
        set(&mut c.response_store, &self.response_store);
        set(
            &mut c.response_store_max_tokens,
            &self.response_store_max_tokens,
        );
        c.validate().map_err(|e| bad(e.to_string()))?;
        Ok(c)
    }
}

/// Runs `infermeter sim` until Ctrl-C.
pub fn run(args: SimArgs) -> Result<(), Error> {
    let config = args.resolve()?;
    let runtime = tokio::runtime::Runtime::new().map_err(Error::Runtime)?;
    runtime.block_on(serve(config, args.listen, args.trace))
}

async fn serve(config: SimConfig, listen: SocketAddr, trace: Option<PathBuf>) -> Result<(), Error> {
    let model = config.model.clone();
    let options = TraceOptions {
        file: trace,
        record: false,
    };
    let handle = crate::app::start_sim(config, listen, options).await?;
    outln!(
        "infermeter sim listening on {} (model {model}); Ctrl-C to stop",
        handle.base_url()
    );
    if let Err(e) = tokio::signal::ctrl_c().await {
        errln!("error: failed to wait for Ctrl-C: {e}");
    }
    errln!("shutting down (waiting for in-flight responses; Ctrl-C again to quit now)");
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
        assert!(bad.unwrap_err().to_string().contains("prefix-cache-block"));
    }
}
