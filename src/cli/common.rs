//! Helpers every subcommand shares: `--param` and percentage parsing, and printing errors.

use std::io::IsTerminal;
use std::path::PathBuf;

use miette::{GraphicalReportHandler, GraphicalTheme};

use crate::error::Error;

/// Splits `NAME=VALUE` at the first `=`.
pub fn parse_param(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.to_string()))
        }
        _ => Err(format!("expected NAME=VALUE, got `{s}`")),
    }
}

/// `I/N`: shard I (0-based) of N.
pub fn parse_shard(s: &str) -> Result<crate::plan::Slice, String> {
    let bad = || format!("expected I/N (shard I of N, 0-based, e.g. 0/4), got `{s}`");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let index: u32 = i.trim().parse().map_err(|_| bad())?;
    let count: u32 = n.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(format!(
            "shard {index}/{count}: the index must be below the count (0 … {})",
            count.max(1) - 1
        ));
    }
    Ok(crate::plan::Slice { index, count })
}

/// The exit of a merged distributed run: partial or stopped early (3), else its gate.
pub fn merged_check(v: &crate::coordinate::Verdict) -> Result<(), Error> {
    use crate::sla::SlaOutcome;
    if !v.missing.is_empty() {
        return Err(Error::Partial {
            missing: v.missing.clone(),
        });
    }
    if v.interrupted {
        return Err(Error::Incomplete {
            causes: vec![
                v.error
                    .clone()
                    .unwrap_or_else(|| "a shard stopped early".into()),
            ],
        });
    }
    match v.outcome {
        SlaOutcome::Pass => Ok(()),
        SlaOutcome::Fail => Err(Error::SlaFailed {
            failed: v.failed,
            undecided: v.undecided,
        }),
        SlaOutcome::Inconclusive => Err(Error::Inconclusive {
            undecided: v.undecided,
            untrusted: v.untrusted,
        }),
    }
}

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

/// A percentage from 0 to 100 (`5`, `12.5%`).
pub fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("`{s}` is not a number (a percentage, e.g. 5)"))?;
    if (0.0..=100.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not between 0 and 100"))
    }
}

/// Prints a command's error the way every command does: a scenario's diagnostics in full,
/// other errors as one line with their causes and a hint. Verdicts the summary already states
/// (an SLA failed, the run was interrupted) print nothing more.
pub fn print_error(e: &Error) {
    match e {
        // clap formats its own messages, help and version included.
        Error::Args(e) => {
            let _ = e.print();
        }
        // Secrets in URLs are masked in every message (a scenario's line with its target, a
        // connection error naming the URL).
        Error::Scenario(s) => eprintln!("{}", crate::redact::secrets(&render(s))),
        Error::SlaFailed { .. } | Error::Aborted(_) | Error::Interrupted => {}
        Error::Regressed { .. } => eprintln!("{e}"),
        _ => {
            eprintln!("error: {}", crate::redact::secrets(&e.chain()));
            if let Some(help) = miette::Diagnostic::help(e) {
                eprintln!("  help: {}", crate::redact::secrets(&help.to_string()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_threshold_is_a_percentage() {
        assert_eq!(percent("5"), Ok(5.0));
        assert_eq!(percent("12.5%"), Ok(12.5));
        assert!(percent("150").is_err());
        assert!(percent("lots").unwrap_err().contains("not a number"));
    }
}
