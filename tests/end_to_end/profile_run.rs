//! Load profiles end to end against the embedded simulator of known capacity: 4 sequences ×
//! 16 output tokens × 10 ms decode steps ≈ 25 req/s. The sweep's knee must sit below that
//! capacity and the rate search's answer near it. Stages are 2 s: the logic, not the length,
//! is under test, so bounds are generous.

use serde_json::Value;

const CAPACITY: f64 = 25.0;

fn run(scenario: &str, param: &str) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    // Short points and probes: the logic, not the gate, is under test.
    let out = crate::support::command()
        .args(["run", scenario, "--quiet", "--untrusted", "judge"])
        .args(["-p", param, "--out"])
        .arg(dir.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = std::fs::read_to_string(dir.path().join("results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e}): {stderr}"));
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    (serde_json::from_str(&text).unwrap(), report)
}

#[test]
fn sweep_finds_the_knee_below_capacity() {
    let (r, report) = run("scenarios/latency-profile.kdl", "point=2s");
    let stages = r["stages"].as_array().unwrap();
    let names: Vec<&str> = stages.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "profile@10rps",
            "profile@20rps",
            "profile@30rps",
            "profile@45rps",
            "profile@60rps"
        ]
    );
    for s in stages {
        assert_eq!(s["profile"]["group"], "profile");
    }
    // Far past capacity the server cannot keep up.
    assert_eq!(
        stages[4]["profile"]["saturated"], true,
        "{:#}",
        stages[4]["profile"]
    );
    assert_eq!(stages[0]["profile"]["saturated"], false);
    // Throughput plateaus at the modelled capacity (16 tokens a request).
    let top = stages[4]["throughput"]["output_tokens_per_s"]
        .as_f64()
        .unwrap()
        / 16.0;
    assert!(
        (0.6 * CAPACITY..1.3 * CAPACITY).contains(&top),
        "plateau {top} req/s"
    );
    let knee_line = report
        .lines()
        .find(|l| l.starts_with("#### sweep `profile`"))
        .unwrap_or_else(|| panic!("no profile section:\n{report}"));
    let knee: f64 = knee_line
        .split("knee at ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no knee in `{knee_line}`"));
    assert!((0.35 * CAPACITY..=CAPACITY).contains(&knee), "knee {knee}");
}

#[test]
fn search_brackets_the_sla_limit_near_capacity() {
    let (r, report) = run("scenarios/capacity-search.kdl", "probe=2s");
    let s = &r["searches"][0];
    assert_eq!(s["group"], "capacity");
    let answer = s["answer_rate_per_s"].as_f64().expect("an answer");
    let probes = s["probes"].as_array().unwrap();
    assert!(probes.len() <= 10);
    // TTFT p99 < 150 ms holds somewhat below saturation, never well above it.
    assert!(
        (0.4 * CAPACITY..1.2 * CAPACITY).contains(&answer),
        "answer {answer}"
    );
    let reason = s["stop_reason"].as_str().unwrap();
    if reason == "converged" {
        let high = s["bracket_high"].as_f64().unwrap();
        assert!((high - answer) / answer <= 0.15 + 1e-9, "{answer}..{high}");
    } else {
        assert_eq!(reason, "max_probes");
    }
    // Every probe is recorded with its verdict, and the verdicts agree with the bracket.
    for p in probes {
        let rate = p["rate_per_s"].as_f64().unwrap();
        if p["passed"].as_bool().unwrap() {
            assert!(rate <= answer);
        } else if let Some(high) = s["bracket_high"].as_f64() {
            assert!(rate >= high);
        }
    }
    // Probes are stages too, and the search's SLA is judged on its answer.
    let probe_stages = r["stages"].as_array().unwrap().len();
    assert_eq!(probe_stages, probes.len());
    assert!(
        r["sla"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["stage"] == "capacity")
    );
    assert!(report.contains("Search `capacity`"));
}
