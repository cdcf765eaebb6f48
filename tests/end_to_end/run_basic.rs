//! `infermeter run` end to end: the real binary against the in-process simulator over real
//! HTTP — stage accounting, warm-up exclusion, exit codes, reports.

use crate::support::*;

const FAST_SIM: &str = r#"
target "sim" {
    timeout "10s"
    decode-base "2ms"
    decode-per-seq "0ms"
    prefill-per-token "5us"
}
dataset "d" {
    synthetic {
        input-tokens 32 64
        output-tokens 8 16
    }
}
"#;

#[test]
fn open_and_closed_stages_add_up_and_warmup_is_separate() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"scenario "accounting" {{ seed 7; }}
{FAST_SIM}
warmup requests=6 clients=2
stage "open" {{
    dataset "d"
    arrival "poisson" rate=40
    duration "1s"
}}
stage "closed" {{
    dataset "d"
    arrival "concurrency" clients=3
    requests 24
}}
sla {{ assert "error_rate < 20%"; }}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["passed"], true);
    assert_eq!(r["interrupted"], false);
    assert_eq!(
        r["warmup"]["requests"]["sent"], 6,
        "warm-up ran its own requests"
    );
    let stages = r["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2, "warm-up is not a measured stage");

    let open = stage(&r, "open");
    let sent = open["requests"]["sent"].as_u64().unwrap();
    assert_eq!(
        Some(sent),
        open["planned"]["requests"].as_u64(),
        "every planned request was sent"
    );
    assert!(sent > 20, "about 40 arrivals expected in 1 s, got {sent}");
    let closed = stage(&r, "closed");
    assert_eq!(closed["requests"]["sent"], 24);
    for s in stages {
        let req = &s["requests"];
        assert_eq!(
            req["sent"].as_u64().unwrap(),
            req["ok"].as_u64().unwrap() + req["failed"].as_u64().unwrap()
        );
        assert_eq!(s["latency"]["ttft_ms"]["count"], req["ok"]);
        assert!(s["latency"]["ttft_ms"]["p50"].as_f64().unwrap() > 0.0);
        assert!(s["latency"]["itl_ms"]["count"].as_u64().unwrap() > 0);
        assert!(s["tokens"]["output"].as_u64().unwrap() >= 8 * req["ok"].as_u64().unwrap());
        assert_eq!(
            s["tokens"]["from_usage"], req["ok"],
            "the simulator reports usage"
        );
        // The machine's own health is part of the verdict: CPU steal, read from /proc/stat.
        if cfg!(target_os = "linux") {
            let steal = s["client"]["steal_percent"]
                .as_f64()
                .expect("steal_percent");
            assert!((0.0..=100.0).contains(&steal), "{steal}");
        }
    }
    // One verdict per (assertion, stage).
    assert_eq!(r["sla"].as_array().unwrap().len(), 2);

    // The result names the same workload as `infermeter plan`.
    let plan = std::process::Command::new(bin())
        .args(["plan"])
        .arg(&path)
        .output()
        .unwrap();
    let plan_text = String::from_utf8_lossy(&plan.stdout);
    assert!(plan_text.contains(r["plan_hash"].as_str().unwrap()));

    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("open") && report.contains("closed"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("PASSED"));
}

#[test]
fn impossible_sla_exits_1_and_names_the_assertion() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{FAST_SIM}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 10
}}
sla {{
    assert "ttft.p50 < 1us"
    assert "error_rate < 1%"
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let junit = dir.path().join("junit.xml");
    let o = run(&path, &out, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["passed"], false);
    let failed: Vec<_> = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["outcome"] == "fail")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["expr"], "ttft.p50 < 1us");
    // No error in 10 requests cannot show an error rate under 1 %: undecided, not passed.
    let error_rate = &r["sla"][1];
    assert_eq!(error_rate["outcome"], "inconclusive", "{error_rate}");
    assert_eq!(r["outcome"], "fail", "a failure outweighs an undecided one");
    assert!(failed[0]["observed"].as_f64().unwrap() > failed[0]["threshold"].as_f64().unwrap());
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("ttft.p50 < 1us"));
    let junit = std::fs::read_to_string(junit).unwrap();
    assert!(junit.contains("ttft.p50 &lt; 1us") || junit.contains("ttft.p50 < 1us"));
    assert!(junit.contains("<failure"));
}

#[test]
fn invalid_assertion_exits_2_with_a_pointed_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{FAST_SIM}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=1
    requests 1
}}
sla {{ assert "ttfb.p95 < 200ms"; }}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let o = run(&path, &dir.path().join("out"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did you mean `ttft`"), "{err}");
    assert!(err.contains("s.kdl:20:15"), "{err}");
    assert!(!dir.path().join("out").join("results.json").exists());
}

#[test]
fn unreachable_target_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    // Port 9 (discard) on loopback: nothing listens there in a test environment.
    let text = r#"
target "http://127.0.0.1:9/v1" {
    model "m"
    timeout "2s"
}
dataset "d" { synthetic { input-tokens 8; output-tokens 4; } }
stage "s" {
    dataset "d"
    arrival "concurrency" clients=1
    requests 1
}
"#;
    let path = scenario(dir.path(), "s.kdl", text);
    let o = run(&path, &dir.path().join("out"), &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot reach the target"));
}

#[test]
fn abort_on_fail_stops_the_run_after_the_failing_stage() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"{FAST_SIM}
stage "first" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 6
    sla {{ assert "ttft.p50 < 1us" abort-on-fail=#true; }}
}}
stage "second" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 6
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["interrupted"], true);
    assert!(r["error"].as_str().unwrap().contains("ttft.p50 < 1us"));
    let stages = r["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1, "the second stage never ran");
    assert_eq!(r["sla"][0]["passed"], false);
}

#[test]
fn poll_idle_is_held_and_recorded_or_the_run_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"scenario "poll-idle" {{ seed 3; }}
{FAST_SIM}
stage "open" {{
    dataset "d"
    arrival "constant" rate=50
    requests 10
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--poll-idle"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let client = &stage(&r, "open")["client"];
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    // Root (or a granted device) can hold the request; anyone else gets a warning, not a failure.
    let can_hold = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")
        .is_ok();
    if can_hold {
        assert_eq!(client["poll_idle"], true, "{client}");
        assert!(report.contains("kept polling"), "{report}");
    } else {
        assert!(client.get("poll_idle").is_none(), "{client}");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("warning: --poll-idle"), "{stderr}");
    }
}
