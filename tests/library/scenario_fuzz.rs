//! Regressions for the scenario fuzzer (`fuzz/fuzz_targets/parse_scenario.rs`): the inputs
//! that crashed the parser, or that would flood a terminal, checked with the fuzz target's own checks
//! (`fuzz/checks/parse_scenario.rs`): Ok or Err, spans inside the text, a diagnostic that
//! renders, bounded.
//! The corpus the fuzzer grew (`fuzz/corpus/parse_scenario/`, kept minimised in the
//! repository) is replayed here too, so `cargo test` holds every input it ever found
//! interesting without the nightly toolchain `cargo fuzz` needs.

use std::path::{Path, PathBuf};

use infermeter_core::scenario::MAX_DEPTH;

#[path = "../../fuzz/checks/parse_scenario.rs"]
mod checks;
use checks::check;

#[test]
fn deep_nesting_is_one_diagnostic_not_a_stack_overflow() {
    // 5000 levels aborted the process (SIGABRT, exit 134) before the depth bound.
    for n in [MAX_DEPTH + 1, 5_000, 200_000] {
        let text = format!("stage \"a\" {}{}", "{ x ".repeat(n), "}".repeat(n));
        let out = check(&text).expect("too deep is invalid");
        assert!(out.contains("nest more than 64 levels"), "{out}");
    }
    // Slashdashed and unclosed blocks count too; so do blocks without node names.
    for text in [
        format!("/- a {}", "{".repeat(10_000)),
        "{".repeat(10_000),
        format!("a {}", "{ b ".repeat(10_000)),
    ] {
        let out = check(&text).expect("invalid");
        assert!(
            out.contains("nest more than"),
            "{}",
            &out[..out.len().min(400)]
        );
    }
}

#[test]
fn braces_inside_strings_and_comments_are_not_nesting() {
    let many = "{".repeat(5_000);
    for text in [
        format!("scenario \"{many}\""),
        format!("scenario #\"{many}\"#"),
        format!("// {many}\nscenario \"x\""),
        format!("/* {many} */ scenario \"x\""),
    ] {
        if let Some(out) = check(&text) {
            assert!(
                !out.contains("nest more than"),
                "{}",
                &out[..out.len().min(400)]
            );
        }
    }
}

#[test]
fn long_garbage_lines_give_bounded_diagnostics() {
    for text in [
        "x".repeat(1 << 20),
        format!("stage \"{}\" {{ foo; }}", "s".repeat(1 << 20)),
        format!("{} = = =", "é".repeat(300_000)),
        "\"unterminated".repeat(50_000),
        format!("a b=\"{}", "\u{2028}".repeat(1000)),
    ] {
        check(&text);
    }
}

#[test]
fn the_fuzz_corpus_replays_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/parse_scenario");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fuzz/corpus/parse_scenario exists")
        .map(|e| e.expect("readable entry").path())
        .collect();
    files.sort();
    // A corpus lost to a .gitignore or a careless cmin would pass vacuously.
    assert!(
        files.len() >= 100,
        "{} files in {}",
        files.len(),
        dir.display()
    );
    for path in &files {
        let bytes = std::fs::read(path).expect("readable");
        // What libfuzzer-sys hands a `&str` target: the input's longest UTF-8 prefix.
        let text = match std::str::from_utf8(&bytes) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).expect("a UTF-8 prefix"),
        };
        check(text);
    }
}
