//! Arbitrary UTF-8 into the chunk decoder: it must return Ok or Err, never panic; whatever the
//! scanner answers must be what the reference derives from the `serde_json::Value` of the same
//! text (so whenever serde_json parses the input as an object, the fields agree); and
//! `parse_chunk` must accept exactly what the reference accepts.
#![no_main]

use infermeter_core::protocol::{parse_chunk, parse_chunk_value, scan_chunk};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let decoded = parse_chunk(text);
    let reference = parse_chunk_value(text);
    if let Some(scanned) = scan_chunk(text) {
        let reference = reference
            .as_ref()
            .unwrap_or_else(|e| panic!("the scanner accepted what serde_json rejects: {e}"));
        assert_eq!(&scanned, reference);
    }
    assert_eq!(decoded.is_ok(), reference.is_ok(), "{decoded:?} vs {reference:?}");
    if let (Ok(d), Ok(r)) = (&decoded, &reference) {
        assert_eq!(d, r);
        // Decoding the text on demand is the caller's step: it must not panic either.
        let mut out = String::new();
        for s in [&d.answer, &d.reasoning].into_iter().flatten() {
            s.push_to(&mut out);
        }
    }
});
