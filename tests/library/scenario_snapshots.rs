//! Snapshots of rendered diagnostics: what a user sees for typical mistakes.

use std::path::Path;

use miette::{GraphicalReportHandler, GraphicalTheme};

fn rendered(file: &str) -> String {
    let rel = Path::new("tests/invalid").join(file);
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(&rel)).unwrap();
    let err = infermeter_core::scenario::parse_str(&rel, &text, &[]).expect_err("invalid");
    let mut out = String::new();
    GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .with_width(100)
        .render_report(&mut out, &err)
        .unwrap();
    out
}

#[test]
fn multi_error() {
    insta::assert_snapshot!(rendered("multi-error.kdl"));
}

#[test]
fn unknown_property_did_you_mean() {
    insta::assert_snapshot!(rendered("unknown-stage-child.kdl"));
}

#[test]
fn kdl_syntax_error() {
    insta::assert_snapshot!(rendered("syntax-bad-float.kdl"));
}

#[test]
fn bad_unit() {
    insta::assert_snapshot!(rendered("duration-bad-unit.kdl"));
}
