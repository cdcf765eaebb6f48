//! A distributed run across real hosts: network namespaces joined by a bridge — three load
//! generators and one simulator host, each with its own address — running a coordinator and
//! three shards of one plan. Checks that every planned request is sent exactly once, that the
//! counts add up, that the merged percentiles agree with a single-process run of the same plan
//! against the same simulator (within one decode step of the simulator's fixed latencies plus
//! the histograms' precision, not a wall-clock bound), and that a shard killed mid-run makes
//! the merged result partial.
//!
//! Needs root and `ip`, and runs only with `INFERMETER_NETNS=1` (`.ci/run` sets it); otherwise
//! it says why it is skipped. The namespaces are removed even when the test fails.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support;

/// The simulator's one decode step: every latency is a whole number of these plus prefill.
const STEP_MS: f64 = 20.0;
/// HDR histograms keep 3 significant digits: a recorded value is within 0.1 % of the truth.
const HDR_PRECISION: f64 = 1e-3;

fn skip_reason() -> Option<String> {
    if std::env::var("INFERMETER_NETNS").as_deref() != Ok("1") {
        return Some("INFERMETER_NETNS=1 is not set".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (network namespaces need CAP_SYS_ADMIN)".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        _ => Some("`ip netns` is not available".into()),
    }
}

/// The namespaces and processes of the test; all removed when dropped.
struct Hosts {
    prefix: String,
    names: Vec<String>,
    children: Vec<Child>,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Hosts {
    /// A bridge in its own namespace and one namespace per host, `198.18.0.{1…}` (the
    /// benchmarking range, RFC 2544), reachable only from each other.
    fn new(hosts: &[&str]) -> Hosts {
        let prefix = format!("im{}", std::process::id());
        let mut h = Hosts {
            prefix: prefix.clone(),
            names: Vec::new(),
            children: Vec::new(),
        };
        let br = h.ns("br");
        ip(&["netns", "add", &br]);
        h.names.push(br.clone());
        ip(&["-n", &br, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &br, "link", "set", "br0", "up"]);
        for (k, host) in hosts.iter().enumerate() {
            let ns = h.ns(host);
            ip(&["netns", "add", &ns]);
            h.names.push(ns.clone());
            let peer = format!("v{k}");
            ip(&[
                "link", "add", "eth0", "netns", &ns, "type", "veth", "peer", "name", &peer,
                "netns", &br,
            ]);
            ip(&["-n", &br, "link", "set", &peer, "master", "br0", "up"]);
            let addr = format!("{}/24", Hosts::addr(k));
            ip(&["-n", &ns, "addr", "add", &addr, "dev", "eth0"]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        h
    }

    fn ns(&self, host: &str) -> String {
        format!("{}{host}", self.prefix)
    }

    fn addr(k: usize) -> String {
        format!("198.18.0.{}", k + 1)
    }

    /// `infermeter ARGS` inside `host`'s namespace.
    fn infermeter(&self, host: &str, args: &[String]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(host), support::bin()])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .env(
                "INFERMETER_COORDINATOR_TOKEN",
                super::distributed_cli::TOKEN,
            )
            .env_remove("GITHUB_STEP_SUMMARY");
        c
    }

    fn spawn(&mut self, mut c: Command) -> usize {
        let child = c.spawn().expect("spawn in a namespace");
        self.children.push(child);
        self.children.len() - 1
    }

    /// Waits for process `i`, at most `deadline`; its exit code.
    fn wait(&mut self, i: usize, deadline: Duration) -> i32 {
        let until = Instant::now() + deadline;
        loop {
            if let Some(status) = self.children[i].try_wait().expect("wait") {
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < until,
                "process {i} did not finish in {deadline:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in self.names.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

fn scenario(dir: &Path, sim: &str) -> PathBuf {
    support::scenario(
        dir,
        "distributed.kdl",
        &format!(
            r#"
scenario "netns" {{ seed 11; }}
target "http://{sim}:8000/v1" {{ model "sim-llm"; timeout "30s"; }}
dataset "chat" {{ synthetic {{ input-tokens 64 256; output-tokens 8; }} }}
warmup requests=6 clients=3
stage "steady" {{ dataset "chat"; arrival "poisson" rate=20; duration "6s"; }}
stage "closed" {{ dataset "chat"; arrival "concurrency" clients=3; requests 30; }}
sla {{ assert "ttft.p50 < 5s"; }}
"#
        ),
    )
}

fn results(dir: &Path) -> Value {
    support::results(dir)
}

/// (stage, index) of every first-turn request in a shard's requests.jsonl.
fn sent(dir: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).expect("requests.jsonl");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON row"))
        .filter(|r| r["turn"] == 0)
        .map(|r| {
            (
                r["stage"].as_str().unwrap().to_string(),
                r["index"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn shard_args(scenario: &Path, i: u32, coordinator: &str, out: &Path) -> Vec<String> {
    [
        "run",
        &scenario.display().to_string(),
        &format!("--shard={i}/3"),
        &format!("--coordinator=http://{coordinator}"),
        &format!("--out={}", out.display()),
        "--requests-jsonl",
        "--untrusted=judge",
        "--quiet",
        "--no-plots",
    ]
    .map(String::from)
    .to_vec()
}

/// Starts the simulator on host `sim`; its address once it listens.
fn start_sim(hosts: &mut Hosts) -> String {
    let sim_addr = Hosts::addr(3);
    let mut sim = hosts.infermeter(
        "sim",
        &[
            "sim",
            &format!("--listen={sim_addr}:8000"),
            "--model=sim-llm",
            "--jitter=0",
            &format!("--decode-base={STEP_MS}ms"),
            "--decode-per-seq=0us",
            "--prefill-per-token=0us",
        ]
        .map(String::from),
    );
    sim.stdout(Stdio::piped()).stderr(Stdio::null());
    let s = hosts.spawn(sim);
    let mut line = String::new();
    BufReader::new(hosts.children[s].stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the simulator prints its address once it listens");
    sim_addr
}

/// A coordinator of 3 shards on lg0, listening on `listen`, merging into `out`.
fn start_coordinator(
    hosts: &mut Hosts,
    scenario: &Path,
    listen: &str,
    out: &Path,
    extra: &[&str],
) -> usize {
    let mut args = vec![
        "coordinate".to_string(),
        scenario.display().to_string(),
        "--shards=3".into(),
        format!("--listen={listen}"),
        format!("--out={}", out.display()),
    ];
    args.extend(extra.iter().map(|a| a.to_string()));
    let mut co = hosts.infermeter("lg0", &args);
    co.stdout(Stdio::null());
    hosts.spawn(co)
}

/// One shard on each load-generator host, shard `i` writing into `dirs[i]`.
fn start_shards(
    hosts: &mut Hosts,
    scenario: &Path,
    coordinator: &str,
    dirs: &[PathBuf],
    stderr: fn() -> Stdio,
) -> Vec<usize> {
    (0..3u32)
        .map(|i| {
            let mut c = hosts.infermeter(
                &format!("lg{i}"),
                &shard_args(scenario, i, coordinator, &dirs[i as usize]),
            );
            c.stdout(Stdio::null()).stderr(stderr());
            hosts.spawn(c)
        })
        .collect()
}

/// The distributed run: a coordinator on lg0, one shard on each load-generator host, every
/// one exiting 0; the merged result and the shards' directories.
fn distributed_run(hosts: &mut Hosts, dir: &Path, scenario: &Path) -> (Value, Vec<PathBuf>) {
    let coordinator = format!("{}:7777", Hosts::addr(0));
    let merged_dir = dir.join("merged");
    let co = start_coordinator(hosts, scenario, &coordinator, &merged_dir, &[]);
    let shard_dirs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("shard-{i}"))).collect();
    let shards = start_shards(hosts, scenario, &coordinator, &shard_dirs, Stdio::inherit);
    let codes: Vec<i32> = shards
        .iter()
        .map(|&i| hosts.wait(i, Duration::from_secs(300)))
        .collect();
    let co_code = hosts.wait(co, Duration::from_secs(120));
    let merged = results(&merged_dir);
    assert_eq!(
        codes,
        [0, 0, 0],
        "every shard exits with the merged gate: {merged:#}"
    );
    assert_eq!(co_code, 0);
    assert_eq!(merged["shards"]["count"], 3);
    assert!(merged["shards"]["missing"].is_null());
    (merged, shard_dirs)
}

/// Every planned request exactly once, and the counts add up.
fn each_request_sent_once(merged: &Value, shard_dirs: &[PathBuf]) {
    let mut seen: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for d in shard_dirs {
        for (stage, index) in sent(d) {
            assert!(
                seen.entry(stage.clone()).or_default().insert(index),
                "{stage} request {index} sent twice"
            );
        }
    }
    for stage in ["steady", "closed"] {
        let m = support::stage(merged, stage);
        let planned = m["planned"]["requests"].as_u64().unwrap();
        let want: BTreeSet<u64> = (0..planned).collect();
        assert_eq!(seen[stage], want, "{stage}: the shards' union is the plan");
        let sum: u64 = shard_dirs
            .iter()
            .map(|d| {
                support::stage(&results(d), stage)["requests"]["sent"]
                    .as_u64()
                    .unwrap()
            })
            .sum();
        assert_eq!(m["requests"]["sent"].as_u64(), Some(planned));
        assert_eq!(sum, planned, "{stage}: shard counts add up");
        assert_eq!(m["requests"]["failed"], 0, "{stage}");
    }
    assert_eq!(seen["warmup"].len(), 6);
}

/// The same plan in one process against the same simulator: the same counts. Latencies are
/// held to what no machine's load can change: the merged median lies between the shards'
/// medians (the merge is a mixture of their histograms; within their precision), and the
/// median request, merged or single, takes at least the 7 decode steps the simulator waits
/// (it never answers early). Comparing the merged and single medians with each other, as this did
/// (within one 20 ms step), failed on a loaded machine: each run's load is its own.
fn same_as_one_process(
    hosts: &mut Hosts,
    dir: &Path,
    scenario: &Path,
    merged: &Value,
    shard_dirs: &[PathBuf],
) {
    let single_dir = dir.join("single");
    let mut one = hosts.infermeter(
        "lg0",
        &[
            "run".to_string(),
            scenario.display().to_string(),
            format!("--out={}", single_dir.display()),
            "--untrusted=judge".into(),
            "--quiet".into(),
            "--no-plots".into(),
        ],
    );
    one.stdout(Stdio::null());
    let one = hosts.spawn(one);
    assert_eq!(hosts.wait(one, Duration::from_secs(300)), 0);
    let single = results(&single_dir);
    for stage in ["steady", "closed"] {
        let (m, s) = (
            support::stage(merged, stage),
            support::stage(&single, stage),
        );
        assert_eq!(m["requests"]["sent"], s["requests"]["sent"], "{stage}");
        assert_eq!(m["tokens"]["output"], s["tokens"]["output"], "{stage}");
        // No prefill: the first of the 8 tokens comes at once, each next one a step later
        // (the client may read two in one gap, so only the whole request has a floor).
        for (metric, steps) in [("ttft_ms", 0.0), ("itl_ms", 0.0), ("e2e_ms", 7.0)] {
            let (a, b) = (
                m["latency"][metric]["p50"].as_f64().unwrap(),
                s["latency"][metric]["p50"].as_f64().unwrap(),
            );
            let floor = steps * STEP_MS * (1.0 - HDR_PRECISION);
            assert!(
                a >= floor && b >= floor,
                "{stage} {metric} p50: merged {a} ms, single {b} ms, under {floor} ms"
            );
            let shards: Vec<f64> = shard_dirs
                .iter()
                .map(|d| support::stage(&results(d), stage)["latency"][metric]["p50"].as_f64())
                .map(Option::unwrap)
                .collect();
            let low = shards.iter().copied().fold(f64::INFINITY, f64::min);
            let high = shards.iter().copied().fold(0.0, f64::max);
            assert!(
                a >= low * (1.0 - 2.0 * HDR_PRECISION) && a <= high * (1.0 + 2.0 * HDR_PRECISION),
                "{stage} {metric} p50: merged {a} ms outside the shards' {shards:?}"
            );
        }
    }
}

/// A shard killed mid-run: the merged result says it is partial.
fn a_killed_shard_leaves_a_partial_merge(hosts: &mut Hosts, dir: &Path, scenario: &Path) {
    let killed_merged = dir.join("killed-merged");
    let co2 = format!("{}:7778", Hosts::addr(0));
    let c = start_coordinator(hosts, scenario, &co2, &killed_merged, &["--wait=5s"]);
    let dirs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("killed-{i}"))).collect();
    let procs = start_shards(hosts, scenario, &co2, &dirs, Stdio::null);
    wait_for_steady_rows(&dirs[2]);
    hosts.children[procs[2]].kill().expect("kill shard 2");
    let codes: Vec<i32> = procs[..2]
        .iter()
        .map(|&i| hosts.wait(i, Duration::from_secs(300)))
        .collect();
    assert_eq!(
        hosts.wait(c, Duration::from_secs(120)),
        3,
        "a partial run exits 3"
    );
    assert_eq!(
        codes,
        [3, 3],
        "the surviving shards exit with the merged verdict"
    );
    let partial = results(&killed_merged);
    assert_eq!(partial["shards"]["missing"], serde_json::json!([2]));
    assert_eq!(partial["interrupted"], true);
    assert_eq!(partial["passed"], false);
    for stage in ["steady", "closed"] {
        let v = &support::stage(&partial, stage)["validity"];
        assert_eq!(v["trusted"], false, "{stage}");
        let reasons = v["reasons"].to_string();
        assert!(reasons.contains("partial"), "{stage}: {reasons}");
    }
}

/// Waits until shard 2's rows of the steady stage reach the disk (mid-stage: the row buffer
/// fills well before the stage's end).
fn wait_for_steady_rows(dir: &Path) {
    let until = Instant::now() + Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap_or_default();
        if text.contains("\"stage\":\"steady\"") {
            break;
        }
        assert!(
            Instant::now() < until,
            "shard 2 never reached the steady stage"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn shards_on_three_hosts_send_the_plan_once_and_merge_exactly() {
    if let Some(why) = skip_reason() {
        eprintln!("skipped: {why}");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut hosts = Hosts::new(&["lg0", "lg1", "lg2", "sim"]);
    let sim_addr = start_sim(&mut hosts);
    let scenario = scenario(dir, &sim_addr);
    let (merged, shard_dirs) = distributed_run(&mut hosts, dir, &scenario);
    each_request_sent_once(&merged, &shard_dirs);
    same_as_one_process(&mut hosts, dir, &scenario, &merged, &shard_dirs);
    a_killed_shard_leaves_a_partial_merge(&mut hosts, dir, &scenario);
}
