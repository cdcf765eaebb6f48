//! Answer quality against load (docs/quality.md, "Quality against load"): a sweep whose
//! points score their answers shows each point's accuracy with its interval in the profile
//! table, the terminal and a plot of its own, with the `accuracy` threshold drawn; a sweep
//! that scores nothing has no such plot.

use crate::support::*;

fn sweep(quality: &str) -> String {
    format!(
        r#"
scenario "qs" {{ seed 5; }}
target "sim" {{
    timeout "30s"
    decode-base "1ms"
    max-running 64
    ignore-eos #false
    answer-accuracy 0.95
}}
dataset "qa" {{
    jsonl "{root}/scenarios/data/qa.jsonl" max-tokens=48
    {quality}
}}
stage "qa" {{
    dataset "qa"
    arrival "concurrency" clients=2
    requests 60
    sweep {{ concurrency 2 8; }}
}}
"#,
        root = env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn a_scored_sweep_plots_accuracy_against_load() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = sweep("quality { score \"number\"; }")
        + "sla { assert \"accuracy > 50%\" stage=\"qa\"; }\n";
    let path = scenario(dir.path(), "qs.kdl", &kdl);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (said, _) = text(&o);
    assert!(said.contains("accuracy against load: 2: "), "{said}");

    let svg = std::fs::read_to_string(out.join("quality-qa.svg")).unwrap();
    assert!(
        svg.contains(r#"data-name="accuracy" data-points="2""#),
        "{svg}"
    );
    // One interval bar a point, and the asserted threshold as a reference line.
    assert_eq!(svg.matches(r#"data-name="accuracy interval""#).count(), 2);
    assert!(
        svg.contains(r#"data-kind="threshold" data-axis="y" data-value="50""#),
        "{svg}"
    );

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| accuracy | SLAs |"), "{md}");
    assert!(md.contains("](quality-qa.svg)"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("answer accuracy against load of qa"),
        "{html}"
    );
}

#[test]
fn a_sweep_that_scores_nothing_has_no_accuracy_plot() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "qs.kdl", &sweep(""));
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(out.join("profile-qa.svg").exists());
    assert!(!out.join("quality-qa.svg").exists());
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!md.contains("| accuracy |"), "{md}");
}
