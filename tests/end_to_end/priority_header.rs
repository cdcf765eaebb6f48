//! A class's priority told in a header (`priority-as "header"`), through the real binary: the
//! priority check stays quiet against a simulator that reads the header and fires against one
//! that reads another (the body carries no `priority` then, so it serves first come, first
//! served); on the reqwest path (a proxy variable set) the header goes over the wire too. The
//! interactive class's priority is negative, so the sign is written as well.

use crate::support::*;

/// As `labels.rs`'s classes: one sequence at a time, interactive requests slow to prefill
/// and short, batch requests quick to prefill and long; served by priority the interactive
/// class is faster, first come first served it is slower.
const CLASSES: &str = r#"
dataset "chat" {
    synthetic {
        input-tokens 4000
        output-tokens 16
    }
}
dataset "batch" {
    synthetic {
        input-tokens 50
        output-tokens 200
    }
}
stage "mixed" {
    dataset "batch"
    arrival "concurrency" clients=4
    requests 60
    class "interactive" weight=1 priority=-5 {
        dataset "chat"
    }
    class "batch" weight=1 priority=10
    priority-inversion "fail"
}
"#;

const SIM: &str = r#"
target "sim" {
    max-running 1
    prefill-chunk 0
    prefill-per-token "50us"
    decode-base "1ms"
    decode-per-seq "0ms"
    timeout "60s"
    priority-as "header"
    READS
}
"#;

fn run_classes(target: &str, env: &[(&str, String)]) -> (std::process::Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap().keep();
    let path = scenario(&dir, "s.kdl", &format!("{target}{CLASSES}"));
    let out = dir.join("out");
    let mut cmd = command();
    cmd.args([
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .args(["--quiet", "--no-plots", "--untrusted", "judge"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    let r = try_results(&out).unwrap_or_else(|| panic!("no results: {}", describe(&o)));
    (o, r)
}

#[test]
fn the_priority_check_holds_when_the_server_reads_the_header_and_fires_when_it_does_not() {
    // The embedded simulator reads the header the target names.
    let (o, r) = run_classes(&SIM.replace("READS", ""), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let check = &stage(&r, "mixed")["priority"];
    assert_eq!(check["inverted"], false, "{check}");
    assert_eq!(check["pairs"][0]["outcome"], "honoured", "{check}");
    // One that reads another header hears no priority at all: the body has none.
    let other = SIM.replace("READS", "request-priority-header \"x-other\"");
    let (o, r) = run_classes(&other, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let check = &stage(&r, "mixed")["priority"];
    assert_eq!(check["inverted"], true, "{check}");
}

#[test]
fn the_priority_header_goes_over_the_reqwest_path_too() {
    let sim = SimProcess::start(&[
        "--max-running",
        "1",
        "--prefill-chunk",
        "0",
        "--prefill-per-token",
        "50us",
        "--decode-base",
        "1ms",
        "--decode-per-seq",
        "0ms",
    ]);
    let target = format!(
        "target \"{}\" {{\n    timeout \"60s\"\n    priority-as \"header\"\n}}\n",
        sim.base_url
    );
    let env = [
        ("http_proxy", closed_port_url()),
        ("NO_PROXY", "127.0.0.1,localhost".to_string()),
    ];
    let (o, r) = run_classes(&target, &env);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let check = &stage(&r, "mixed")["priority"];
    assert_eq!(check["inverted"], false, "{check}");
    assert_eq!(check["pairs"][0]["outcome"], "honoured", "{check}");
}
