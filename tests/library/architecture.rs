//! The intended structure, held against the code. Cargo holds the walls between the crates of
//! the workspace (a crate cannot import one it does not depend on); this test holds what
//! Cargo cannot. docs/architecture.md is the source: its table of parts says which part every
//! folder and top-level file of each crate's `src/` is, its table of arrows that must never
//! exist says what no part may import. The imports are the code's own
//! (`architecture/imports.rs` reads them with syn, test modules aside), and: every folder is
//! on a part, no import is a never-arrow, no two folders import each other, and no files
//! import each other in a circle.

mod imports;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Every crate of the workspace: its `src/` (relative to the repository) and its root file.
const CRATES: [(&str, &str); 5] = [
    ("crates/stats/src", "lib.rs"),
    ("crates/words/src", "lib.rs"),
    ("crates/sim/src", "lib.rs"),
    ("crates/core/src", "lib.rs"),
    ("src", "main.rs"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Every import between two files of one crate, read once for all the tests here; files are
/// named from the repository root (`crates/core/src/runner/stage.rs`).
fn imports() -> &'static imports::Imports {
    static IMPORTS: OnceLock<imports::Imports> = OnceLock::new();
    IMPORTS.get_or_init(|| {
        let mut all = imports::Imports::new();
        for (src, root_file) in CRATES {
            let krate = imports::Crate::read(&root().join(src), root_file);
            for ((a, b), how) in krate.imports() {
                all.insert((format!("{src}/{a}"), format!("{src}/{b}")), how);
            }
        }
        all
    })
}

/// The folder (or top-level file) of a crate's `src/` a file is in:
/// `crates/core/src/runner` for `crates/core/src/runner/stage.rs`, `crates/words/src/units`
/// for `crates/words/src/units.rs`, `crates/words/src/protocol` for both `protocol.rs` and
/// `protocol/api.rs`.
fn unit(file: &str) -> String {
    let (src, rest) = CRATES
        .iter()
        .filter_map(|(src, _)| Some((*src, file.strip_prefix(src)?.strip_prefix('/')?)))
        .max_by_key(|(src, _)| src.len())
        .unwrap_or_else(|| panic!("{file} is in no crate"));
    let first = rest.split('/').next().unwrap();
    format!("{src}/{}", first.strip_suffix(".rs").unwrap_or(first))
}

/// docs/architecture.md's text, and the table that starts with the header `header`: its
/// rows, each a list of cells.
fn doc_table(header: &str) -> Vec<Vec<String>> {
    let doc = root().join("docs/architecture.md");
    let text = std::fs::read_to_string(doc).unwrap();
    let start = text
        .find(header)
        .unwrap_or_else(|| panic!("docs/architecture.md has no table `{header}`"));
    text[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells = l.trim().trim_matches('|').split(" | ");
            cells.map(|c| c.trim().to_string()).collect()
        })
        .collect()
}

/// The part a unit is on: its own row, or its crate's (a row naming a whole `…/src/`).
fn part_of<'a>(parts: &'a BTreeMap<String, String>, unit: &str) -> Option<&'a String> {
    parts.get(unit).or_else(|| {
        let (src, _) = unit.rsplit_once('/')?;
        parts.get(src)
    })
}

/// Unit → part, from the table of parts (every `…src/…` path in a row's second cell; a
/// crate's whole `src/` puts every unit of that crate on the part).
fn parts() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for row in doc_table("| part | folders | owns |") {
        for entry in row[1].split('`').filter(|s| s.contains("src/")) {
            let name = entry.trim_end_matches('/');
            let unit = name.strip_suffix(".rs").unwrap_or(name).to_string();
            if let Some(other) = out.insert(unit.clone(), row[0].clone())
                && other != row[0]
            {
                panic!("{name} is on two parts: {other} and {}", row[0]);
            }
        }
    }
    out
}

/// The arrows (part → part) that must never exist.
fn nevers() -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for row in doc_table("| never | because |") {
        for arrow in row[0].split(", ") {
            let (from, to) = arrow
                .split_once(" → ")
                .unwrap_or_else(|| panic!("`{arrow}` is not `Part → Part`"));
            out.insert((from.to_string(), to.to_string()));
        }
    }
    out
}

#[test]
fn every_folder_is_on_a_part() {
    let parts = parts();
    let mut unmapped = Vec::new();
    let mut units = BTreeSet::new();
    for (src, _) in CRATES {
        for entry in std::fs::read_dir(root().join(src)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() || name.ends_with(".rs") {
                let unit = format!("{src}/{}", name.strip_suffix(".rs").unwrap_or(&name));
                if part_of(&parts, &unit).is_none() {
                    unmapped.push(format!("{src}/{name}"));
                }
                units.insert(unit);
            }
        }
    }
    assert!(
        unmapped.is_empty(),
        "on no part of docs/architecture.md's table of parts: {unmapped:?}"
    );
    let crates: BTreeSet<&str> = CRATES.iter().map(|(src, _)| *src).collect();
    let stale: Vec<_> = parts
        .keys()
        .filter(|u| !units.contains(*u) && !crates.contains(u.as_str()))
        .collect();
    assert!(
        stale.is_empty(),
        "docs/architecture.md names what the crates lack: {stale:?}"
    );
    let names: BTreeSet<&String> = parts.values().collect();
    for (from, to) in nevers() {
        assert!(
            names.contains(&from) && names.contains(&to),
            "never {from} → {to}: not parts"
        );
    }
}

#[test]
fn no_never_arrow_exists() {
    let (parts, nevers) = (parts(), nevers());
    let part = |file: &str| part_of(&parts, &unit(file)).cloned().unwrap_or_default();
    let broken: Vec<String> = imports()
        .iter()
        .filter(|((a, b), _)| nevers.contains(&(part(a), part(b))))
        .map(|((a, b), how)| format!("{} → {}: {a} names {how}", part(a), part(b)))
        .collect();
    assert!(broken.is_empty(), "never-arrows: {broken:#?}");
}

#[test]
fn no_two_folders_import_each_other() {
    let mut arrows: BTreeMap<(String, String), (&str, &str)> = BTreeMap::new();
    for ((a, b), how) in imports() {
        if unit(a) != unit(b) {
            arrows.entry((unit(a), unit(b))).or_insert((a, how));
        }
    }
    let mutual: Vec<String> = arrows
        .iter()
        .filter(|((x, y), _)| x < y)
        .filter_map(|((x, y), (a, how))| {
            let (b, back) = arrows.get(&(y.clone(), x.clone()))?;
            Some(format!("{x} ⇄ {y}: {a} names {how}, {b} names {back}"))
        })
        .collect();
    assert!(
        mutual.is_empty(),
        "folders importing each other: {mutual:#?}"
    );
}

#[test]
fn no_files_import_each_other_in_a_circle() {
    let edges = imports();
    let circles: Vec<Vec<String>> = circles(edges.keys())
        .into_iter()
        .map(|files| {
            let within = |f: &String| files.contains(f);
            let arrows = edges.iter().filter(|((a, b), _)| within(a) && within(b));
            arrows
                .map(|((a, b), how)| format!("{a} → {b} ({how})"))
                .collect()
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles between files (move what both need into a file of its own): {circles:#?}"
    );
}

/// Every set of files that import each other, directly or round a circle (the strongly
/// connected components of more than one file, by Tarjan's algorithm), each as its files.
fn circles<'a>(edges: impl Iterator<Item = &'a (String, String)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    let mut t = Tarjan {
        next: &next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in next.keys() {
        if !t.index.contains_key(node) {
            t.visit(node);
        }
    }
    t.out
}

struct Tarjan<'a> {
    next: &'a BTreeMap<&'a str, Vec<&'a str>>,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    on_stack: BTreeSet<&'a str>,
    out: Vec<Vec<String>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, node: &'a str) {
        let i = self.index.len();
        self.index.insert(node, i);
        self.low.insert(node, i);
        self.stack.push(node);
        self.on_stack.insert(node);
        for &to in &self.next[node] {
            if !self.index.contains_key(to) {
                self.visit(to);
                let low = self.low[node].min(self.low[to]);
                self.low.insert(node, low);
            } else if self.on_stack.contains(to) {
                let low = self.low[node].min(self.index[to]);
                self.low.insert(node, low);
            }
        }
        if self.low[node] == self.index[node] {
            let mut component = Vec::new();
            while let Some(top) = self.stack.pop() {
                self.on_stack.remove(top);
                component.push(top.to_string());
                if top == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                self.out.push(component);
            }
        }
    }
}
