//! The accuracy card: how far the client's TTFT and inter-token gaps are from the truth, and
//! what it spends per request, across vllm-bench's bench-overhead matrix.
//!
//! The simulator runs in its own process pinned to core 1, set to about 50 ms to the first
//! token (a 10 ms step plus a 40 ms hold on every first token) and one token every 10 ms
//! whatever the batch, and writes when it wrote each token (`--trace`). The client runs
//! pinned to core 0: a closed loop of 1, 10, 100, 500 and 1,000 streams of 100 tokens
//! (`scenarios/bench/card.kdl`), then an open-loop ladder (`scenarios/bench/open-loop.kdl`,
//! 32 tokens). Each request is joined with the simulator's record on `x-infermeter-sim-id`:
//! TTFT error = client TTFT (from the scheduled instant) − the simulator's arrival → first
//! token; gap error = the client's mean gap − the simulator's. The simulator's own mean gap
//! says whether it kept pace (10 ms): where it is higher, the simulator's core could not
//! write that many chunks and the errors are partly its lag. CPU per request is the client's
//! CPU time over the stage per request sent.
//!
//! `cargo bench --bench card` (release build, about 4 minutes). `CARD_SECONDS=N` sets each
//! point's length (default 20). Quote the printed table in docs/performance.md.

mod support;

use std::path::Path;

use support::{Sim, f, joined, loadavg, mean, percentile, run, stage, taskset};

/// About 50 ms to the first token, then a token every 10 ms, at any batch size.
const TIMING: &[&str] = &[
    "--prefill-per-token",
    "0ms",
    "--decode-base",
    "10ms",
    "--decode-per-seq",
    "0ms",
    "--fault-slow-first-byte",
    "1",
    "--slow-first-byte-delay",
    "40ms",
];

/// Runs one point and prints its row of the card.
fn point(dir: &Path, name: &str, scenario: &str, params: &[String]) {
    let sim = Sim::start(dir, name, TIMING, &[]);
    let mut all = params.to_vec();
    all.push(format!("url={}", sim.url));
    let r = run(dir, name, scenario, &all, &[]);
    let trace = sim.stop();
    let rows = joined(&r.rows, &trace);
    let s = stage(&r.results);
    let sent = f(&s["requests"]["sent"]);
    let cpu_ms = f(&s["client"]["cpu_percent"]) / 100.0 * f(&s["wall_time_s"]) * 1e3 / sent;
    let col = |g: fn(&support::Joined) -> f64| rows.iter().map(g).collect::<Vec<f64>>();
    let (truth, ttft) = (col(|j| j.truth_ttft_ms), col(|j| j.ttft_err_ms));
    let (itl, gap) = (col(|j| j.itl_mean_err_ms), col(|j| j.truth_gap_ms));
    println!(
        "| {name} | {sent:.0} ({} joined) | {:.1} · {:.2} | {:.2} / {:.2} / {:.2} | {:.3} / {:.3} | {cpu_ms:.3} | {:.2} | {:.1} |",
        rows.len(),
        percentile(truth, 0.5),
        mean(&gap),
        mean(&ttft),
        percentile(ttft.clone(), 0.5),
        percentile(ttft, 0.99),
        mean(&itl),
        percentile(itl, 0.99),
        f(&s["client"]["send_lag_ms"]["p99"]),
        f(&s["client"]["steal_percent"]),
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let dir = dir.path();
    let seconds: u32 = std::env::var("CARD_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let duration = format!("duration={seconds}s");
    println!(
        "infermeter accuracy card · {} cores · pinned: {} · load average {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        taskset(0).is_some(),
        loadavg()
    );
    println!(
        "\n| point | requests | truth: TTFT p50 · mean gap (ms) | TTFT error mean / p50 / p99 (ms) | gap error mean / p99 (ms) | client CPU per request (ms) | send lag p99 (ms) | steal (%) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for clients in [1, 10, 100, 500, 1000] {
        let params = [format!("clients={clients}"), duration.clone()];
        point(
            dir,
            &format!("closed {clients}"),
            "scenarios/bench/card.kdl",
            &params,
        );
    }
    for rate in [100, 500, 1000, 2000, 4000] {
        let params = [format!("rate={rate}"), duration.clone()];
        let name = format!("open {rate} rps");
        point(dir, &name, "scenarios/bench/open-loop.kdl", &params);
    }
    println!("\nload average after: {}", loadavg());
}
