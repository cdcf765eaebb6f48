//! The seeds (and anything a run of it added) of the `responses` fuzz target
//! (`fuzz/corpus/responses/`), replayed in every test run on stable Rust with the target's own
//! checks (`fuzz/checks/responses.rs`), each input whole and cut at every byte of its first
//! 512 (a body or an event cut short must decode or fail, never panic).

#[path = "../../fuzz/checks/responses.rs"]
mod checks;

#[test]
fn the_fuzz_corpus_holds_the_decoders_promises() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/responses");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus is in the repository") {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        checks::check(&input);
        for end in 0..input.len().min(512) {
            checks::check(&input[..end]);
        }
        n += 1;
    }
    assert!(n >= 12, "{n} inputs: the corpus went missing");
}
