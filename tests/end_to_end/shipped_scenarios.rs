//! Every shipped scenario decides as shipped (`scenarios/`, `scenarios/bench/`,
//! `scenarios/mlperf/`): run against
//! the embedded simulator, each exits 0 (every SLA held) or 1 (one failed), never 4
//! (undecided), 2 or 3. One that needs something outside infermeter (a server, a fetched data
//! set, a baseline) says so on its first line (`// Needs: …`) and `validate` names it; those
//! are validated, not run. The files are run exactly as shipped; three tests share them out so
//! that the suite's threads run them side by side.

use std::path::{Path, PathBuf};

use crate::support::{command, describe};

/// Every shipped scenario, in a stable order.
fn shipped() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["scenarios", "scenarios/bench", "scenarios/mlperf"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "kdl") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() > 40, "{files:?}");
    files
}

/// What the scenario says it needs from outside, on its first line.
fn needs(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("// Needs: ").map(str::to_string)
}

fn check(path: &Path) {
    let name = path.display();
    // Self-contained: what a scenario reads is under scenarios/, so a copy of the folder (the
    // release archive ships it) runs anywhere.
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        !text.contains("\"../"),
        "{name} reads a file outside scenarios/"
    );
    if let Some(what) = needs(path) {
        let o = command().arg("validate").arg(path).output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            said.contains("needs  a server at") || said.contains("dataset fetch"),
            "{name} needs {what}, but `validate` does not say so: {said}"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let o = command()
        .arg("run")
        .arg(path)
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--quiet", "--no-plots"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let code = o.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "{name} as shipped exited {code:?}, not 0 or 1: {}",
        describe(&o)
    );
}

fn share(part: usize) {
    for (i, path) in shipped().iter().enumerate() {
        if i % 3 == part {
            check(path);
        }
    }
}

#[test]
fn every_shipped_scenario_decides_first_third() {
    share(0);
}

#[test]
fn every_shipped_scenario_decides_second_third() {
    share(1);
}

#[test]
fn every_shipped_scenario_decides_last_third() {
    share(2);
}
