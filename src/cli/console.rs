//! What the CLI prints, through one door: every line written to standard output or standard
//! error passes [`crate::escape::console`], so no secret, terminal escape sequence or GitHub
//! workflow command (`::add-mask::`, `::error::`) reaches a terminal or a CI log from a
//! value the tool did not write, whichever message carried it. Values are escaped where they
//! are put into a line as well ([`crate::escape::terminal`]); this is the net behind that.

use std::io::Write as _;

/// Prints `text` to standard output as it is, less what [`crate::escape::console`] removes;
/// `styled` keeps the colour codes the summary paints itself.
pub(super) fn out_text(text: &str, styled: bool) {
    let shown = crate::escape::console(text, styled);
    // A closed pipe (`infermeter … | head`) is the reader's choice, not an error.
    let _ = std::io::stdout().lock().write_all(shown.as_bytes());
}

/// `println!` through [`out_text`].
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::console::line_out(&format!($($arg)*))
    };
}

/// `eprintln!` through [`err_text`].
macro_rules! tell {
    ($($arg:tt)*) => {
        $crate::cli::console::line_err(&format!($($arg)*))
    };
}

pub(crate) use {say, tell};

/// Prints `text` to standard error, as [`out_text`] does to standard output.
pub(super) fn err_text(text: &str, styled: bool) {
    let shown = crate::escape::console(text, styled);
    let _ = std::io::stderr().lock().write_all(shown.as_bytes());
}

pub(crate) fn line_out(line: &str) {
    out_text(&format!("{line}\n"), false);
}

pub(crate) fn line_err(line: &str) {
    err_text(&format!("{line}\n"), false);
}
