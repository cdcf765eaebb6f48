//! Simulator serving speed: the server runs alone on a single-threaded runtime (one thread,
//! one core's worth); closed-loop streaming clients (infermeter's own client, HTTP/1.1
//! keep-alive, on a one-worker runtime of their own) keep it busy for a few seconds. Two
//! shapes:
//! - **burst**: zero latency, every token of a response at once (the simulator's cost per
//!   request at its cheapest, and the client bench's server);
//! - **paced**: one chunk per token, 10 ms apart (a real engine's pacing), many requests in
//!   flight at once.
//!
//! Prints requests/s, and requests and tokens per **server CPU-second** (the server thread's
//! own CPU time from /proc): the figure that compares across runs on a shared machine, and
//! says how far one server core goes.
//!
//! `cargo bench --bench sim` (env: SIM_BENCH_SECS, SIM_BENCH_TOKENS, SIM_BENCH_BURST_CLIENTS,
//! SIM_BENCH_PACED_CLIENTS).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use infermeter_core::client::{BodyTemplate, Client, ClientConfig, TokenCounter};
use infermeter_core::metrics::RequestRecord;
use infermeter_core::protocol::{Api, PromptRef};
use infermeter_core::sim::SimConfig;
use infermeter_core::units;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds used so far by the calling thread (Linux; `None` elsewhere).
fn thread_cpu_secs() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// The machine's steal so far, in clock ticks (`/proc/stat`'s `cpu` line, 8th value).
fn steal_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    Some((*v.get(7)?, v.iter().sum()))
}

struct Words;

impl TokenCounter for Words {
    fn count(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

/// The simulator on a thread of its own, measuring that thread's CPU from `go` to `stop`.
struct Server {
    base: String,
    go: tokio::sync::oneshot::Sender<()>,
    stop: tokio::sync::oneshot::Sender<()>,
    cpu: std::sync::mpsc::Receiver<Option<f64>>,
    thread: std::thread::JoinHandle<()>,
}

fn start_server(decode_base: Duration) -> Server {
    let config = SimConfig {
        prefill_per_token: units::Duration::ZERO,
        decode_base: units::Duration(decode_base),
        decode_per_seq: units::Duration::ZERO,
        max_running: 1_000_000,
        kv_capacity: u64::MAX / 4,
        ..SimConfig::default()
    };
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let (cpu_tx, cpu_rx) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        rt.block_on(async move {
            let sim = infermeter_core::sim::start(config, "127.0.0.1:0".parse().unwrap())
                .await
                .expect("simulator starts");
            addr_tx.send(sim.base_url()).expect("report address");
            // CPU from the moment the clients start (connections warmed), to the stop.
            let _ = go_rx.await;
            let cpu_start = thread_cpu_secs();
            let _ = stop_rx.await;
            let used = cpu_start.zip(thread_cpu_secs()).map(|(a, b)| b - a);
            let _ = cpu_tx.send(used);
            sim.shutdown().await.expect("clean shutdown");
        });
    });
    Server {
        base: addr_rx.recv().expect("server address"),
        go: go_tx,
        stop: stop_tx,
        cpu: cpu_rx,
        thread,
    }
}

/// Requests completed and failed by `clients` closed-loop clients over `secs`, and the seconds
/// they took; `go` is sent once the connections are warm.
fn run_clients(
    base: &str,
    clients: u64,
    secs: u64,
    tokens: u32,
    go: tokio::sync::oneshot::Sender<()>,
) -> (f64, u64, u64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("client runtime");
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let elapsed = rt.block_on(async {
        let client = Client::new(
            ClientConfig {
                pool_size: clients as usize,
                ..ClientConfig::new(format!("{base}/chat/completions"))
            },
            Arc::new(Words),
        )
        .expect("client");
        client.warm(base, clients as usize).await;
        let template = BodyTemplate {
            api: Api::CHAT,
            model: "infermeter-sim".into(),
            ignore_eos: true,
            reasoning_effort: None,
            extra: Default::default(),
            stream: true,
        };
        let body = template.build(PromptRef::Text("benchmark the simulator"), tokens);
        let _ = go.send(());
        let start = Instant::now();
        let end = start + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for _ in 0..clients {
            let (client, body) = (client.clone(), body.clone());
            let (done, failed) = (done.clone(), failed.clone());
            tasks.push(tokio::spawn(async move {
                while Instant::now() < end {
                    let mut rec = RequestRecord::default();
                    client.execute(body.clone(), tokens, &mut rec, start).await;
                    if rec.ok() {
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        start.elapsed().as_secs_f64()
    });
    (
        elapsed,
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
    )
}

fn bench(label: &str, decode_base: Duration, clients: u64, secs: u64, tokens: u32) {
    let server = start_server(decode_base);
    let steal0 = steal_ticks();
    let (elapsed, done, failed) = run_clients(&server.base, clients, secs, tokens, server.go);
    let _ = server.stop.send(());
    let server_cpu = server.cpu.recv().ok().flatten();
    let _ = server.thread.join();
    let steal = steal0
        .zip(steal_ticks())
        .map(|((s0, t0), (s1, t1))| 100.0 * (s1 - s0) as f64 / (t1 - t0).max(1) as f64);
    let n = done as f64;
    println!(
        "sim bench, {label}: {clients} clients, {secs}s, {tokens} tokens/request: {:.0} requests/s, {:.0} tokens/s, {} failed{}",
        n / elapsed,
        n * f64::from(tokens) / elapsed,
        failed,
        steal.map_or(String::new(), |s| format!(", machine steal {s:.1} %"))
    );
    if let Some(cpu) = server_cpu.filter(|c| *c > 0.0) {
        println!(
            "  server thread: {cpu:.2} CPU-s over {elapsed:.1}s wall ({:.0}% of a core): {:.0} requests and {:.0} tokens per server CPU-second",
            100.0 * cpu / elapsed,
            n / cpu,
            n * f64::from(tokens) / cpu
        );
    }
}

fn main() {
    infermeter_core::client::install_tls_provider();
    let secs = env("SIM_BENCH_SECS", 5);
    let tokens = env("SIM_BENCH_TOKENS", 32) as u32;
    bench(
        "burst",
        Duration::ZERO,
        env("SIM_BENCH_BURST_CLIENTS", 64),
        secs,
        tokens,
    );
    bench(
        "paced 10 ms/token",
        Duration::from_millis(10),
        env("SIM_BENCH_PACED_CLIENTS", 2048),
        secs,
        tokens,
    );
}
