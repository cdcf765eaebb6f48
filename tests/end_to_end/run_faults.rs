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
