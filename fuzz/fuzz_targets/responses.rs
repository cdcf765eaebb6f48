//! Arbitrary bytes into the Responses API's decoders, a streamed event's data and a whole
//! (`stream #false`) answer, with the checks of `fuzz/checks/responses.rs` (shared with the
//! corpus replay in `cargo test`).
#![no_main]

#[path = "../checks/responses.rs"]
mod checks;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| checks::check(input));
