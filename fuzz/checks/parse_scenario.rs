//! The promises the scenario parser keeps on any text, checked by the `parse_scenario` fuzz
//! target on every input it makes and by `tests/library/scenario_fuzz.rs` on the corpus it
//! grew (one copy, included by both with `#[path]`): Ok or Err, never a panic or a stack
//! overflow; every problem's span inside the text on a character boundary; at most
//! `MAX_PROBLEMS` problems; a diagnostic that renders, quoting a bounded window of the file.

use std::path::Path;

use infermeter_core::scenario::{MAX_PROBLEMS, parse_str};
use miette::{GraphicalReportHandler, GraphicalTheme};

/// The checks on `text`; the rendered diagnostic, when the text is invalid.
pub fn check(text: &str) -> Option<String> {
    let params = [("rate".to_string(), "5".to_string())];
    let e = parse_str(Path::new("fuzz.kdl"), text, &params).err()?;
    for p in e.problems() {
        if let Some(span) = p.span {
            assert!(span.offset() + span.len() <= text.len());
            assert!(text.is_char_boundary(span.offset()));
        }
    }
    assert!(e.problems().len() <= MAX_PROBLEMS);
    let mut out = String::new();
    GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
        .render_report(&mut out, &e)
        .expect("the diagnostic renders");
    assert!(
        out.len() <= 4096 * e.problems().len() + 4096,
        "{} bytes",
        out.len()
    );
    Some(out)
}
