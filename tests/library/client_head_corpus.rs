//! The corpus the `response_head` fuzz target grew (`fuzz/corpus/response_head/`), replayed in
//! every test run on stable Rust with the target's own checks (`fuzz/checks/response_head.rs`),
//! at the input's cuts and at every read boundary.

#[path = "../../fuzz/checks/response_head.rs"]
mod checks;

#[test]
fn the_fuzz_corpus_holds_the_parsers_promises() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/response_head");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus is in the repository") {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        let Some((cuts, answer)) = checks::split(&input) else {
            continue;
        };
        checks::check_reads(cuts, answer);
        checks::check_every_boundary(answer);
        n += 1;
    }
    assert!(n > 100, "{n} inputs: the corpus went missing");
}
