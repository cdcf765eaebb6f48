//! `infermeter validate FILE...`: parses each scenario and prints `ok` or its diagnostics.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use miette::{GraphicalReportHandler, GraphicalTheme};

use crate::scenario;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scenario files to check.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// Override a declared param, e.g. `--param rate=40` (repeatable).
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
}

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

pub fn run(args: ValidateArgs) -> i32 {
    let mut code = crate::exit::OK;
    for file in &args.files {
        match scenario::load(file, &args.params) {
            Ok(s) => println!(
                "ok  {}  ({} datasets, {} stages)",
                file.display(),
                s.datasets.len(),
                s.stages.len()
            ),
            Err(e) => {
                eprintln!("{}", render(&e));
                code = crate::exit::INVALID;
            }
        }
    }
    code
}
