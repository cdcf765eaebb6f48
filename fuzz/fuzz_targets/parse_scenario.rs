//! Arbitrary UTF-8 into the scenario parser: it must return Ok or Err, never panic, and every
//! problem's span must lie inside the text (miette would fail to render it otherwise).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let params = [("rate".to_string(), "5".to_string())];
    if let Err(e) = infermeter::scenario::parse_str(std::path::Path::new("fuzz.kdl"), text, &params) {
        for p in e.problems() {
            if let Some(span) = p.span {
                assert!(span.offset() + span.len() <= text.len());
                assert!(text.is_char_boundary(span.offset()));
            }
        }
    }
});
