//! Simulator throughput at zero latency: the server runs alone on a single-threaded runtime
//! (one core); N streaming clients (HTTP/1.1 keep-alive) on another runtime hammer it for a
//! few seconds. Prints served requests/s and tokens/s.
//!
//! `cargo bench --bench sim` (env: SIM_BENCH_CLIENTS, SIM_BENCH_SECS, SIM_BENCH_TOKENS).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use infermeter::sim::SimConfig;
use infermeter::units;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds used so far by the calling thread (Linux; `None` elsewhere). The machine may be
/// shared, so requests per server CPU-second is the figure that compares across runs.
fn thread_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() {
    let clients = env("SIM_BENCH_CLIENTS", 64);
    let secs = env("SIM_BENCH_SECS", 5);
    let tokens = env("SIM_BENCH_TOKENS", 16);
    let config = SimConfig {
        prefill_per_token: units::Duration::ZERO,
        decode_base: units::Duration::ZERO,
        decode_per_seq: units::Duration::ZERO,
        ..SimConfig::default()
    };

    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (cpu_tx, cpu_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        rt.block_on(async move {
            let sim = infermeter::sim::start(config, "127.0.0.1:0".parse().unwrap())
                .await
                .expect("simulator starts");
            let cpu_start = thread_cpu_secs();
            addr_tx.send(sim.base_url()).expect("report address");
            let _ = stop_rx.await;
            let used = cpu_start.zip(thread_cpu_secs()).map(|(a, b)| b - a);
            let _ = cpu_tx.send(used);
            sim.shutdown().await.expect("clean shutdown");
        });
    });
    let base = addr_rx.recv().expect("server address");

    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Runtime::new().expect("client runtime");
    let done = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let elapsed = rt.block_on(async {
        let http = reqwest::Client::builder()
            .http1_only()
            .pool_max_idle_per_host(clients as usize)
            .build()
            .expect("client");
        let url = format!("{base}/completions");
        let body = serde_json::json!({"prompt": "benchmark the simulator", "max_tokens": tokens,
                                      "ignore_eos": true, "stream": true});
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for _ in 0..clients {
            let (http, url, body) = (http.clone(), url.clone(), body.clone());
            let (done, bytes) = (done.clone(), bytes.clone());
            tasks.push(tokio::spawn(async move {
                while Instant::now() < end {
                    let Ok(resp) = http.post(&url).json(&body).send().await else {
                        continue;
                    };
                    let Ok(text) = resp.bytes().await else {
                        continue;
                    };
                    if text.ends_with(b"data: [DONE]\n\n") {
                        done.fetch_add(1, Ordering::Relaxed);
                        bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        start.elapsed().as_secs_f64()
    });
    let _ = stop_tx.send(());
    let server_cpu = cpu_rx.recv().ok().flatten();
    let _ = server.join();
    let n = done.load(Ordering::Relaxed) as f64;
    println!(
        "sim bench: {clients} clients, {secs}s, {tokens} tokens/request: {:.0} requests/s, {:.0} tokens/s, {:.1} MB/s of SSE",
        n / elapsed,
        n * tokens as f64 / elapsed,
        bytes.load(Ordering::Relaxed) as f64 / elapsed / 1e6
    );
    if let Some(cpu) = server_cpu.filter(|c| *c > 0.0) {
        println!(
            "server thread: {cpu:.2} CPU-s over {elapsed:.1}s wall ({:.0}% of a core): {:.0} requests and {:.0} tokens per server CPU-second",
            100.0 * cpu / elapsed,
            n / cpu,
            n * tokens as f64 / cpu
        );
    }
}
