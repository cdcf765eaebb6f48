//! A sweep judged on its curve, through the real binary against the embedded simulator
//! (`scenarios/sweep-gate.kdl`: about 100 req/s of capacity, points at 20, 40 and 400 req/s).
//! The point far past the knee fails its per-point SLA and the run still exits 0; the curve's
//! own assertion (`sla_max_rate`) passes or fails the run; `every-point=#true` gates every
//! point; and the point's one verdict reads the same in results.json, the terminal summary,
//! report.md's SLA and profile tables and its stage heading, and report.html.

use std::path::Path;

use serde_json::Value;

use crate::support::{describe, results, run, scenario, text};

const EXAMPLE: &str = "scenarios/sweep-gate.kdl";

/// The example with `from` replaced by `to`, written into `dir`.
fn variant(dir: &Path, from: &str, to: &str) -> std::path::PathBuf {
    crate::support::example_variant(dir, EXAMPLE, &[(from, to)])
}

fn verdicts_on<'a>(r: &'a Value, stage: &str) -> Vec<&'a Value> {
    r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["stage"] == stage)
        .collect()
}

#[test]
fn a_sweep_past_its_knee_exits_0_and_every_view_shows_the_same_point_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = run(Path::new(EXAMPLE), &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    // The 400 req/s point failed, decided, and is reported without gating.
    let far = verdicts_on(&r, "capacity@400rps");
    assert_eq!(far.len(), 1, "{far:?}");
    assert_eq!(far[0]["outcome"], "fail", "{}", far[0]);
    assert_eq!(far[0]["gates"], false, "{}", far[0]);
    assert_eq!(
        r["stages"][2]["profile"]["saturated"], true,
        "{:#}",
        r["stages"][2]
    );
    for point in ["capacity@20rps", "capacity@40rps"] {
        let v = verdicts_on(&r, point);
        assert_eq!(v[0]["outcome"], "pass", "{}", v[0]);
        assert!(v[0].get("gates").is_none(), "{}", v[0]);
    }
    let curve = verdicts_on(&r, "capacity");
    assert_eq!(curve[0]["expr"], "sla_max_rate >= 40 req/s");
    assert_eq!(curve[0]["outcome"], "pass", "{}", curve[0]);
    assert_eq!(curve[0]["observed"], 40.0);
    assert_eq!(r["outcome"], "pass");

    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("knee at 40 req/s · SLA-compliant maximum 40 req/s"),
        "{stdout}"
    );
    assert!(stdout.contains("(400 ✗)"), "{stdout}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| 400"))
        .unwrap_or_else(|| panic!("no 400 row:\n{md}"));
    assert!(
        row.contains("| ❌ |") && row.contains("past the knee: not gating"),
        "{row}"
    );
    assert!(md.contains("### Stage `capacity@400rps` ❌"), "{md}");
    assert!(
        md.contains("### Stage `capacity@40rps` ✅")
            || md.contains("### Stage `capacity@40rps` ⚠️"),
        "{md}"
    );
    assert!(md.contains("PASSED"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("✗ fail</td><td><strong>") || html.contains("✗ fail</td><td>saturated"),
        "no failed 400 row in report.html"
    );
    assert!(html.contains("past the knee: not gating"));
}

#[test]
fn the_curve_assertion_fails_the_run_and_every_point_gates_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    // The highest passing point is 40 req/s: a floor of 100 fails, written with `/s`.
    let high = variant(
        dir.path(),
        "sla_max_rate >= 40 req/s",
        "sla_max_rate > 100/s",
    );
    let out = dir.path().join("high");
    let o = run(&high, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    let curve = verdicts_on(&r, "capacity");
    assert_eq!(curve[0]["outcome"], "fail", "{}", curve[0]);
    assert_eq!(curve[0]["observed"], 40.0);

    // Asked for, the point past the knee gates the run.
    let every = variant(
        dir.path(),
        r#"assert "ttft.p50 < 50ms""#,
        r#"assert "ttft.p50 < 50ms" every-point=#true"#,
    );
    let out = dir.path().join("every");
    let o = run(&every, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    assert!(verdicts_on(&r, "capacity@400rps")[0].get("gates").is_none());
}

/// A search whose probes are too short for its answer to be decided: every probe passes on
/// its values (that steers the search), the gate leaves the answer undecided (exit 4), and
/// no view calls the answer a pass or an SLA-compliant maximum, nor does `sla_max_rate`.
#[test]
fn a_search_answer_the_gate_leaves_undecided_is_marked_undecided() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = scenario(
        dir.path(),
        "search.kdl",
        r#"
scenario "undecided-search"
target "sim" { timeout "10s"; decode-base "2ms"; }
dataset "d" { synthetic { input-tokens 8; output-tokens 4; } }
stage "s" {
    dataset "d"
    search { rate from=2 to=4; probe "2s"; max-probes 3; }
    sla { assert "ttft.p95 < 30s"; assert "sla_max_rate >= 3 req/s"; }
}
"#,
    );
    let out = dir.path().join("out");
    let o = run(&kdl, &out, &["--untrusted", "judge"]);
    assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
    let r = results(&out);
    let on = verdicts_on(&r, "s");
    assert_eq!(on[0]["outcome"], "inconclusive", "{}", on[0]);
    // The curve reads the answer as the gate judged it: at most 4 req/s, none shown.
    assert_eq!(on[1]["expr"], "sla_max_rate >= 3 req/s");
    assert_eq!(on[1]["outcome"], "inconclusive", "{}", on[1]);
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("SLA-compliant maximum not shown: no point decided to pass (up to 4 req/s"),
        "{stdout}"
    );
    assert!(stdout.contains("4 ?"), "{stdout}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| 4.0 "))
        .unwrap_or_else(|| panic!("no 4 req/s row:\n{md}"));
    assert!(row.contains("| ❔ |"), "{row}");
}
