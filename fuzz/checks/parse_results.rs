//! The promises the one reader of `results.json` (`results::parse_results`: parse, migrate,
//! validate) keeps on any bytes, checked by the `parse_results` fuzz target on every input it
//! makes and by `tests/library/results_corpus.rs` on the corpus it grew (one copy, included by
//! both with `#[path]`): it may refuse anything but never panics; what it accepts holds
//! together (the validator passes it), is written and read again unchanged and accepted
//! again, and renders as the terminal summary.

use infermeter_core::results::{parse_results, validate};

/// The checks on `data`; whether it was accepted.
pub fn check(data: &[u8]) -> bool {
    let Ok(r) = parse_results(data) else {
        return false;
    };
    validate(&r).expect("an accepted result is consistent");
    let json = serde_json::to_vec(&r).expect("an accepted result is written");
    let again = parse_results(&json).expect("an accepted result, written, is accepted again");
    assert_eq!(again, r, "written and read again, a result is unchanged");
    let _ = infermeter_core::report::render_summary_text(&r);
    true
}
