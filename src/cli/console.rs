//! What the CLI prints, through one door: every byte written to standard output or standard
//! error passes [`crate::escape::console`], so no secret, terminal escape sequence or GitHub
//! workflow command (`::add-mask::`, `::error::`) reaches a terminal or a CI log from a
//! value the tool did not write, whichever message carried it. Values are escaped where they
//! are put into a line as well ([`crate::escape::terminal`]); this is the net behind that.
//!
//! The door never panics when its reader has gone (`infermeter schema results | head -c 10`,
//! a CI step that closed the log): `println!` would, and the process would exit 101 instead
//! of with the command's own code. A closed stream has no reader left to tell, so what is
//! written to it is dropped and the command ends as it would have. `out!`, `outln!` and
//! `errln!` are `print!`, `println!` and `eprintln!` through this door; [`out_text`] and
//! [`err_text`] take text that keeps the colours the tool painted itself.

use std::io::Write as _;

/// Prints `text` to standard output as it is, less what [`crate::escape::console`] removes;
/// `styled` keeps the colour codes the summary paints itself.
pub(super) fn out_text(text: &str, styled: bool) {
    let shown = crate::escape::console(text, styled);
    let mut out = std::io::stdout().lock();
    // A closed pipe is the reader's choice, not an error; flushed here so that a partial
    // line (`out!`) shows before a prompt or a later line on standard error.
    let _ = out.write_all(shown.as_bytes()).and_then(|()| out.flush());
}

/// Prints `text` to standard error, as [`out_text`] does to standard output.
pub(super) fn err_text(text: &str, styled: bool) {
    let shown = crate::escape::console(text, styled);
    let _ = std::io::stderr().lock().write_all(shown.as_bytes());
}

/// `print!` through [`out_text`].
macro_rules! out {
    ($($t:tt)*) => {
        $crate::cli::console::out_text(&format!($($t)*), false)
    };
}

/// `println!` through [`out_text`].
macro_rules! outln {
    () => { $crate::cli::console::out_text("\n", false) };
    ($($t:tt)*) => {
        $crate::cli::console::out_text(&format!("{}\n", format_args!($($t)*)), false)
    };
}

/// `eprintln!` through [`err_text`].
macro_rules! errln {
    () => { $crate::cli::console::err_text("\n", false) };
    ($($t:tt)*) => {
        $crate::cli::console::err_text(&format!("{}\n", format_args!($($t)*)), false)
    };
}
