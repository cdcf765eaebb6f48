//! A shaped sweep through the real binary against the embedded simulator
//! (`scenarios/pareto.kdl`: shapes 128/16, 1024/32 and 4096/16, each across 1, 4 and 8
//! clients), cut to two shapes and fewer requests to stay short. Each shape is a profile group
//! of its own in results.json (points labelled with their shape, a frontier and a knee each),
//! in stages.csv and in both reports; `validate` counts the points; a failing point is named
//! with its shape, and the run exits 1. No assertion rests on this machine's speed beyond the
//! model's wide margins.

use std::path::Path;

use serde_json::Value;

use crate::support::{command, describe, results, run, text};

const EXAMPLE: &str = "scenarios/pareto.kdl";

/// The example with each `from` replaced by its `to`, written into `dir`.
fn variant(dir: &Path, edits: &[(&str, &str)]) -> std::path::PathBuf {
    crate::support::example_variant(dir, EXAMPLE, edits)
}

/// Two shapes, 1 and 4 clients, 8 requests a point: four short points.
const SHORT: &[(&str, &str)] = &[
    ("requests 16", "requests 8"),
    ("concurrency 1 4 8", "concurrency 1 4"),
    (
        "shapes \"128/16\" \"1024/32\" \"4096/16\"",
        "shapes \"128/16\" \"4096/16\"",
    ),
];

fn stage<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no stage {name}"))
}

#[test]
fn validate_counts_the_shaped_points_and_their_time() {
    let o = command().args(["validate", EXAMPLE]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("sweep  pareto: 3 shapes × 3 concurrency levels = 9 points, about "),
        "{stdout}"
    );
    let o = command().args(["plan", EXAMPLE]).output().unwrap();
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("stage `pareto@4096/16@8c` (dataset shaped@4096/16)"),
        "{stdout}"
    );
    assert!(stdout.contains("dataset    shaped@1024/32: synthetic, input 1024, output 32"));
}

#[test]
fn each_shape_has_its_points_frontier_and_knee() {
    let dir = tempfile::tempdir().unwrap();
    let path = variant(dir.path(), SHORT);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let names: Vec<&str> = r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "pareto@128/16@1c",
            "pareto@128/16@4c",
            "pareto@4096/16@1c",
            "pareto@4096/16@4c"
        ]
    );
    for (name, shape, input) in [
        ("pareto@128/16@4c", "128/16", 128.0),
        ("pareto@4096/16@1c", "4096/16", 4096.0),
    ] {
        let s = stage(&r, name);
        let p = &s["profile"];
        assert_eq!(p["shape"], shape, "{p}");
        assert_eq!(p["group"], format!("pareto@{shape}"), "{p}");
        // Every request had the shape's lengths: exactly 16 tokens out, and at least the
        // prompt's tokens in (the chat template adds a few).
        let ok = s["requests"]["ok"].as_f64().unwrap();
        assert_eq!(s["tokens"]["output"].as_f64().unwrap(), 16.0 * ok, "{s}");
        let per_request = s["tokens"]["input"].as_f64().unwrap() / ok;
        assert!(
            per_request >= input && per_request < input * 1.1,
            "{per_request}"
        );
    }
    let frontiers = r["frontiers"].as_array().unwrap();
    assert_eq!(frontiers.len(), 2, "{frontiers:?}");
    for (f, shape) in frontiers.iter().zip(["128/16", "4096/16"]) {
        assert_eq!(f["group"], format!("pareto@{shape}"));
        assert_eq!(f["shape"], shape);
        assert_eq!(f["gpus"], 8);
        let points = f["points"].as_array().unwrap();
        let stages: Vec<&str> = points
            .iter()
            .map(|p| p["stage"].as_str().unwrap())
            .collect();
        assert_eq!(
            stages,
            [format!("pareto@{shape}@1c"), format!("pareto@{shape}@4c")]
        );
        assert_eq!(points[0]["on_front"], true, "{f}");
    }
    // The long prompts slow every stream of their batch: that shape's knee is reached, at
    // one of its points.
    let knee = frontiers[1]["knee"].as_f64();
    assert!(matches!(knee, Some(1.0 | 4.0)), "{}", frontiers[1]);
    // The gate held on every point of every shape.
    let sla = r["sla"].as_array().unwrap();
    assert_eq!(sla.len(), 4, "{sla:?}");
    assert!(sla.iter().all(|v| v["outcome"] == "pass"), "{sla:?}");

    assert_shapes_in_reports(&out);
}

/// stages.csv ends with the shape columns; each report titles each shape's frontier and
/// report.html draws one a shape.
fn assert_shapes_in_reports(out: &Path) {
    let csv = std::fs::read_to_string(out.join("stages.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.ends_with(",shape,shape_input_tokens,shape_output_tokens"),
        "{header}"
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with("pareto@4096/16@4c,pareto@4096/16,4,")
                && l.ends_with(",4096/16,4096,16")),
        "{csv}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains(
            "Interactivity frontier of `pareto@4096/16` (8 GPUs), shape 4096/16 (input/output tokens):"
        ),
        "{md}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(
        html.matches("data-kind=\"frontier\"").count(),
        2,
        "one plot a shape"
    );
    assert!(html.contains("interactivity frontier of pareto@128/16"));
}

#[test]
fn a_failing_point_is_named_with_its_shape_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut edits = SHORT.to_vec();
    // Alone, a user streams at about 110 tokens/s; four clients of 4096-token prompts hold
    // each other to about 36.
    edits.push((
        "tokens_per_s_user > 10 tok/s",
        "tokens_per_s_user > 70 tok/s",
    ));
    let path = variant(dir.path(), &edits);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    let failed: Vec<&str> = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["outcome"] == "fail")
        .map(|v| v["stage"].as_str().unwrap())
        .collect();
    assert!(failed.contains(&"pareto@4096/16@4c"), "{failed:?}");
    assert!(
        failed
            .iter()
            .all(|s| s.starts_with("pareto@4096/16@") || s.starts_with("pareto@128/16@"))
    );
    let (stdout, stderr) = text(&o);
    let said = format!("{stdout}{stderr}");
    assert!(said.contains("pareto@4096/16@4c"), "{said}");
}
