//! Client benchmark: is infermeter's client ever the bottleneck?
//!
//! Starts `infermeter sim` at zero latency as a separate process, then runs the real
//! `infermeter run` against it (each pinned to its own core with `taskset` when available)
//! and prints:
//! 1. open loop at 1,000 req/s for 30 s: achieved rate, send lag p99, and the client-added
//!    TTFT (client-measured TTFT minus the simulator's own arrival→first-token time, joined per
//!    request on `x-infermeter-sim-id`);
//!    Then the same again with `--poll-idle` (idle CPUs poll instead of sleeping), where
//!    /dev/cpu_dma_latency is writable;
//! 2. a rate ladder (10 s each) up to the highest rate held with send lag p99 < 1 ms, also
//!    with and without `--poll-idle`;
//! 3. 100,000-token prompts (client-added TTFT and request rate);
//! 4. with `INFERMETER_BENCH_LONG=1`: peak client memory after 30 s and after 5 minutes at
//!    1,000 req/s.
//!
//! `cargo bench --bench client` (release build). Quote the figures in docs/performance.md.

mod support;

use std::path::Path;

use support::{Sim, ZERO_LATENCY, client_added_ttft, f, loadavg, percentile, run, stage, taskset};

struct OpenLoop {
    results: serde_json::Value,
    added_ttft_ms: Vec<f64>,
    rss_mb: Vec<f64>,
}

fn open_loop(dir: &Path, name: &str, rate: u32, duration: &str, flags: &[&str]) -> OpenLoop {
    let sim = Sim::start(dir, name, ZERO_LATENCY, &[]);
    let r = run(
        dir,
        name,
        "scenarios/bench/open-loop.kdl",
        &[
            format!("url={}", sim.url),
            format!("rate={rate}"),
            format!("duration={duration}"),
        ],
        flags,
    );
    let trace = sim.stop();
    OpenLoop {
        added_ttft_ms: client_added_ttft(&r.rows, &trace),
        results: r.results,
        rss_mb: r.rss_mb,
    }
}

/// Three 30 s runs at 1,000 req/s; prints each and the median run (by client-added TTFT
/// p99); returns the median run's peak RSS and peak in flight.
fn rate_1000(dir: &Path, name: &str, flags: &[&str]) -> (f64, serde_json::Value) {
    // A shared machine's stalls land in some runs and not others: three runs, and the run
    // with the median client-added TTFT p99 is the one quoted.
    let mut runs: Vec<OpenLoop> = (0..3)
        .map(|k| open_loop(dir, &format!("{name}-{k}"), 1000, "30s", flags))
        .collect();
    for (k, r) in runs.iter().enumerate() {
        let s = stage(&r.results);
        println!(
            "   run {}: send lag p99 {:.3} ms, client-added TTFT p50 {:.3} ms p99 {:.3} ms, client CPU {:.0} %, CPU steal {:.1} %",
            k + 1,
            f(&s["client"]["send_lag_ms"]["p99"]),
            percentile(r.added_ttft_ms.clone(), 0.5),
            percentile(r.added_ttft_ms.clone(), 0.99),
            f(&s["client"]["cpu_percent"]),
            f(&s["client"]["steal_percent"]),
        );
    }
    runs.sort_by(|a, b| {
        percentile(a.added_ttft_ms.clone(), 0.99)
            .total_cmp(&percentile(b.added_ttft_ms.clone(), 0.99))
    });
    let median = runs.swap_remove(1);
    let (r, added) = (&median.results, median.added_ttft_ms);
    let s = stage(r);
    println!("   median run:");
    let planned = f(&s["planned"]["requests"]);
    println!(
        "   sent {} of {} planned ({:.2} %), achieved {:.1} req/s, ok {}, failed {}",
        s["requests"]["sent"],
        planned,
        f(&s["requests"]["sent"]) / planned * 100.0,
        f(&s["throughput"]["achieved_rate_per_s"]),
        s["requests"]["ok"],
        s["requests"]["failed"]
    );
    println!(
        "   send lag p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; client CPU {:.0} %; CPU steal {:.1} %; trusted {}",
        f(&s["client"]["send_lag_ms"]["p50"]),
        f(&s["client"]["send_lag_ms"]["p99"]),
        f(&s["client"]["send_lag_ms"]["max"]),
        f(&s["client"]["cpu_percent"]),
        f(&s["client"]["steal_percent"]),
        s["validity"]["trusted"]
    );
    println!(
        "   client-added TTFT p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms ({} requests joined)",
        percentile(added.clone(), 0.5),
        percentile(added.clone(), 0.9),
        percentile(added.clone(), 0.99),
        added.len()
    );
    let rss = f(&s["client"]["peak_rss_mb"]);
    let in_flight = s["client"]["peak_in_flight"].clone();
    println!("   client peak RSS {rss:.1} MiB, peak in flight {in_flight}");
    (rss, in_flight)
}

/// Open loop at rising rates, 10 s each; prints every step and the highest rate held with
/// send lag p99 < 1 ms.
fn ladder(dir: &Path, name: &str, flags: &[&str]) {
    let mut best = 0;
    for rate in [1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000] {
        let run = open_loop(dir, &format!("{name}-{rate}"), rate, "10s", flags);
        let (s, added) = (stage(&run.results), run.added_ttft_ms);
        let lag = f(&s["client"]["send_lag_ms"]["p99"]);
        let achieved = f(&s["throughput"]["achieved_rate_per_s"]);
        println!(
            "   {rate:>5} req/s: achieved {achieved:>7.1}, send lag p99 {lag:>7.3} ms, client CPU {:>4.0} %, steal {:>4.1} %, client-added TTFT p99 {:.3} ms, failed {}",
            f(&s["client"]["cpu_percent"]),
            f(&s["client"]["steal_percent"]),
            percentile(added, 0.99),
            s["requests"]["failed"]
        );
        // Every step runs: one stall on a shared machine can fail a step below the limit.
        if lag < 1.0 {
            best = best.max(rate);
        }
        if achieved < 0.9 * f64::from(rate) {
            break;
        }
    }
    println!("   highest rate held with send lag p99 < 1 ms: {best} req/s");
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument filters nothing here.
    let dir = tempfile::tempdir().expect("temp dir");
    let dir = dir.path();
    println!(
        "infermeter client benchmark · {} cores · pinned: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        taskset(0).is_some()
    );
    println!("load average: {}", loadavg());

    println!("\n1) open loop, 1000 req/s for 30 s (128 in / 32 out, streaming), three runs");
    let (rss_30s, in_flight_30s) = rate_1000(dir, "rate-1000", &[]);
    // The same with idle CPUs kept polling: what the client adds once the machine's own
    // wake-up latency is out of the way (needs write access to /dev/cpu_dma_latency).
    let poll_idle = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .is_ok();
    if poll_idle {
        println!("\n1b) the same with --poll-idle (idle CPUs poll instead of sleeping)");
        rate_1000(dir, "rate-1000-poll", &["--poll-idle"]);
    } else {
        println!("\n1b) --poll-idle: skipped, /dev/cpu_dma_latency is not writable (needs root)");
    }

    println!("   load average: {}", loadavg());
    println!("\n2) rate ladder, 10 s each: highest rate with send lag p99 < 1 ms");
    ladder(dir, "ladder", &[]);
    if poll_idle {
        println!("\n2b) the same with --poll-idle");
        ladder(dir, "ladder-poll", &["--poll-idle"]);
    }

    println!("   load average: {}", loadavg());
    println!("\n3) 100,000-token prompts, 4 closed-loop clients, 40 requests");
    let sim = Sim::start(dir, "long", ZERO_LATENCY, &[]);
    let r = run(
        dir,
        "long",
        "scenarios/bench/long-context.kdl",
        &[format!("url={}", sim.url)],
        &[],
    );
    let trace = sim.stop();
    let added = client_added_ttft(&r.rows, &trace);
    let s = stage(&r.results);
    println!(
        "   {:.1} req/s, TTFT p50 {:.2} ms, client-added TTFT p50 {:.3} ms p99 {:.3} ms, client CPU {:.0} %, failed {}",
        f(&s["throughput"]["requests_per_s"]),
        f(&s["latency"]["ttft_ms"]["p50"]),
        percentile(added.clone(), 0.5),
        percentile(added, 0.99),
        f(&s["client"]["cpu_percent"]),
        s["requests"]["failed"]
    );

    if std::env::var_os("INFERMETER_BENCH_LONG").is_some() {
        println!("\n4) memory: 5 minutes at 1000 req/s");
        let long = open_loop(dir, "rate-1000-5m", 1000, "5m", &[]);
        let s = stage(&long.results);
        let rss_5m = f(&s["client"]["peak_rss_mb"]);
        println!(
            "   client peak RSS: 30 s run {rss_30s:.1} MiB, 5 min run {rss_5m:.1} MiB ({:+.1} %); peak in flight {} vs {}; CPU steal in the 5 min run {:.1} %",
            (rss_5m / rss_30s - 1.0) * 100.0,
            in_flight_30s,
            s["client"]["peak_in_flight"],
            f(&s["client"]["steal_percent"]),
        );
        // The same process over time: does memory grow with the run's length?
        let at = |sec: usize| {
            long.rss_mb
                .get(sec.min(long.rss_mb.len().saturating_sub(1)))
        };
        if let (Some(a), Some(b)) = (at(30), at(long.rss_mb.len())) {
            let max = long.rss_mb.iter().copied().fold(0.0, f64::max);
            println!(
                "   within the 5 min run: RSS at 0:30 {a:.1} MiB, at the end {b:.1} MiB ({:+.1} %), highest sample {max:.1} MiB",
                (b / a - 1.0) * 100.0
            );
        }
    } else {
        println!("\n4) memory over 5 minutes: set INFERMETER_BENCH_LONG=1 to run it");
    }
}
