//! Helpers every subcommand shares: `--param` parsing and diagnostic rendering.

use std::io::IsTerminal;

use miette::{GraphicalReportHandler, GraphicalTheme};

/// Splits `NAME=VALUE` at the first `=`.
pub fn parse_param(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(format!("expected NAME=VALUE, got `{s}`")),
    }
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
