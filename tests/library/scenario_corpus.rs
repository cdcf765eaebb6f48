//! Every file in tests/invalid/ is an invalid scenario whose header says what the rendered
//! diagnostic must contain (`// expect: TEXT`, repeatable) and on which lines problems must be
//! reported (`// line: N [N…]`).

use std::path::{Path, PathBuf};

use miette::{GraphicalReportHandler, GraphicalTheme};

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/invalid");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/invalid exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "kdl"))
        .collect();
    files.sort();
    files
}

fn render(e: &infermeter_core::scenario::ScenarioError) -> String {
    let mut out = String::new();
    GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .with_width(200)
        .render_report(&mut out, e)
        .expect("rendering succeeds");
    out
}

struct Expectations {
    substrings: Vec<String>,
    lines: Vec<usize>,
}

fn expectations(text: &str) -> Expectations {
    let mut substrings = Vec::new();
    let mut lines = Vec::new();
    for l in text.lines().take_while(|l| l.starts_with("//")) {
        if let Some(s) = l.strip_prefix("// expect: ") {
            substrings.push(s.to_string());
        } else if let Some(s) = l.strip_prefix("// line: ") {
            lines.extend(
                s.split_whitespace()
                    .map(|n| n.parse::<usize>().expect("line number")),
            );
        }
    }
    Expectations { substrings, lines }
}

#[test]
fn corpus_is_large_enough() {
    assert!(
        corpus().len() >= 40,
        "tests/invalid/ needs at least 40 cases"
    );
}

#[test]
fn every_invalid_file_reports_what_it_expects() {
    let mut failures = Vec::new();
    for path in corpus() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let exp = expectations(&text);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!exp.substrings.is_empty(), "{name}: no `// expect:` line");
        assert!(!exp.lines.is_empty(), "{name}: no `// line:` line");
        // A relative display path keeps the rendered report independent of the checkout.
        let shown = Path::new("tests/invalid").join(&name);
        let err = match infermeter_core::scenario::parse_str(&shown, &text, &[]) {
            Ok(_) => {
                failures.push(format!("{name}: parsed as valid"));
                continue;
            }
            Err(e) => e,
        };
        let report = render(&err);
        for s in &exp.substrings {
            if !report.contains(s.as_str()) {
                failures.push(format!("{name}: missing {s:?} in\n{report}"));
            }
        }
        for line in &exp.lines {
            let at = format!("[{}:{line}:", shown.display());
            if !report.contains(&at) {
                failures.push(format!(
                    "{name}: no problem reported on line {line} in\n{report}"
                ));
            }
        }
        // Every problem carries a span and a hint or a label that explains it.
        for p in err.problems() {
            assert!(p.span.is_some(), "{name}: problem without a span: {p}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
