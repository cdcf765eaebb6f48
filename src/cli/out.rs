//! Writing to standard output and standard error without panicking when the reader has gone
//! (`infermeter schema results | head -c 10`, a CI step that closed the log): `outln!`
//! panics on a closed pipe and the process would exit 101, not with the command's own code. A
//! closed stream has no reader left to tell, so what is written to it is dropped and the
//! command ends as it would have. Every line the CLI prints goes through these macros.

use std::io::Write;

/// Writes `args` to standard output, dropping it when the stream is closed.
pub fn stdout(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_fmt(args).and_then(|()| out.flush());
}

/// Writes `args` to standard error, dropping it when the stream is closed.
pub fn stderr(args: std::fmt::Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `print!` that does not panic on a closed standard output.
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::out::stdout(format_args!($($t)*)) };
}

/// `outln!` that does not panic on a closed standard output.
macro_rules! outln {
    () => { $crate::cli::out::stdout(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::out::stdout(format_args!("{}\n", format_args!($($t)*))) };
}

/// `errln!` that does not panic on a closed standard error.
macro_rules! errln {
    () => { $crate::cli::out::stderr(format_args!("\n")) };
    ($($t:tt)*) => { $crate::cli::out::stderr(format_args!("{}\n", format_args!($($t)*))) };
}
