//! Helpers every subcommand shares: the scenario argument (a file or `-`), and printing
//! errors.

use std::io::IsTerminal;
use std::path::PathBuf;

use miette::{GraphicalReportHandler, GraphicalTheme};

use crate::error::Error;

/// The scenario argument of `run` and `plan`: a file, or `-` for standard input (then read
/// here and named `<stdin>` in diagnostics; relative paths in it resolve against the current
/// directory).
pub fn scenario_source(arg: PathBuf) -> Result<(PathBuf, Option<String>), Error> {
    if arg.as_os_str() != "-" {
        return Ok((arg, None));
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(|source| {
        Error::Io {
            action: "read the scenario from",
            path: "standard input".into(),
            source,
        }
    })?;
    Ok((PathBuf::from("<stdin>"), Some(text)))
}

/// Renders a diagnostic the way every command shows scenario errors: with colour only when
/// stderr is a terminal and NO_COLOR is unset.
pub fn render(diag: &dyn miette::Diagnostic) -> String {
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let mut out = String::new();
    if GraphicalReportHandler::new_themed(theme)
        .render_report(&mut out, diag)
        .is_err()
    {
        out = diag.to_string();
    }
    out
}

/// Prints what clap says of the command line (an error, or the help or version asked for)
/// and returns the exit code: 0 for help and version, the invalid-usage code otherwise.
/// clap formats its own messages; an argument may hold a secret, so they go through the
/// console too.
pub fn print_args_error(e: &clap::Error) -> i32 {
    let styled = e.render();
    let tty = if e.use_stderr() {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    };
    let text = if tty {
        styled.ansi().to_string()
    } else {
        styled.to_string()
    };
    if e.use_stderr() {
        super::console::err_text(&text, tty);
        crate::exit::INVALID
    } else {
        super::console::out_text(&text, tty);
        crate::exit::OK
    }
}

/// Prints a command's error the way every command does: a scenario's diagnostics in full,
/// other errors as one line with their causes and a hint. Verdicts the summary already states
/// (an SLA failed, the run was interrupted) print nothing more.
pub fn print_error(e: &Error) {
    match e {
        // Secrets are masked in every message (a scenario's line with its target, a
        // connection error naming the URL) by the console itself.
        // Its colours are miette's own.
        Error::Scenario(s) => super::console::err_text(&format!("{}\n", render(s)), true),
        Error::SlaFailed { .. } | Error::Aborted(_) | Error::Interrupted => {}
        Error::Regressed { .. } => errln!("{e}"),
        _ => {
            errln!("error: {}", e.chain());
            if let Some(help) = miette::Diagnostic::help(e) {
                errln!("  help: {help}");
            }
        }
    }
}
