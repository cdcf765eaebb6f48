//! Arbitrary bytes as a `results.json`, through the one reader every command uses, with the
//! checks of `fuzz/checks/parse_results.rs` (shared with the corpus replay in `cargo test`).
#![no_main]

#[path = "../checks/parse_results.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    checks::check(data);
});
