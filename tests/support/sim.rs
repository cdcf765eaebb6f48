//! Helpers shared by the simulator's integration tests: a plain-HTTP reqwest client, a
//! simulator with an in-process trace, SSE splitting and trace collection.

use std::time::Duration;

use infermeter_core::sim::{SimConfig, SimHandle, TraceOptions, TraceRecord};
use tokio::sync::mpsc::UnboundedReceiver;

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client builds")
}

pub async fn start(config: SimConfig) -> (SimHandle, UnboundedReceiver<TraceRecord>) {
    let options = TraceOptions {
        file: None,
        record: true,
    };
    let mut sim =
        infermeter_core::sim::start_with_trace(config, "127.0.0.1:0".parse().unwrap(), options)
            .await
            .expect("simulator starts");
    let rx = sim.take_trace().expect("trace receiver");
    (sim, rx)
}

/// A config with no latency at all, for wire-format and fault tests.
pub fn instant() -> SimConfig {
    SimConfig {
        prefill_per_token: infermeter_core::units::Duration::ZERO,
        decode_base: infermeter_core::units::Duration::ZERO,
        decode_per_seq: infermeter_core::units::Duration::ZERO,
        ..SimConfig::default()
    }
}

/// The payloads of the `data:` lines of an SSE body, in order.
pub fn sse_data(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data line: {e:?}"))
                .to_string()
        })
        .collect()
}

/// Waits (at most 10 s) for `n` trace records, sorted by id.
pub async fn traces(rx: &mut UnboundedReceiver<TraceRecord>, n: usize) -> Vec<TraceRecord> {
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(r)) => out.push(r),
            _ => panic!("only {} of {n} trace records arrived", out.len()),
        }
    }
    out.sort_by_key(|r| r.id);
    out
}
