//! The corpus the `parse_results` fuzz target grew (`fuzz/corpus/parse_results/`, seeded with
//! the results the project ships), replayed in every test run on stable Rust with the target's
//! own checks (`fuzz/checks/parse_results.rs`): never a panic; what is accepted holds
//! together, survives being written and read again, and renders.

#[path = "../../fuzz/checks/parse_results.rs"]
mod checks;

#[test]
fn the_fuzz_corpus_holds_the_readers_promises() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/parse_results");
    let (mut n, mut accepted) = (0, 0);
    for entry in std::fs::read_dir(&dir).expect("the corpus is in the repository") {
        let input = std::fs::read(entry.unwrap().path()).unwrap();
        n += 1;
        accepted += usize::from(checks::check(&input));
    }
    // The seeds (the shipped results) are accepted; a corpus lost to a careless cmin would
    // pass vacuously.
    assert!(n >= 7 && accepted >= 7, "{n} inputs, {accepted} accepted");
}
