//! The error type of every report writer.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A template failed to parse or render: which template, where in it, and (for an
    /// undefined name, say) the expression that failed; the cause says what went wrong.
    #[error(
        "failed to render the template {name}{}{}",
        line.map(|l| format!(", line {l}")).unwrap_or_default(),
        at.as_deref().map(|a| format!(", at `{a}`")).unwrap_or_default()
    )]
    Template {
        name: String,
        line: Option<usize>,
        /// The template text the error points at, shortened.
        at: Option<String>,
        #[source]
        source: minijinja::Error,
    },
    #[error("failed to access {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    /// A line of `requests.jsonl` that is not a request's row.
    #[error("{}, line {line}, is not a row of requests.jsonl", path.display())]
    RequestRow {
        path: PathBuf,
        line: u64,
        #[source]
        source: serde_json::Error,
    },
    #[cfg(feature = "parquet")]
    #[error("failed to write the Parquet file {}", path.display())]
    Parquet {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// An output this build cannot write (its cargo feature was left out).
    #[error("cannot write {}: this build of infermeter has no `{feature}` feature", path.display())]
    NotBuilt {
        path: PathBuf,
        feature: &'static str,
    },
    #[error("failed to draw a plot: {0}")]
    Plot(String),
    /// Two plots of one run would have the same file name.
    #[error(
        "plots `{first}` and `{second}` would both be written to {file}; the second is skipped"
    )]
    PlotCollision {
        file: String,
        first: String,
        second: String,
    },
}

impl ReportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ReportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The most of a template's text an error quotes.
const QUOTE_CHARS: usize = 80;

impl From<minijinja::Error> for ReportError {
    fn from(source: minijinja::Error) -> Self {
        let at = source.range().and_then(|r| {
            let text = source.template_source()?.get(r)?.trim();
            let mut quoted: String = text.chars().take(QUOTE_CHARS).collect();
            if quoted.len() < text.len() {
                quoted.push('…');
            }
            (!quoted.is_empty()).then_some(quoted)
        });
        ReportError::Template {
            name: source.name().unwrap_or("(unnamed)").to_string(),
            line: source.line(),
            at,
            source,
        }
    }
}
