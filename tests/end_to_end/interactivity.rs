//! Interactivity and the frontier, through the real binary against the embedded simulator
//! (`scenarios/interactivity.kdl`: a concurrency sweep 1, 2, 4, 8 clients whose decode step
//! grows 2 ms per sequence, so each user's stream slows as the clients add up while the
//! target delivers more in all). Every figure is checked against the stage it came from, and
//! the front against the dominance rule; no assertion rests on how fast this machine is
//! beyond the model's wide margins (about 83 against 38 tokens/s per user).

use std::path::Path;

use serde_json::Value;

use crate::support::{describe, results, run, text};

const EXAMPLE: &str = "scenarios/interactivity.kdl";

/// The example with each `from` replaced by its `to`, written into `dir`.
fn variant(dir: &Path, edits: &[(&str, &str)]) -> std::path::PathBuf {
    crate::support::example_variant(dir, EXAMPLE, edits)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn stage<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no stage {name}"))
}

/// Every point on the front is dominated by none, and each dominated one by the point it
/// names.
fn assert_front_consistent(points: &[Value]) {
    let xy = |p: &Value| {
        let y = p
            .get("output_tokens_per_s_gpu")
            .unwrap_or(&p["output_tokens_per_s"]);
        (f(&p["tokens_per_s_user"]), f(y))
    };
    let beats = |a: (f64, f64), b: (f64, f64)| a.0 >= b.0 && a.1 >= b.1 && (a.0 > b.0 || a.1 > b.1);
    for p in points {
        if p["on_front"] == true {
            assert!(p.get("dominated_by").is_none(), "{p}");
            assert!(points.iter().all(|q| !beats(xy(q), xy(p))), "{p} is beaten");
        } else {
            let by = p["dominated_by"].as_str().unwrap();
            let q = points.iter().find(|q| q["stage"] == by).unwrap();
            assert!(beats(xy(q), xy(p)), "{q} does not beat {p}");
        }
    }
}

#[test]
fn a_concurrency_sweep_has_its_interactivity_frontier_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = run(Path::new(EXAMPLE), &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let fr = &r["frontiers"][0];
    assert_eq!(fr["group"], "ladder", "{fr}");
    assert_eq!(fr["gpus"], 8, "{fr}");
    let points = fr["points"].as_array().unwrap();
    let names: Vec<&str> = points
        .iter()
        .map(|p| p["stage"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ladder@1c", "ladder@2c", "ladder@4c", "ladder@8c"]);
    for p in points {
        let s = stage(&r, p["stage"].as_str().unwrap());
        assert_eq!(s["planned"]["gpus"], 8, "{}", s["planned"]);
        let tpot = f(&s["latency"]["tpot_ms"]["p90"]);
        let ntpot = f(&s["latency"]["ntpot_ms"]["p90"]);
        assert!(
            (f(&p["tokens_per_s_user"]) - 1000.0 / tpot).abs() < 1e-9,
            "{p}"
        );
        assert!((f(&p["e2e_normalized_interactivity"]) - 1000.0 / ntpot).abs() < 1e-9);
        let out_tps = f(&s["throughput"]["output_tokens_per_s"]);
        assert_eq!(f(&p["output_tokens_per_s"]), out_tps);
        assert!((f(&p["output_tokens_per_s_gpu"]) - out_tps / 8.0).abs() < 1e-9);
    }
    // The model's trade: one client streams faster, eight deliver more in all.
    let (one, eight) = (&points[0], &points[3]);
    assert!(f(&one["tokens_per_s_user"]) > f(&eight["tokens_per_s_user"]) * 1.5);
    assert!(f(&eight["output_tokens_per_s_gpu"]) > f(&one["output_tokens_per_s_gpu"]) * 1.5);
    assert_eq!(
        one["on_front"], true,
        "the fastest stream is never beaten: {one}"
    );
    assert_front_consistent(points);

    // The SLA on each point's figure, as the example sets it.
    let per_user: Vec<&Value> = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["expr"] == "tokens_per_s_user > 30 tok/s")
        .collect();
    assert_eq!(per_user.len(), 4, "{per_user:?}");
    for v in &per_user {
        assert_eq!(v["outcome"], "pass", "{v}");
    }

    let (stdout, _) = text(&o);
    assert!(stdout.contains("frontier, tok/s per user: 1: "), "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("data-kind=\"frontier\""), "no frontier plot");
    assert!(html.contains("interactivity frontier of ladder"));
    assert!(out.join("frontier-ladder.svg").is_file());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("Interactivity frontier of `ladder` (8 GPUs):"),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| 8 ") || l.starts_with("| 8.0 ")),
        "{md}"
    );
}

#[test]
fn an_interactivity_sla_fails_when_set_past_the_server_and_per_gpu_needs_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let path = variant(
        dir.path(),
        &[
            ("    gpus 8\n", ""),
            (
                "assert \"tokens_per_s_user > 30 tok/s\" every-point=#true",
                "assert \"tokens_per_s_user > 500 tok/s\" every-point=#true\n        \
                 assert \"output_throughput_per_gpu > 1 tok/s\"",
            ),
        ],
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    let sla = r["sla"].as_array().unwrap();
    let on = |expr: &str| -> Vec<&Value> { sla.iter().filter(|v| v["expr"] == expr).collect() };
    let fast = on("tokens_per_s_user > 500 tok/s");
    assert_eq!(fast.len(), 4, "{fast:?}");
    for v in fast {
        assert_eq!(v["outcome"], "fail", "{v}");
        assert!(f(&v["observed"]) < 500.0, "{v}");
    }
    for v in on("output_throughput_per_gpu > 1 tok/s") {
        assert_eq!(v["outcome"], "fail", "{v}");
    }
    let (stdout, _) = text(&o);
    assert!(stdout.contains("target { gpus 8 }"), "{stdout}");
    // Without GPUs the frontier is drawn against the whole target's throughput.
    let fr = &r["frontiers"][0];
    assert!(fr.get("gpus").is_none(), "{fr}");
    let points = fr["points"].as_array().unwrap();
    assert!(
        points
            .iter()
            .all(|p| p.get("output_tokens_per_s_gpu").is_none())
    );
    assert_front_consistent(points);
}
