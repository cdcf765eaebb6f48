//! Arbitrary UTF-8 into the scenario parser: it must return Ok or Err, never panic or overflow
//! its stack, every problem's span must lie inside the text, and every diagnostic must render
//! (as `infermeter validate` prints it) to a bounded size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use miette::{GraphicalReportHandler, GraphicalTheme};

fuzz_target!(|text: &str| {
    let params = [("rate".to_string(), "5".to_string())];
    if let Err(e) = infermeter::scenario::parse_str(std::path::Path::new("fuzz.kdl"), text, &params)
    {
        for p in e.problems() {
            if let Some(span) = p.span {
                assert!(span.offset() + span.len() <= text.len());
                assert!(text.is_char_boundary(span.offset()));
            }
        }
        assert!(e.problems().len() <= infermeter::scenario::MAX_PROBLEMS);
        let mut out = String::new();
        GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor())
            .render_report(&mut out, &e)
            .expect("the diagnostic renders");
        // Each problem quotes a bounded window of the file, whatever its size.
        assert!(
            out.len() <= 4096 * e.problems().len() + 4096,
            "{} bytes",
            out.len()
        );
    }
});
