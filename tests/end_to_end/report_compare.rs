//! `infermeter compare` and `infermeter report` through the real binary, on fixtures.

use crate::support::{infermeter, text};
use std::path::{Path, PathBuf};

use infermeter_core::metrics::LatencyMetric;
use infermeter_core::results::{Results, read_results};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/results")
        .join(name)
}

/// The baseline with every latency multiplied by `factor`, written to `dir`.
fn scaled(dir: &Path, name: &str, factor: f64, edit: impl Fn(&mut Results)) -> String {
    let mut r = read_results(&fixture("baseline.json")).unwrap();
    for s in &mut r.stages {
        for m in [
            LatencyMetric::Ttft,
            LatencyMetric::Itl,
            LatencyMetric::Tpot,
            LatencyMetric::E2e,
            LatencyMetric::Ntpot,
        ] {
            let d = &mut s.latency[m];
            for v in [
                &mut d.p50,
                &mut d.p90,
                &mut d.p95,
                &mut d.p99,
                &mut d.p999,
                &mut d.max,
                &mut d.mean,
            ] {
                *v *= factor;
            }
        }
    }
    edit(&mut r);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn same_plan_within_tolerance_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let cur = scaled(dir.path(), "cur.json", 1.03, |_| {});
    let base = fixture("baseline.json");
    let o = infermeter(&["compare", base.to_str().unwrap(), &cur]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        out.contains("ttft.p95") && out.contains("+3.0 %") && out.contains("same"),
        "{out}"
    );
    assert!(!out.contains("WORSE"), "{out}");
}

#[test]
fn slowed_down_current_exits_1_naming_the_metric() {
    let dir = tempfile::tempdir().unwrap();
    let cur = scaled(dir.path(), "slow.json", 1.30, |_| {});
    let base = fixture("baseline.json");
    let o = infermeter(&[
        "compare",
        base.to_str().unwrap(),
        &cur,
        "--tolerance",
        "10%",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("steady: ttft.p95 (+30.0 %)"), "{err}");
    assert!(out.contains("REGRESSED"), "{out}");

    // With a tolerance above the slowdown, it is no longer a regression.
    let o = infermeter(&[
        "compare",
        base.to_str().unwrap(),
        &cur,
        "--tolerance",
        "35%",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));

    // Faster is better, not a regression.
    let fast = scaled(dir.path(), "fast.json", 0.7, |_| {});
    let o = infermeter(&[
        "compare",
        base.to_str().unwrap(),
        &fast,
        "--format",
        "markdown",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    // Zero errors in both runs of ~100 requests cannot show the error rate stayed within
    // 0.1 points: that one is undecided, which does not fail `compare` by default.
    assert!(
        out.starts_with("## ❔ chat-pr-gate: inconclusive, no regression shown (tolerance 5 %"),
        "{out}"
    );
    assert!(
        out.contains("| `ttft.p95` | 376 ms | 263 ms | -30.0 % | 🟢 better |"),
        "{out}"
    );
}

/// 0.5 % of errors, then 1.08 %: twice as many, yet a few failures of a few hundred requests,
/// which the difference's interval ([−0.2, +1.4] points) cannot tell from noise. The old
/// point comparison called it a regression.
#[test]
fn an_error_rate_change_within_its_noise_is_undecided() {
    let (b, c) = (fixture("baseline.json"), fixture("current.json"));
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "compare".to_string(),
            b.to_str().unwrap().to_string(),
            c.to_str().unwrap().to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &[&'static str]| {
        let a = args(extra);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        infermeter(&a)
    };
    let o = run(&["--format", "markdown"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("Inconclusive"), "{out}");
    assert!(
        out.contains(
            "| `error_rate` | 0.500 % | 1.08 % | +0.6 pp \\[-0.2, +1.4\\] | ❔ inconclusive |"
        ),
        "{out}"
    );
    // Strict: an undecided metric fails the comparison, or makes it inconclusive.
    assert_eq!(run(&["--inconclusive", "fail"]).status.code(), Some(1));
    assert_eq!(
        run(&["--inconclusive", "inconclusive"]).status.code(),
        Some(4)
    );
    let json = run(&["--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let peak = v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "peak")
        .unwrap();
    let er = peak["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "error_rate")
        .unwrap();
    assert_eq!(er["verdict"], "inconclusive");
    assert_eq!(er["basis"], "proportions");
    assert_eq!(er["change_unit"], "pp");
}

#[test]
fn different_plans_exit_2_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let other = scaled(dir.path(), "other.json", 1.0, |r| {
        r.plan_hash = "0000feedbeef".into()
    });
    let base = fixture("baseline.json");
    let o = infermeter(&["compare", base.to_str().unwrap(), &other]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains("different plans") && err.contains("0000feedbeef"),
        "{err}"
    );
    assert!(out.is_empty());

    let o = infermeter(&[
        "compare",
        base.to_str().unwrap(),
        &other,
        "--allow-different-plans",
    ]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("plan hashes differ"), "{out}");
}

#[test]
fn unreadable_inputs_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"scenario\": 3}").unwrap();
    let base = fixture("baseline.json");
    for other in [bad.to_str().unwrap(), "/no/such/results.json"] {
        let o = infermeter(&["compare", base.to_str().unwrap(), other]);
        assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
        assert!(
            text(&o).1.starts_with("error: failed to "),
            "{:?}",
            text(&o)
        );
    }
    let o = infermeter(&[
        "compare",
        base.to_str().unwrap(),
        base.to_str().unwrap(),
        "--tolerance",
        "5",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a tolerance without % is rejected"
    );
}

#[test]
fn report_rerenders_a_results_file() {
    let dir = tempfile::tempdir().unwrap();
    let c = fixture("current.json");
    let o = infermeter(&["report", c.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // A version-1 result: its verdicts read as pass or fail from `passed`.
    assert!(
        out.starts_with("## ❌ chat-pr-gate: FAILED — 1 of 3 SLA assertions failed"),
        "{out}"
    );
    assert!(
        !out.contains("!["),
        "no plots next to the fixture, so no links"
    );

    let tpl = dir.path().join("t.j2");
    std::fs::write(&tpl, "{{ results.plan_hash }} {{ view.sla_failed }}\n").unwrap();
    std::fs::write(dir.path().join("stage-peak-timeline.svg"), "<svg/>").unwrap();
    let out_md = dir.path().join("r.md");
    let o = infermeter(&[
        "report",
        c.to_str().unwrap(),
        "--template",
        tpl.to_str().unwrap(),
        "--out",
        out_md.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert_eq!(
        std::fs::read_to_string(&out_md).unwrap(),
        "9f2c41d7a0b3e8c5 1\n"
    );

    let o = infermeter(&[
        "report",
        c.to_str().unwrap(),
        "--out",
        out_md.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let md = std::fs::read_to_string(&out_md).unwrap();
    assert!(
        md.contains("](stage-peak-timeline.svg)"),
        "existing plots are linked"
    );
    assert!(
        !md.contains("](stage-peak-latency-cdf.svg)"),
        "missing plots are not"
    );
}

#[test]
fn a_percentile_without_enough_samples_is_not_compared() {
    // Stage `steady` has 300 TTFTs: p50 and p95 mean something, p99 (needs 1,000: ten
    // beyond it) does not.
    let dir = tempfile::tempdir().unwrap();
    let only_p99 = |factor: f64| {
        move |r: &mut Results| {
            for s in r.stages.iter_mut().filter(|s| s.name == "steady") {
                let d = &mut s.latency[LatencyMetric::Ttft];
                assert!(d.count < 1_000);
                // The tail above it moves too: percentiles stay in order.
                d.p99 *= factor;
                d.p999 = d.p999.max(d.p99);
                d.max = d.max.max(d.p999);
            }
        }
    };
    let base = fixture("baseline.json");
    let cur = scaled(dir.path(), "tail.json", 1.0, only_p99(2.0));
    let o = infermeter(&["compare", base.to_str().unwrap(), &cur]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("+100.0 % (under 1000 samples)"), "{out}");

    // With enough samples the same change is a regression.
    // 5,000 TTFTs take 5,000 successful requests (the validator holds the counts together).
    let five_thousand = |r: &mut Results| {
        let s = &mut r.stages[0];
        let more = 5_000 - s.requests.ok;
        s.requests.ok += more;
        s.requests.sent += more;
        s.latency[LatencyMetric::Ttft].count = 5_000;
    };
    let many = scaled(dir.path(), "many.json", 1.0, five_thousand);
    let cur = scaled(dir.path(), "tail-many.json", 1.0, |r| {
        only_p99(2.0)(r);
        five_thousand(r);
    });
    let o = infermeter(&["compare", &many, &cur]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("steady: ttft.p99 (+100.0 %)"), "{err}");
}

#[test]
fn the_scenarios_tolerances_recorded_in_the_results_apply_unless_the_command_line_says() {
    let dir = tempfile::tempdir().unwrap();
    let cur = scaled(dir.path(), "slow.json", 1.30, |r| {
        r.compare_tolerances.default = Some(0.5);
    });
    let base = fixture("baseline.json");
    let o = infermeter(&["compare", base.to_str().unwrap(), &cur]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = infermeter(&[
        "compare",
        base.to_str().unwrap(),
        &cur,
        "--tolerance",
        "10%",
    ]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
    // One metric's own tolerance wins over the default.
    let cur = scaled(dir.path(), "slow2.json", 1.30, |r| {
        r.compare_tolerances.default = Some(0.5);
        r.compare_tolerances.metrics.insert("ttft.p95".into(), 0.1);
    });
    let o = infermeter(&["compare", base.to_str().unwrap(), &cur]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("ttft.p95") && !err.contains("ttft.p50"),
        "{err}"
    );
}

#[test]
fn the_scenario_is_named_as_written_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let rename = |r: &mut Results| r.scenario = "my-pr-gate".into();
    let base = scaled(dir.path(), "base.json", 1.0, rename);
    let cur = scaled(dir.path(), "cur.json", 1.0, rename);
    for format in ["text", "markdown", "json"] {
        let o = infermeter(&["compare", &base, &cur, "--format", format]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{format}: {out}\n{err}");
        assert!(out.contains("my-pr-gate"), "{format}: {out}");
        assert!(!out.contains("My-pr-gate"), "{format}: {out}");
    }
}
