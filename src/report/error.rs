//! The error type of every report writer.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("failed to render the report template")]
    Template(#[from] minijinja::Error),
    #[error("failed to access {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Results(#[from] crate::results::ResultsError),
    #[error("failed to draw a plot: {0}")]
    Plot(String),
}

impl ReportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ReportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
