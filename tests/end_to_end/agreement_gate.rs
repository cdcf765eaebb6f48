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
    format!("{}{extra}\n", crate::agreement::qa_scenario(accuracy, 3))
}

/// The same scenario gated on its agreement with the run in `base`.
fn gated(accuracy: &str, base: &Path) -> String {
    let base = base.join("results.json");
    qa(
        accuracy,
        &format!(
            "report {{ baseline \"{}\"; parquet #true; }}\nsla {{ assert \"agreement >= 95%\"; }}",
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
    shown_where_people_look(&lossy, a["identical"].as_u64().unwrap());
}

/// The lossy run's agreement in the PR comment, JUnit, stages.csv and requests.parquet.
fn shown_where_people_look(out: &Path, identical: u64) {
    let pr = std::fs::read_to_string(out.join("report.pr.md")).unwrap();
    assert!(
        pr.contains("**Answer quality**") && pr.contains("agreement with the baseline"),
        "{pr}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"name="agreement &gt;= 95% [qa]">"#) && junit.contains("<failure"),
        "{junit}"
    );
    let csv = std::fs::read_to_string(out.join("stages.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header
        .iter()
        .position(|h| *h == "agreement_percent")
        .unwrap_or_else(|| panic!("{csv}"));
    let row = lines.next().unwrap();
    // The last columns are numbers (the validity reasons before them may hold commas).
    let cell = row.rsplit(',').nth(header.len() - 1 - at).unwrap();
    let shown: f64 = cell.parse().unwrap_or_else(|_| panic!("{cell}: {row}"));
    assert!(
        (shown - identical as f64 / 120.0 * 100.0).abs() < 1e-9,
        "{row}"
    );

    let (agrees, correct) = parquet_marks(&out.join("requests.parquet"));
    assert_eq!(agrees.len(), 120);
    assert_eq!(agrees.iter().filter(|a| **a).count() as u64, identical);
    assert!(correct.iter().any(|c| !c) && correct.iter().any(|c| *c));
}

/// Every row's `agrees` and `correct` of a requests.parquet.
fn parquet_marks(path: &Path) -> (Vec<bool>, Vec<bool>) {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let file = std::fs::File::open(path).unwrap();
    let reader = SerializedFileReader::new(file).expect("a Parquet file");
    let mut marks = (Vec::new(), Vec::new());
    for row in reader.get_row_iter(None).unwrap() {
        let row = row.unwrap();
        for (name, field) in row.get_column_iter() {
            match (name.as_str(), field) {
                ("agrees", Field::Bool(b)) => marks.0.push(*b),
                ("correct", Field::Bool(b)) => marks.1.push(*b),
                _ => {}
            }
        }
    }
    marks
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

    // Answers kept, but to another stage's prompts: nothing pairs, and it says so.
    let (o, again) = run_named(dir.path(), "again", &qa("1.0", ""));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let renamed = gated("1.0", &again).replace("stage \"qa\"", "stage \"other\"");
    let (o, out) = run_named(dir.path(), "renamed", &renamed);
    assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
    let v = agreement_verdict(&out);
    let note = v["note"].as_str().unwrap();
    assert!(
        note.contains("the baseline answered none of stage `other`'s prompts"),
        "{note}"
    );
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
