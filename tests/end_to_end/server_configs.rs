//! Which configuration is best (docs/server.md, "Which configuration is best") through the
//! real binary, the server being `infermeter sim` with `--max-running` 1 and 16: results.json
//! ranks them, names the winner only among configurations decided to meet every SLA, a
//! `best.` assertion gates the run, and report.md and report.html show the table (and the
//! plot). The simulator's latency model is deterministic: one request at a time under 8
//! clients cannot serve as many requests per second as sixteen, whatever the machine's load.

use std::path::Path;

use crate::support::{describe, results};

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("address").port()
}

/// Configurations `mr1` and `mr16` of the simulator on `port`, one closed-loop stage of 8
/// clients, and the assertions `sla`.
fn scenario(dir: &Path, port: u16, sla: &str) -> std::path::PathBuf {
    crate::support::scenario(
        dir,
        "configs.kdl",
        &format!(
            "target \"http://127.0.0.1:{port}/v1\" {{ model \"sim-model\"; timeout \"60s\"; }}\n\
             server {{\n\
               command \"infermeter\" \"sim\" \"--listen\" \"127.0.0.1:{port}\" \"--model\" \
               \"sim-model\" \"--decode-base\" \"20ms\" \"--max-running\" \"64\"\n\
               timeout \"60s\"\n\
               config \"mr1\" {{ args \"--max-running\" \"1\"; }}\n\
               config \"mr16\" {{ args \"--max-running\" \"16\"; }}\n\
             }}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 32; output-tokens 16; }} }}\n\
             stage \"chat\" {{ dataset \"d\"; arrival \"concurrency\" clients=8; requests 32; }}\n\
             sla {{\n{sla}\n}}\n"
        ),
    )
}

fn run(path: &Path, out: &Path) -> std::process::Output {
    crate::support::command()
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--untrusted", "judge"])
        .output()
        .unwrap()
}

#[test]
fn server_configs_name_the_best_and_gate_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let path = scenario(
        dir.path(),
        port,
        "assert \"e2e.p50 < 60s\"\nassert \"best.request_throughput > 0.01/s\"",
    );
    let out = dir.path().join("out");
    let o = run(&path, &out);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let c = &r["configs"];
    assert_eq!(c["by"], "request_throughput", "{c}");
    assert_eq!(c["stage"], "chat", "{c}");
    assert_eq!(c["best"], "mr16", "{c}");
    let rows = c["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["config"].as_str().unwrap()).collect();
    assert_eq!(names, ["mr1", "mr16"], "{c}");
    for row in rows {
        assert!(row["startup_ms"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["figure"].as_f64().unwrap() > 0.0, "{row}");
    }
    let best = rows.iter().find(|r| r["config"] == "mr16").unwrap();
    assert_eq!(best["verdict"], "pass", "{best}");
    assert_eq!(best["pareto"], true, "{best}");
    // The best. assertion gated the run once, on the winner, with no stage.
    let v: Vec<&serde_json::Value> = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["expr"].as_str().unwrap().starts_with("best."))
        .collect();
    assert_eq!(v.len(), 1, "{r}");
    assert_eq!(v[0]["outcome"], "pass", "{}", v[0]);
    assert!(v[0]["stage"].is_null(), "{}", v[0]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### Configurations"), "{md}");
    assert!(md.contains("**mr16** (best)"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2>Configurations</h2>"), "{html}");
    assert!(html.contains("class=\"infermeter-plot\"") && html.contains("Pareto front"));
    let (stdout, _) = crate::support::text(&o);
    assert!(stdout.contains("Configurations (by"), "{stdout}");
    // Two configurations of the one run, compared as two runs: chat@mr1 against chat@mr16.
    let results = out.join("results.json");
    let o = crate::support::command()
        .args([
            "compare",
            results.to_str().unwrap(),
            "--configs",
            "mr1",
            "mr16",
        ])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let (stdout, _) = crate::support::text(&o);
    assert!(stdout.contains("stage chat") && stdout.contains("request_throughput"));
    let o = crate::support::command()
        .args([
            "compare",
            results.to_str().unwrap(),
            "--configs",
            "mr1",
            "nope",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
}

#[test]
fn server_configs_best_assertion_fails_and_an_undecided_config_is_never_best() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // Unmeetable on the best; and `e2e.p50 < baseline` (no baseline given) leaves every
    // stage undecided, so neither configuration may be called best.
    let path = scenario(
        dir.path(),
        port,
        "assert \"best.request_throughput > 100000/s\"",
    );
    let out = dir.path().join("out");
    let o = run(&path, &out);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["configs"]["best"], "mr16", "{}", r["configs"]);
    let path = scenario(
        dir.path(),
        port,
        "assert \"e2e.p50 < baseline\"\nassert \"best.request_throughput > 0.01/s\"",
    );
    let out = dir.path().join("out2");
    let o = run(&path, &out);
    assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
    let r = results(&out);
    let c = &r["configs"];
    assert!(c["best"].is_null(), "{c}");
    for row in c["rows"].as_array().unwrap() {
        assert_eq!(row["verdict"], "inconclusive", "{row}");
    }
    let best = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["expr"].as_str().unwrap().starts_with("best."))
        .unwrap();
    assert_eq!(best["outcome"], "inconclusive", "{best}");
}

/// A search crossed with the configurations: each one's figure is its answer, the gate's
/// verdict on it decides whether it may win, and a configuration left undecided never does.
#[test]
fn server_configs_rank_a_search_by_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let path = crate::support::scenario(
        dir.path(),
        "search.kdl",
        &format!(
            "target \"http://127.0.0.1:{port}/v1\" {{ model \"sim-model\"; timeout \"30s\"; }}\n\
             server {{\n\
               command \"infermeter\" \"sim\" \"--listen\" \"127.0.0.1:{port}\" \"--model\" \
               \"sim-model\" \"--decode-base\" \"10ms\" \"--decode-per-seq\" \"0ms\" \
               \"--prefill-per-token\" \"0us\"\n\
               timeout \"60s\"\n\
               config \"mr2\" {{ args \"--max-running\" \"2\"; }}\n\
               config \"mr8\" {{ args \"--max-running\" \"8\"; }}\n\
             }}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 32; output-tokens 16; }} }}\n\
             stage \"capacity\" {{\n\
               dataset \"d\"\n\
               search {{ rate from=5 to=80; tolerance \"25%\"; max-probes 5; max-time \"1m\"; \
               probe \"3s\"; }}\n\
               sla {{ assert \"ttft.p95 < 300ms\"; }}\n\
             }}\n"
        ),
    );
    let out = dir.path().join("out");
    let o = run(&path, &out);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let r = results(&out);
    let c = &r["configs"];
    assert_eq!(c["by"], "sla_max_rate", "{c}");
    assert_eq!(c["stage"], "capacity", "{c}");
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{c}");
    for row in rows {
        let is_best = c["best"] == row["config"];
        if is_best {
            assert_eq!(row["verdict"], "pass", "{c}");
            assert_eq!(row["decided"], true, "{c}");
        }
        if row["verdict"] == "inconclusive" {
            assert!(!is_best, "an undecided configuration was called best: {c}");
        }
    }
}
