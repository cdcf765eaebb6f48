//! What the client benchmarks share: the simulator in its own process (pinned to core 1),
//! `infermeter run` pinned to core 0, and the join of the client's rows with the simulator's
//! ground truth on `x-infermeter-sim-id`. Included by `benches/client.rs` and `benches/card.rs`.

#![allow(dead_code)] // each bench uses part of it

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The simulator with no latency of its own: everything measured is the client's.
pub const ZERO_LATENCY: &[&str] = &[
    "--prefill-per-token",
    "0ms",
    "--decode-base",
    "0ms",
    "--decode-per-seq",
    "0ms",
];

pub const BIN: &str = env!("CARGO_BIN_EXE_infermeter");

pub fn taskset(core: u32) -> Option<Vec<String>> {
    let ok = Command::new("taskset")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (ok && cores >= 2).then(|| vec!["taskset".into(), "-c".into(), core.to_string()])
}

pub fn command(core: u32) -> Command {
    match taskset(core) {
        Some(prefix) => {
            let mut c = Command::new(&prefix[0]);
            c.args(&prefix[1..]).arg(BIN);
            c
        }
        None => Command::new(BIN),
    }
}

pub struct Sim {
    child: Child,
    pub url: String,
    trace: PathBuf,
}

impl Sim {
    /// Starts the simulator with `timing` (e.g. [`ZERO_LATENCY`]) and `extra` flags.
    pub fn start(dir: &Path, name: &str, timing: &[&str], extra: &[&str]) -> Sim {
        let trace = dir.join(format!("{name}-trace.jsonl"));
        let mut child = command(1)
            .args(["sim", "--listen", "127.0.0.1:0"])
            .args(timing)
            .args(["--max-running", "4096", "--kv-capacity", "100000000"])
            .arg("--trace")
            .arg(&trace)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the simulator");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the simulator prints its address");
        let url = line[line.find("http://").expect("address")..]
            .split_whitespace()
            .next()
            .expect("url")
            .to_string();
        Sim { child, url, trace }
    }

    /// Stops the simulator (SIGINT, so it flushes its trace) and returns the trace path.
    pub fn stop(mut self) -> PathBuf {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        self.trace.clone()
    }
}

pub struct Run {
    pub results: serde_json::Value,
    pub rows: PathBuf,
    /// The client's resident memory (MiB), read from /proc once a second while it ran.
    pub rss_mb: Vec<f64>,
}

pub fn run(dir: &Path, name: &str, scenario: &str, params: &[String], flags: &[&str]) -> Run {
    let out = dir.join(name);
    let mut cmd = command(0);
    cmd.arg("run").arg(scenario).arg("--out").arg(&out).args([
        "--quiet",
        "--no-plots",
        "--requests-jsonl",
    ]);
    cmd.args(flags);
    for p in params {
        cmd.args(["--param", p]);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run infermeter");
    // taskset execs the client, so the child's pid is the client's.
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let mut rss_mb = Vec::new();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the client") {
            break status;
        }
        if let Some(kb) = std::fs::read_to_string(&status_file)
            .ok()
            .and_then(|s| vm_rss_kb(&s))
        {
            rss_mb.push(kb / 1024.0);
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    assert!(
        matches!(status.code(), Some(0) | Some(1)),
        "run failed: {stderr}"
    );
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    Run {
        results: serde_json::from_str(&text).expect("results parse"),
        rows: out.join("requests.jsonl"),
        rss_mb,
    }
}

pub fn vm_rss_kb(status: &str) -> Option<f64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

pub fn percentile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Client-added TTFT per request, in ms: client TTFT minus the simulator's arrival → first
/// token time.
pub fn client_added_ttft(rows: &Path, trace: &Path) -> Vec<f64> {
    let mut server = HashMap::new();
    for line in std::fs::read_to_string(trace).unwrap_or_default().lines() {
        let Ok(t) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if let (Some(id), Some(a), Some(f)) = (
            t["id"].as_u64(),
            t["arrival_us"].as_f64(),
            t["first_token_us"].as_f64(),
        ) {
            server.insert(id, (f - a) / 1e3);
        }
    }
    std::fs::read_to_string(rows)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| {
            let s = server.get(&r["sim_id"].as_u64()?)?;
            Some(r["ttft_ms"].as_f64()? - s)
        })
        .collect()
}

pub fn stage(r: &serde_json::Value) -> &serde_json::Value {
    &r["stages"][0]
}

pub fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// `/proc/loadavg`'s 1, 5 and 15-minute figures: the machine is shared, say how busy it was.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// One request seen by both sides: the client's figures minus the simulator's ground truth.
pub struct Joined {
    /// The simulator's arrival → first token, ms.
    pub truth_ttft_ms: f64,
    /// Client TTFT (from the scheduled instant) minus the truth, ms.
    pub ttft_err_ms: f64,
    /// Client mean inter-token gap minus the simulator's mean gap between its token writes, ms.
    pub itl_mean_err_ms: f64,
    /// The simulator's own mean gap between token writes, ms: its configured step when it
    /// keeps pace, more when it falls behind (then the errors are partly its own lag).
    pub truth_gap_ms: f64,
}

/// The simulator's mean gap between token writes, ms.
fn mean_gap(tokens: &[serde_json::Value]) -> Option<f64> {
    let t: Vec<f64> = tokens
        .iter()
        .filter_map(serde_json::Value::as_f64)
        .collect();
    (t.len() >= 2).then(|| (t[t.len() - 1] - t[0]) / 1e3 / (t.len() - 1) as f64)
}

/// The client's rows joined with the simulator's trace on the simulator's request id.
pub fn joined(rows: &Path, trace: &Path) -> Vec<Joined> {
    let mut server = HashMap::new();
    for line in std::fs::read_to_string(trace).unwrap_or_default().lines() {
        let Ok(t) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(id), Some(a), Some(first), Some(tokens)) = (
            t["id"].as_u64(),
            t["arrival_us"].as_f64(),
            t["first_token_us"].as_f64(),
            t["token_us"].as_array(),
        ) else {
            continue;
        };
        if let Some(gap) = mean_gap(tokens) {
            server.insert(id, ((first - a) / 1e3, gap));
        }
    }
    std::fs::read_to_string(rows)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|r| {
            let (ttft, gap) = server.get(&r["sim_id"].as_u64()?)?;
            Some(Joined {
                truth_ttft_ms: *ttft,
                ttft_err_ms: r["ttft_ms"].as_f64()? - ttft,
                itl_mean_err_ms: r["itl_mean_ms"].as_f64()? - gap,
                truth_gap_ms: *gap,
            })
        })
        .collect()
}

/// The mean of `v` (NaN when empty).
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}
