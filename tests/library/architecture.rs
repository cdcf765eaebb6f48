//! The intended structure, held against the code (see docs/architecture.md): no two folders of
//! `src/` import each other, and no import breaks an arrow that must never exist. An import is
//! any `crate::X` path outside comments and test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Folder (or top-level file) → the folders its code names, with one file that does.
fn imports() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(&src).unwrap();
            let name = rel.to_string_lossy().into_owned();
            if name.ends_with("_tests.rs") || name.ends_with("/tests.rs") {
                continue;
            }
            let top = rel
                .components()
                .next()
                .unwrap()
                .as_os_str()
                .to_string_lossy();
            let top = top.trim_end_matches(".rs").to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            for line in code.lines() {
                let line = line.split("//").next().unwrap();
                for (i, _) in line.match_indices("crate::") {
                    let rest = &line[i + 7..];
                    let names: Vec<&str> = match rest.strip_prefix('{') {
                        // `use crate::{a::X, b};` on one line.
                        Some(group) => group
                            .split(['}', ','])
                            .map(|s| s.trim().split("::").next().unwrap_or(""))
                            .collect(),
                        None => vec![
                            rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                                .next()
                                .unwrap(),
                        ],
                    };
                    for dst in names {
                        if !dst.is_empty() && dst != top && dst != "self" {
                            out.entry(top.clone())
                                .or_default()
                                .entry(dst.to_string())
                                .or_insert_with(|| name.clone());
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn no_two_folders_import_each_other() {
    let deps = imports();
    let mut mutual = BTreeSet::new();
    for (a, targets) in &deps {
        for (b, file) in targets {
            if let Some(back) = deps.get(b).and_then(|t| t.get(a)) {
                let (x, y) = if a < b { (a, b) } else { (b, a) };
                mutual.insert(format!("{x} ⇄ {y} ({file}, {back})"));
            }
        }
    }
    assert!(
        mutual.is_empty(),
        "folders importing each other: {mutual:?}"
    );
}

#[test]
fn no_never_arrow_exists() {
    // The whiteboard's parts, by folder.
    let part = |folder: &str| -> &'static str {
        match folder {
            "cli" | "main" => "Face",
            "scenario" => "Scenario",
            "plan" | "arrival" | "dataset" => "Plan",
            "hooks" => "Hooks",
            "runner" | "client" => "Runner",
            "metrics" => "Metrics",
            "sla" => "Sla",
            "telemetry" => "Telemetry",
            "report" => "Report",
            "sim" => "Sim",
            _ => "",
        }
    };
    let never = [
        ("Scenario", "Runner"),
        ("Scenario", "Report"),
        ("Plan", "Runner"),
        ("Plan", "Report"),
        ("Runner", "Scenario"),
        ("Runner", "Report"),
        ("Metrics", "Runner"),
        ("Metrics", "Report"),
        ("Sla", "Report"),
        ("Report", "Runner"),
        ("Sim", "Runner"),
        ("Sim", "Report"),
        ("Scenario", "Face"),
        ("Runner", "Face"),
        ("Report", "Face"),
    ];
    let mut broken = Vec::new();
    for (a, targets) in imports() {
        for (b, file) in targets {
            let arrow = (part(&a), part(&b));
            if never.contains(&arrow) {
                broken.push(format!(
                    "{} → {} ({file} names crate::{b})",
                    arrow.0, arrow.1
                ));
            }
        }
    }
    assert!(broken.is_empty(), "never-arrows: {broken:?}");
}
