//! Arbitrary bytes as what a server answers, through the client's response-head parser as the
//! client calls it (on the whole buffer after every read, the reads cut where the input says),
//! with the checks of `fuzz/checks/response_head.rs` (shared with the corpus replay in `cargo
//! test`).
#![no_main]

#[path = "../checks/response_head.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    if let Some((cuts, answer)) = checks::split(input) {
        checks::check_reads(cuts, answer);
    }
});
