//! The gate's three outcomes through the real binary: an assertion passes when its whole
//! confidence interval meets the threshold, fails when the whole interval breaks it, and is
//! inconclusive otherwise (too few samples, an untrusted stage); what an inconclusive one does
//! to the exit code is settable; rounds decide across rounds.

use crate::support::{describe, results, run, scenario};

fn text(sla: &str, requests: u32, extra_sla: &str) -> String {
    format!(
        r#"
scenario "gate" {{ seed 9; }}
target "sim" {{
    decode-base "2ms"
    decode-per-seq "0ms"
    prefill-per-token "5us"
}}
dataset "d" {{ synthetic {{ input-tokens 32; output-tokens 8; }} }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=4
    requests {requests}
}}
sla {{
    assert "{sla}"
    {extra_sla}
}}
"#
    )
}

/// Runs the scenario and returns (exit code, results.json).
fn gate(sla: &str, requests: u32, extra_sla: &str, flags: &[&str]) -> (i32, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "g.kdl", &text(sla, requests, extra_sla));
    let out = dir.path().join("out");
    let o = run(&path, &out, flags);
    let code = o.status.code().expect("exited");
    assert!(out.join("results.json").is_file(), "{}", describe(&o));
    (code, results(&out))
}

#[test]
fn a_whole_interval_under_the_threshold_passes_and_over_it_fails() {
    let (code, r) = gate("ttft.p50 < 10s", 40, "", &[]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["outcome"], "pass");
    let v = &r["sla"][0];
    assert_eq!(v["outcome"], "pass");
    let (low, high) = (
        v["interval"]["low"].as_f64().unwrap(),
        v["interval"]["high"].as_f64().unwrap(),
    );
    let observed = v["observed"].as_f64().unwrap();
    assert!(low <= observed && observed <= high, "{v}");

    let (code, r) = gate("ttft.p50 < 1us", 40, "", &[]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["outcome"], "fail");
    assert_eq!(r["sla"][0]["outcome"], "fail");
    assert_eq!(r["passed"], false);
}

#[test]
fn too_few_samples_are_inconclusive_and_the_policy_decides_the_exit_code() {
    // 20 requests bound a p99 from below but not from above: under 10 s cannot be shown.
    let (code, r) = gate("ttft.p99 < 10s", 20, "", &[]);
    assert_eq!(code, 4, "{r}");
    assert_eq!(r["outcome"], "inconclusive");
    let v = &r["sla"][0];
    assert_eq!(v["outcome"], "inconclusive");
    assert!(
        v["note"].as_str().unwrap().contains("too few requests"),
        "{v}"
    );
    assert_eq!(v["more"]["of"], "requests");
    assert_eq!(v["more"]["count"], 299 - 20);
    assert_eq!(r["sla_policy"]["inconclusive"], "inconclusive");

    let (code, r) = gate("ttft.p99 < 10s", 20, "", &["--inconclusive", "pass"]);
    assert_eq!((code, r["outcome"].as_str()), (0, Some("pass")));
    let (code, r) = gate("ttft.p99 < 10s", 20, "", &["--inconclusive", "fail"]);
    assert_eq!((code, r["outcome"].as_str()), (1, Some("fail")));
    // The scenario may say it too; the command line wins.
    let (code, _) = gate("ttft.p99 < 10s", 20, r#"inconclusive "fail""#, &[]);
    assert_eq!(code, 1);
    let (code, _) = gate(
        "ttft.p99 < 10s",
        20,
        r#"inconclusive "fail""#,
        &["--inconclusive", "pass"],
    );
    assert_eq!(code, 0);
    // But few samples still show a p99 over a limit its lower bound already breaks.
    let (code, r) = gate("ttft.p99 < 1us", 20, "", &[]);
    assert_eq!((code, r["sla"][0]["outcome"].as_str()), (1, Some("fail")));
}

/// Whether a stage is untrusted depends on the machine; the policy's effect is tested on fixed
/// summaries in `tests/library/sla_evaluate.rs`. Here: the setting reaches the results.
#[test]
fn the_policy_is_recorded_with_the_results() {
    let (_, r) = gate(
        "ttft.p50 < 10s",
        20,
        r#"confidence "90%""#,
        &["--untrusted", "inconclusive"],
    );
    assert_eq!(r["sla_policy"]["untrusted"], "inconclusive");
    assert_eq!(r["sla_policy"]["confidence"], 0.9);
    assert!(r["sla"][0]["interval"]["confidence"].as_f64().unwrap() >= 0.9);
    assert_eq!(r["schema_version"], 3);
}

#[test]
fn the_summary_report_and_junit_state_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "g.kdl", &text("ttft.p99 < 10s", 20, ""));
    let out = dir.path().join("out");
    let junit = dir.path().join("junit.xml");
    let o = run(&path, &out, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("INCONCLUSIVE  gate") && stdout.contains("1 of 1 SLA assertions undecided"),
        "{stdout}"
    );
    assert!(
        stdout.contains("about 279 more requests would likely decide it"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.starts_with("## ❔ gate: INCONCLUSIVE"), "{report}");
    let junit = std::fs::read_to_string(junit).unwrap();
    assert!(
        junit.contains("<skipped message=\"inconclusive:"),
        "{junit}"
    );
    assert!(junit.contains("skipped=\"1\""), "{junit}");
}

#[test]
fn rounds_repeat_the_stage_and_decide_across_rounds() {
    let (code, r) = gate("ttft.p50 < 10s", 20, "", &["--rounds", "3"]);
    assert_eq!(code, 0, "{r}");
    let stage = &r["stages"][0];
    let rounds = stage["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 3);
    // Same plan, same requests in every round.
    assert!(rounds.iter().all(|x| x["requests"]["sent"] == 20));
    assert_eq!(stage["requests"]["sent"], 60);
    assert_eq!(stage["latency"]["ttft_ms"]["intervals"]["method"], "rounds");
    // Three rounds are too few for the sign test at 95 % (six are needed): the pooled
    // samples' interval, stretched over every round's own p50.
    let v = &r["sla"][0];
    let (low, high) = (
        v["interval"]["low"].as_f64().unwrap(),
        v["interval"]["high"].as_f64().unwrap(),
    );
    for round in rounds {
        let p50 = round["latency"]["ttft_ms"]["p50"].as_f64().unwrap();
        assert!(low <= p50 && p50 <= high, "{p50} outside [{low}, {high}]");
    }
    let (code, six) = gate("ttft.p50 < 10s", 20, "", &["--rounds", "6"]);
    assert_eq!(code, 0, "{six}");
    assert_eq!(six["sla"][0]["interval"]["across"], "rounds");
    // Rounds measure the workload more often; they do not change it.
    let (_, once) = gate("ttft.p50 < 10s", 20, "", &[]);
    assert_eq!(r["plan_hash"], once["plan_hash"]);
}
