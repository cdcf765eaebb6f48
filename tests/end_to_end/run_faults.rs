//! Injected faults are counted under the right error kind, and a failing server does not stop
//! the run or lose what was measured.

use crate::support::*;

#[test]
fn each_injected_fault_is_counted_under_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
scenario "faults" { seed 3; }
target "sim" {
    timeout "400ms"
    decode-base "1ms"
    decode-per-seq "0ms"
    prefill-per-token "0ms"
    seed 11
    fault-http-503 0.2
    fault-http-429 0.1
    fault-stream-cut 0.15
    fault-malformed-sse 0.15
    fault-stall 0.1
    stall-duration "5s"
}
dataset "d" { synthetic { input-tokens 16; output-tokens 8; } }
stage "s" {
    dataset "d"
    arrival "concurrency" clients=8
    requests 120
    drain-timeout "2s"
}
"#;
    let path = scenario(dir.path(), "s.kdl", text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    // No SLA: the run itself succeeds even though requests failed.
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let s = stage(&r, "s");
    let req = &s["requests"];
    let (sent, ok, failed) = (
        req["sent"].as_u64().unwrap(),
        req["ok"].as_u64().unwrap(),
        req["failed"].as_u64().unwrap(),
    );
    assert_eq!(sent, 120);
    assert_eq!(sent, ok + failed);
    let errors = req["errors"].as_object().unwrap();
    for kind in [
        "http_503",
        "http_429",
        "stream_broken",
        "malformed",
        "timeout",
    ] {
        assert!(
            errors.get(kind).and_then(|v| v.as_u64()).unwrap_or(0) > 0,
            "expected some `{kind}` errors, got {errors:?}"
        );
    }
    let total: u64 = errors.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(total, failed);
    assert!(ok > 20, "about 30% of requests have no fault");
    // Failed requests are not latency samples.
    assert_eq!(s["latency"]["e2e_ms"]["count"].as_u64().unwrap(), ok);
}

/// A stage where every request failed has no latency sample: its latency verdicts say "no
/// successful request" in the summary, report.md and junit.xml, never "observed 0.00 ms",
/// and results.json marks them `unobserved` (its `observed` stays the number 0).
#[test]
fn a_stage_where_every_request_failed_shows_no_sample_not_zero() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
scenario "all-fail" { seed 3; }
target "sim" { timeout "2s"; fault-http-503 1.0; }
dataset "d" { synthetic { input-tokens 16; output-tokens 8; } }
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 6; }
sla {
    assert "ttft.p95 < 500ms"
    assert "e2e.p99 < 1s"
    assert "error_rate < 50%"
}
"#;
    let path = scenario(dir.path(), "s.kdl", text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let (stdout, _) = crate::support::text(&o);
    let sla = stdout.split("\nSLA\n").nth(1).unwrap_or_default();
    for expr in ["ttft.p95 < 500ms", "e2e.p99 < 1s"] {
        let line = sla.lines().find(|l| l.contains(expr)).unwrap_or_default();
        assert!(line.contains("no successful request"), "{stdout}");
        assert!(!line.contains("observed"), "{line}");
    }
    // The error rate was measured: 100 %.
    assert!(sla.contains("observed 100 %"), "{stdout}");
    // No TTFT, ITL or E2E figure in the stage's row either.
    let row = stdout.lines().find(|l| l.starts_with("s ")).unwrap();
    assert!(!row.contains("0.0 / 0.0"), "{row}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let ttft_row = md.lines().find(|l| l.contains("ttft.p95 < 500ms")).unwrap();
    assert!(ttft_row.contains("| no successful request |"), "{ttft_row}");
    assert!(
        !ttft_row.contains("under"),
        "no margin to nothing: {ttft_row}"
    );
    assert!(!md.contains("0.00 ms") && !md.contains("| 0 ms |"), "{md}");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains("no successful request, threshold 500 ms"),
        "{junit}"
    );
    // stages.csv: the count 0, then empty cells, never 0 ms a spreadsheet would average in.
    let csv = std::fs::read_to_string(out.join("stages.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    let cell = |name: &str| row[head.iter().position(|h| *h == name).expect(name)];
    assert_eq!(cell("ttft_count"), "0", "{csv}");
    assert_eq!(cell("ttft_p50_ms"), "", "{csv}");
    assert_eq!(cell("e2e_p99_ms"), "", "{csv}");
    let r = results(&out);
    let v = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["expr"] == "ttft.p95 < 500ms")
        .unwrap();
    assert_eq!(v["unobserved"], true, "{v}");
    assert_eq!(v["observed"], 0.0, "{v}");
    let rate = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["expr"] == "error_rate < 50%")
        .unwrap();
    assert!(rate.get("unobserved").is_none(), "{rate}");
}
