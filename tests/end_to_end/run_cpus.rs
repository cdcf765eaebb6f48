//! `run --cpus`: the client restricted to some CPUs, with a dispatcher per CPU on interleaved
//! slices of the schedule, still sends exactly the plan; a CPU set the process may not use is
//! a usage error.

use std::collections::BTreeSet;

use crate::support::*;

const SCENARIO: &str = r#"
scenario "cpus" { seed 3; }
target "sim" { timeout "10s"; decode-base "1ms"; decode-per-seq "0ms"; prefill-per-token "1us"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "open" { dataset "d"; arrival "constant" rate=200; requests 60; }
"#;

#[test]
fn dispatchers_on_interleaved_slices_send_every_planned_request_once() {
    // Two dispatchers where the machine has two CPUs; the same check with one elsewhere.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", SCENARIO);
    let out = dir.path().join("out");
    let n = cpus.to_string();
    let o = run(&path, &out, &["--cpus", &n, "--requests-jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let s = stage(&r, "open");
    assert_eq!(s["requests"]["sent"], 60, "{s}");
    assert_eq!(s["requests"]["ok"], 60, "{s}");
    let indices: Vec<u64> = rows(&out)
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    let unique: BTreeSet<u64> = indices.iter().copied().collect();
    assert_eq!(indices.len(), 60, "one row per request");
    assert_eq!(
        unique,
        (0..60).collect(),
        "each planned request exactly once"
    );
}

#[test]
fn cpus_the_process_may_not_use_are_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", SCENARIO);
    for bad in ["100000", "0-1023"] {
        let o = run(&path, &dir.path().join("out"), &["--cpus", bad]);
        assert_eq!(o.status.code(), Some(2), "--cpus {bad}: {}", describe(&o));
        let (_, stderr) = text(&o);
        assert!(stderr.contains("--cpus"), "{stderr}");
    }
    let o = run(&path, &dir.path().join("out"), &["--cpus", "two"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
}

/// Open and closed loops and sessions, each with a fixed request count: what is sent does not
/// depend on how many shards send it.
const SHARDED: &str = r#"
scenario "shards" { seed 5; }
target "sim" { timeout "10s"; decode-base "1ms"; decode-per-seq "0ms"; prefill-per-token "1us"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
dataset "chat" {
    synthetic { input-tokens 24; output-tokens 6 }
    session turns=2 think-time="5ms"
}
stage "open" { dataset "d"; arrival "constant" rate=300; requests 90; }
stage "closed" { dataset "d"; arrival "concurrency" clients=3; requests 45; }
stage "sessions" { dataset "chat"; arrival "poisson" rate=40; requests 8; }
"#;

/// Every row of the run's `requests.jsonl`.
fn rows(out: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Whether this machine has one CPU only, so no second shard (said on stderr).
fn one_cpu() -> bool {
    let one = std::thread::available_parallelism().map_or(1, |n| n.get()) < 2;
    if one {
        eprintln!("skipped: one CPU, no second shard");
    }
    one
}

/// Each request's row, by (stage, index, turn), with the fields the plan and the simulator
/// decide (not its timings).
fn planned_rows(out: &std::path::Path) -> std::collections::BTreeMap<(String, u64, u64), String> {
    rows(out)
        .iter()
        .map(|r| {
            let key = (
                r["stage"].as_str().unwrap().to_string(),
                r["index"].as_u64().unwrap(),
                r["turn"].as_u64().unwrap(),
            );
            let fields = [
                "input_tokens",
                "planned_output_tokens",
                "output_tokens",
                "error",
            ]
            .map(|f| r[f].to_string())
            .join(" ");
            (key, fields)
        })
        .collect()
}

#[test]
fn two_shards_send_the_same_records_as_one() {
    if one_cpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", SHARDED);
    let mut rows = Vec::new();
    let mut summaries = Vec::new();
    for cpus in ["1", "2"] {
        let out = dir.path().join(format!("out{cpus}"));
        let o = run(&path, &out, &["--cpus", cpus, "--requests-jsonl"]);
        assert_eq!(o.status.code(), Some(0), "--cpus {cpus}: {}", describe(&o));
        rows.push(planned_rows(&out));
        summaries.push(results(&out));
    }
    assert_eq!(rows[0].len(), 90 + 45 + 16, "one row per request and turn");
    assert_eq!(
        rows[0], rows[1],
        "the same requests, each with the same tokens"
    );
    for name in ["open", "closed", "sessions"] {
        let (one, two) = (stage(&summaries[0], name), stage(&summaries[1], name));
        for key in ["sent", "ok", "failed"] {
            assert_eq!(one["requests"][key], two["requests"][key], "{name} {key}");
        }
        assert_eq!(
            one["tokens"]["output"], two["tokens"]["output"],
            "{name}: the shards' records fold into one stage"
        );
        let peak = two["client"]["peak_in_flight"].as_u64().unwrap();
        assert!(
            peak >= 1,
            "{name}: every shard's in-flight count is summed: {two}"
        );
    }
}

/// Failures of two kinds, two classes and sessions of three turns: what each shard's fold
/// thread counts must add up, once merged, to what the rows say one by one.
const FOLDED: &str = r#"
scenario "shard-fold" { seed 7; }
target "sim" {
    timeout "10s"; decode-base "1ms"; decode-per-seq "0ms"; prefill-per-token "1us"
    fault-http-503 0.15; fault-stream-cut 0.1
}
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
dataset "chat" {
    synthetic { input-tokens 24; output-tokens 6 }
    session turns=3 think-time="2ms"
}
stage "open" {
    dataset "d"
    arrival "constant" rate=400
    requests 200
    class "a" weight=1
    class "b" weight=2
}
stage "sessions" { dataset "chat"; arrival "poisson" rate=60; requests 12; }
"#;

#[test]
fn the_shards_partials_merge_to_what_the_rows_say() {
    if one_cpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", FOLDED);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--cpus", "2", "--requests-jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let rows = rows(&out);
    for name in ["open", "sessions"] {
        let s = stage(&r, name);
        let mine: Vec<&serde_json::Value> = rows.iter().filter(|x| x["stage"] == name).collect();
        let ok: Vec<_> = mine.iter().filter(|x| x["error"].is_null()).collect();
        let count = |f: &dyn Fn(&serde_json::Value) -> Option<String>| {
            let mut m = std::collections::BTreeMap::<String, u64>::new();
            for x in &mine {
                if let Some(k) = f(x) {
                    *m.entry(k).or_default() += 1;
                }
            }
            m
        };
        assert_eq!(s["requests"]["sent"], mine.len(), "{name}: {s}");
        assert_eq!(s["requests"]["ok"], ok.len(), "{name}");
        let errors = count(&|x| x["error"].as_str().map(str::to_string));
        assert!(!errors.is_empty(), "{name}: the faults fail some requests");
        assert_eq!(s["requests"]["errors"], serde_json::json!(errors), "{name}");
        let output: u64 = ok
            .iter()
            .map(|x| x["output_tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(s["tokens"]["output"], output, "{name}");
        assert_eq!(s["latency"]["ttft_ms"]["count"], ok.len(), "{name}");
        let timeline = |k: &str| -> u64 {
            let points = s["timeline"].as_array().unwrap();
            points.iter().map(|p| p[k].as_u64().unwrap_or(0)).sum()
        };
        assert_eq!(timeline("sent"), mine.len() as u64, "{name}");
        assert_eq!(timeline("failed"), (mine.len() - ok.len()) as u64, "{name}");
        if name == "open" {
            let classes = count(&|x| x["class"].as_str().map(str::to_string));
            for g in s["groups"].as_array().unwrap() {
                let label = g["label"].as_str().unwrap();
                assert_eq!(g["summary"]["requests"]["sent"], classes[label], "{label}");
            }
        } else {
            let turns = count(&|x| Some(x["turn"].to_string()));
            for t in s["per_turn"].as_array().unwrap() {
                assert_eq!(t["sent"], turns[&t["turn"].to_string()], "turn {t}");
            }
        }
    }
}

#[test]
fn abort_on_fail_sees_the_shards_partials_while_the_stage_runs() {
    if one_cpu() {
        return;
    }
    // Planned: 40 req/s for 60 s, every request failing. With two shards the live check
    // reads only what their fold threads hand over (once a second): the stage must still
    // stop long before its minute.
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        r#"
scenario "abort" { seed 1; }
target "sim" { fault-http-503 1.0; }
dataset "d" { synthetic { input-tokens 16; output-tokens 8; } }
stage "s" { dataset "d"; arrival "constant" rate=40; duration "60s"; }
sla {
    assert "error_rate < 5%" abort-on-fail=#true
    abort-min-samples 10
}
"#,
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--cpus", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    let s = stage(&r, "s");
    let sent = s["requests"]["sent"].as_u64().unwrap();
    assert!(
        (10..2400).contains(&sent),
        "sent {sent} of the planned 2400"
    );
    let why = s["aborted"]
        .as_str()
        .expect("the stage records why it stopped");
    assert!(why.contains("error_rate < 5%"), "{why}");
    assert_eq!(
        s["requests"]["failed"], sent,
        "every record of both shards merged"
    );
}
