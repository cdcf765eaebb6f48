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
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let indices: Vec<u64> = rows
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["index"]
                .as_u64()
                .unwrap()
        })
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
