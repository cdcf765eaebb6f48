//! Results taken as input by `compare`, `report`, `merge` and a run's `baseline` go through one
//! validator: a result whose counts do not add up, with a count near 2^64, a negative latency,
//! a goodput share above 1 or a corrupted histogram is refused (exit 2) with the field and
//! its value named. And no command writes over a file it was given to read.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{self, infermeter, text};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/results")
        .join(name)
}

fn load(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
}

fn write(dir: &Path, name: &str, v: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(v).unwrap()).unwrap();
    path.display().to_string()
}

/// `baseline.json` broken by `edit`, written as `name`.
fn broken(dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> String {
    broken_from("baseline.json", dir, name, edit)
}

fn broken_from(fixture: &str, dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut v = load(fixture);
    edit(&mut v);
    write(dir, name, &v)
}

/// Runs `args`, expects exit 2 and every one of `said` on stderr.
fn refused(args: &[&str], said: &[&str]) {
    let o = infermeter(args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}\n{out}\n{err}");
    for s in said {
        assert!(err.contains(s), "{args:?}: `{s}` not in:\n{err}");
    }
}

#[test]
fn compare_refuses_a_baseline_that_does_not_hold_together() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let current = fixture("current.json");
    let current = current.to_str().unwrap();
    // A truncated histogram was skipped silently: "NO REGRESSION SHOWN", exit 0.
    let truncated = broken_from("sim-quickstart.json", dir, "truncated.json", |v| {
        let h = v["stages"][0]["histograms"]["ttft_ms"].as_str().unwrap();
        let cut = h[..h.len() / 2].to_string();
        v["stages"][0]["histograms"]["ttft_ms"] = json!(cut);
    });
    let same = fixture("sim-quickstart.json");
    refused(
        &["compare", &truncated, same.to_str().unwrap()],
        &["stages[0].histograms.ttft_ms", "does not decode"],
    );
    let negative = broken(dir, "negative.json", |v| {
        v["stages"][0]["latency"]["ttft_ms"]["p50"] = json!(-5.0);
    });
    refused(
        &["compare", &negative, current],
        &["stages[0].latency.ttft_ms.p50 = -5"],
    );
    let more_failed = broken(dir, "failed.json", |v| {
        let sent = v["stages"][0]["requests"]["sent"].as_u64().unwrap();
        v["stages"][0]["requests"]["failed"] = json!(sent + 1);
    });
    refused(
        &["compare", &more_failed, current],
        &["stages[0].requests.failed", "≠ sent"],
    );
    let goodput = broken(dir, "goodput.json", |v| {
        v["stages"][0]["throughput"]["goodput_ratio"] = json!(1.25);
    });
    refused(
        &["compare", current, &goodput],
        &["stages[0].throughput.goodput_ratio = 1.25", "0..=1"],
    );
    // ok + failed = 2^64 + 1 wraps to 1 in u64 arithmetic: it must not pass for sent = 1.
    let wraps = broken(dir, "wraps.json", |v| {
        let q = &mut v["stages"][0]["requests"];
        q["sent"] = json!(1);
        q["ok"] = json!(u64::MAX);
        q["failed"] = json!(2);
        q["errors"] = json!({"timeout": 2});
    });
    refused(
        &["compare", &wraps, current],
        &["stages[0].requests.ok = 18446744073709551615"],
    );
    refused(
        &["report", &wraps],
        &["stages[0].requests.ok = 18446744073709551615"],
    );
}

#[test]
fn a_run_refuses_a_baseline_that_does_not_hold_together() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    broken(dir, "bad.json", |v| {
        v["stages"][0]["requests"]["ok"] = json!(0);
    });
    let s = support::scenario(
        dir,
        "s.kdl",
        r#"
scenario "b" { seed 1; }
target "sim"
dataset "d" { synthetic { input-tokens 8; output-tokens 2; } }
stage "main" { dataset "d"; arrival "concurrency" clients=1; requests 2; }
report { baseline "bad.json"; }
sla { assert "ttft.p50 < baseline * 2"; }
"#,
    );
    let o = support::run(&s, &dir.join("out"), &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("stages[0].requests.failed"), "{err}");
}

/// A shard's result made from a fixture: shard `index` of 2, uncoordinated.
fn shard(dir: &Path, index: u32, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut v = load("baseline.json");
    v["shards"] = json!({
        "count": 2,
        "shards": [{"index": index, "coordinated": false}],
    });
    edit(&mut v);
    let d = dir.join(format!("shard-{index}"));
    std::fs::create_dir_all(&d).unwrap();
    write(&d, "results.json", &v);
    d.join("results.json")
}

#[test]
fn merge_refuses_counts_that_do_not_add_up_and_never_writes_over_a_shard() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let a = shard(dir, 0, |_| {});
    let b = shard(dir, 1, |v| {
        v["stages"][0]["requests"]["errors"] = json!({"timeout": 999});
    });
    let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = dir.join("merged");
    refused(
        &[
            "merge",
            a_s,
            b_s,
            "--out",
            out.to_str().unwrap(),
            "--no-plots",
        ],
        &[
            "shard-1",
            "stages[0].requests.errors",
            "do not sum to failed",
        ],
    );
    assert!(!out.exists(), "nothing written");

    // Over shard 0's own directory: its results.json would be replaced by the merge.
    let b = shard(dir, 1, |_| {});
    let before = std::fs::read(&a).unwrap();
    let shard0 = dir.join("shard-0");
    refused(
        &[
            "merge",
            a_s,
            b.to_str().unwrap(),
            "--out",
            shard0.to_str().unwrap(),
        ],
        &[
            "is a shard's result",
            "merged results.json would be written over it",
            "--out DIR",
        ],
    );
    // The same directory spelt another way.
    let sneaky = dir.join("shard-1/../shard-0");
    refused(
        &[
            "merge",
            a_s,
            b.to_str().unwrap(),
            "--out",
            sneaky.to_str().unwrap(),
        ],
        &["is a shard's result"],
    );
    assert_eq!(
        std::fs::read(&a).unwrap(),
        before,
        "shard 0's result untouched"
    );
}

#[test]
fn compare_and_report_never_write_over_their_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let base = write(dir, "base.json", &load("baseline.json"));
    let cur = write(dir, "cur.json", &load("current.json"));
    let before = std::fs::read(&cur).unwrap();
    // `--plot` on a results file would replace it with an SVG.
    refused(
        &["compare", &base, &cur, "--plot", &cur],
        &["is a result compared", "would be written over it", "--plot"],
    );
    refused(
        &["report", &cur, "--out", &cur],
        &["is the results rendered", "--out"],
    );
    let tpl = dir.join("t.md.j2");
    std::fs::write(&tpl, "{{ results.scenario }}\n").unwrap();
    let tpl = tpl.to_str().unwrap();
    refused(
        &["report", &cur, "--template", tpl, "--out", tpl],
        &["is the template"],
    );
    assert_eq!(std::fs::read(&cur).unwrap(), before, "input untouched");
    // A plot of its own is fine.
    let plot = dir.join("p.svg");
    let o = infermeter(&["compare", &base, &cur, "--plot", plot.to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(2), "{}", text(&o).1);
}
