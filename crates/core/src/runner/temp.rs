//! The run's row files (`requests.jsonl`, `answers.jsonl`) are written to a temporary file
//! beside their path and renamed over it at the end of the run ([`persist_temp`]), so a
//! reader never mixes this run's rows with an older run's, nor sees a half-written last row.

use std::io::BufWriter;
use std::path::Path;

use super::error::RunError;

/// A temporary file beside `path`, named `{prefix}….tmp`, readable like any file the user
/// writes.
pub(super) fn temp_beside(path: &Path, prefix: &str) -> Result<tempfile::NamedTempFile, RunError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix).suffix(".jsonl.tmp");
    // Readable like any file the user writes (a temporary file is private by default).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    builder.tempfile_in(dir).map_err(|source| RunError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Flushes and syncs the rows, then renames them over `path`.
pub(super) fn persist_temp(
    w: BufWriter<tempfile::NamedTempFile>,
    path: &Path,
) -> std::io::Result<()> {
    let file = w
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error)?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}
