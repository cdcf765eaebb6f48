//! Arbitrary bytes as a `results.json`, through the one reader every command uses
//! (`results::parse_results`: parse, migrate, validate). It may refuse anything, but must not
//! panic; what it accepts must hold together (the validator passes it), be written and read
//! again unchanged and accepted again, and render as the terminal summary without a panic.
#![no_main]

use infermeter::results::{parse_results, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = parse_results(data) else {
        return;
    };
    validate(&r).expect("an accepted result is consistent");
    let json = serde_json::to_vec(&r).expect("an accepted result is written");
    let again = parse_results(&json).expect("an accepted result, written, is accepted again");
    assert_eq!(again, r, "written and read again, a result is unchanged");
    let _ = infermeter::report::render_summary_text(&r);
});
