//! `agreement` as a run's SLA (docs/quality.md, "Agreement as an SLA"): a run whose scenario
//! names a baseline (`report { baseline … }`) marks each answer identical to the baseline's
//! answer to the same prompt or not, and `agreement >= 95%` is decided in the run itself —
//! the same answers pass, a lossy server fails, a baseline without answers is undecided with
//! the reason, and a scenario with no baseline is refused.

use std::path::{Path, PathBuf};

use crate::support::*;

/// 120 of the shipped questions against the simulator answering `accuracy` of them right;
/// `extra` is appended (a `report` block, an `sla` block).
fn qa(accuracy: &str, extra: &str) -> String {
    format!(
        r#"
scenario "qa" {{ seed 3; }}
target "sim" {{
    timeout "30s"
    decode-base "1ms"
    max-running 64
    ignore-eos #false
    answer-accuracy {accuracy}
}}
dataset "qa" {{
    jsonl "{path}/scenarios/data/qa.jsonl" max-tokens=48
    quality {{ score "number"; }}
}}
stage "qa" {{ dataset "qa"; arrival "concurrency" clients=8; requests 120; }}
{extra}
"#,
        path = env!("CARGO_MANIFEST_DIR")
    )
}

/// The same scenario gated on its agreement with the run in `base`.
fn gated(accuracy: &str, base: &Path) -> String {
    let base = base.join("results.json");
    qa(
        accuracy,
        &format!(
            "report {{ baseline \"{}\"; }}\nsla {{ assert \"agreement >= 95%\"; }}",
            base.display()
        ),
    )
}

fn run_named(dir: &Path, name: &str, kdl: &str) -> (std::process::Output, PathBuf) {
    let path = scenario(dir, &format!("{name}.kdl"), kdl);
    let out = dir.join(name);
    (run(&path, &out, &[]), out)
}

fn agreement_verdict(out: &Path) -> serde_json::Value {
    let r = results(out);
    r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["expr"] == "agreement >= 95%")
        .cloned()
        .unwrap_or_else(|| panic!("no agreement verdict: {}", r["sla"]))
}

#[test]
fn agreement_with_the_baseline_gates_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (o, base) = run_named(dir.path(), "base", &qa("1.0", ""));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));

    // The same seed and server: every answer is the baseline's, 120 of 120.
    let (o, same) = run_named(dir.path(), "same", &gated("1.0", &base));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&same);
    let a = &stage(&r, "qa")["quality"]["agreement"];
    assert_eq!(
        (a["paired"].as_u64(), a["identical"].as_u64()),
        (Some(120), Some(120)),
        "{a}"
    );
    assert_eq!(agreement_verdict(&same)["outcome"], "pass");
    let summary = std::fs::read_to_string(same.join("report.md")).unwrap();
    assert!(summary.contains("agreement with the baseline"), "{summary}");

    // A lossy server: about 30 % of the answers change, and the gate fails.
    let (o, lossy) = run_named(dir.path(), "lossy", &gated("0.7", &base));
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&lossy);
    let a = &stage(&r, "qa")["quality"]["agreement"];
    assert_eq!(a["paired"].as_u64(), Some(120), "{a}");
    assert!(a["identical"].as_u64().unwrap() < 100, "{a}");
    assert_eq!(agreement_verdict(&lossy)["outcome"], "fail");
}

#[test]
fn a_baseline_without_answers_leaves_agreement_undecided() {
    let dir = tempfile::tempdir().unwrap();
    let (o, base) = run_named(dir.path(), "base", &qa("1.0", ""));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    std::fs::remove_file(base.join("answers.jsonl")).unwrap();
    let (o, out) = run_named(dir.path(), "gated", &gated("1.0", &base));
    assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
    let v = agreement_verdict(&out);
    assert_eq!(v["outcome"], "inconclusive", "{v}");
    let note = v["note"].as_str().unwrap();
    assert!(note.contains("the baseline kept no answers"), "{note}");
}

#[test]
fn agreement_without_a_baseline_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "nobase.kdl",
        &qa("1.0", "sla { assert \"agreement >= 95%\"; }"),
    );
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        err.contains("names none") && err.contains("baseline"),
        "{err}"
    );
}
