//! The real binary with `warmup until="stable"` against the in-process simulator (no GPU
//! telemetry, so the TTFT rule decides): a steady simulator and a lenient threshold end the
//! warm-up early as `latency_stable`; an impossible threshold runs it to `max`. The result and
//! the report say which, and the measured stage still runs afterwards.

use std::path::Path;

use serde_json::Value;

fn scenario(warmup: &str) -> String {
    format!(
        r#"
scenario "warmup-until" {{ seed 5; }}
target "sim" {{
    decode-base "2ms"
    prefill-per-token "10us"
    max-running 16
}}
dataset "d" {{
    synthetic {{
        input-tokens 32
        output-tokens 4
    }}
}}
{warmup}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 10
}}
"#
    )
}

fn run(dir: &Path, text: &str) -> (i32, String, Value, String) {
    let path = dir.join("t.kdl");
    std::fs::write(&path, text).unwrap();
    let out_dir = dir.join("out");
    let out = crate::support::command()
        .args(["run", "-q", "--no-plots", "--untrusted", "judge", "--out"])
        .arg(&out_dir)
        .arg(&path)
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let results = std::fs::read_to_string(out_dir.join("results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e}): {stderr}"));
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap_or_default();
    (
        out.status.code().unwrap_or(-1),
        stderr,
        serde_json::from_str(&results).expect("results.json is JSON"),
        report,
    )
}

#[test]
fn a_steady_server_ends_the_warmup_early_as_latency_stable() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, results, report) = run(
        dir.path(),
        &scenario(r#"warmup until="stable" max="60s" clients=2 check-every="200ms" ttft-cv=1.0"#),
    );
    assert_eq!(code, 0, "{stderr}");
    let w = &results["warmup"];
    let end = &w["warmup_end"];
    assert_eq!(end["reason"], "latency_stable", "{end}");
    let at = end["at_s"].as_f64().unwrap();
    // The rule, not `max="60s"`, ended it (the reason says so); when is the machine's business.
    assert!(at > 0.0 && at < 60.0, "ended at {at} s");
    assert!(end["checks"].as_u64().unwrap() >= 1, "{end}");
    assert!(
        end["detail"]
            .as_str()
            .unwrap()
            .contains("coefficient of variation"),
        "{end}"
    );
    assert!(w["requests"]["ok"].as_u64().unwrap() >= 10, "{w}");
    // The measured stage ran after it, unaffected.
    assert_eq!(results["stages"][0]["requests"]["ok"], 10);
    assert!(!results["interrupted"].as_bool().unwrap());
    assert!(
        report.contains("until stable: latency\\_stable after"),
        "{report}"
    );
}

#[test]
fn an_impossible_threshold_runs_to_max() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, results, report) = run(
        dir.path(),
        &scenario(
            r#"warmup until="stable" max="2s" clients=2 check-every="200ms" ttft-cv=0.0000001"#,
        ),
    );
    assert_eq!(code, 0, "{stderr}");
    let end = &results["warmup"]["warmup_end"];
    assert_eq!(end["reason"], "max_duration", "{end}");
    let at = end["at_s"].as_f64().unwrap();
    assert!((1.9..30.0).contains(&at), "ended at {at} s, max is 2 s");
    assert!(end["checks"].as_u64().unwrap() >= 1, "{end}");
    assert!(
        end["detail"].as_str().unwrap().contains('>'),
        "the last verdict says what failed: {end}"
    );
    assert_eq!(results["stages"][0]["requests"]["ok"], 10);
    assert!(
        report.contains("until stable: max\\_duration after"),
        "{report}"
    );
}

#[test]
fn a_plain_warmup_has_no_end_record() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, results, report) = run(dir.path(), &scenario("warmup requests=4 clients=2"));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(results["warmup"]["requests"]["ok"], 4);
    assert!(results["warmup"].get("warmup_end").is_none());
    assert!(!report.contains("until stable"));
}
