//! Arbitrary UTF-8 into the scenario parser, with the checks of `fuzz/checks/parse_scenario.rs`
//! (shared with the corpus replay in `cargo test`).
#![no_main]

#[path = "../checks/parse_scenario.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    checks::check(text);
});
