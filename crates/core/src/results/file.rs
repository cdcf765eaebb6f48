//! Reading and writing `results.json`. A write goes to a temporary file in the same directory
//! that is then renamed over the target, so a reader never sees a half-written result (a full
//! disk leaves the old file or none, never a truncated one).

use std::borrow::Cow;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::model::Results;
use super::validate::{Inconsistent, validate};
use crate::sla::SlaOutcome;

/// The result file's name in a run's output directory.
pub const RESULTS_FILE: &str = "results.json";

#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("failed to read results from {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read results from {}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} is refused", path.display())]
    Invalid {
        path: PathBuf,
        #[source]
        source: Inconsistent,
    },
    #[error("failed to write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Reads and parses a `results.json`, of this format or an earlier one (brought up to date:
/// see [`migrate`]), and refuses one whose numbers do not hold together ([`validate`]).
pub fn read_results(path: &Path) -> Result<Results, ResultsError> {
    let results = read_unvalidated(path)?;
    validate(&results).map_err(|source| ResultsError::Invalid {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(results)
}

/// Reads a `results.json` without checking its numbers: only for marking an earlier run's
/// file stale, which must work on any file that parses. Never read figures from it.
pub fn read_unvalidated(path: &Path) -> Result<Results, ResultsError> {
    let text = crate::files::read_text(path, crate::files::MAX_RESULTS_FILE).map_err(|source| {
        ResultsError::Read {
            path: path.to_path_buf(),
            source,
        }
    })?;
    let results: Results = serde_json::from_str(&text).map_err(|source| ResultsError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(migrate(results))
}

/// Why bytes are not a result: not the JSON of one, or one whose numbers contradict each
/// other.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("not a results.json")]
    Json(#[source] serde_json::Error),
    #[error(transparent)]
    Inconsistent(#[from] Inconsistent),
}

/// A result from the bytes of a `results.json` (a shard's upload, say): parsed, brought up
/// to date and [`validate`]d, exactly as [`read_results`] reads a file.
pub fn parse_results(bytes: &[u8]) -> Result<Results, ParseError> {
    let results: Results = serde_json::from_slice(bytes).map_err(ParseError::Json)?;
    let results = migrate(results);
    validate(&results)?;
    Ok(results)
}

/// Brings a result of an earlier format up to date. Version 1 had no SLA outcomes: each
/// verdict, and the gate, passed or failed as `passed` says. Histograms and intervals stay
/// absent, so such a result reports and compares without the statistics. Version 2 loads
/// unchanged (version 3 added an error kind, and fields that are optional); judged again
/// (`merge`), a version-2 stage's reasons, sentences only, each count as a flag that may have
/// distorted anything (`Validity::typed_flags`).
pub fn migrate(mut r: Results) -> Results {
    if r.schema_version < 2 {
        for v in &mut r.sla {
            v.outcome = if v.passed {
                SlaOutcome::Pass
            } else {
                SlaOutcome::Fail
            };
        }
        r.outcome = if r.sla.iter().all(|v| v.passed) {
            SlaOutcome::Pass
        } else {
            SlaOutcome::Fail
        };
    }
    r
}

/// Writes `results` as pretty JSON to `path`, atomically.
pub fn write_results(results: &Results, path: &Path) -> Result<(), ResultsError> {
    let mut json = serde_json::to_vec_pretty(results).map_err(|e| ResultsError::Write {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    })?;
    json.push(b'\n');
    write_atomic(path, &json).map_err(|source| ResultsError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// `bytes` with every secret masked ([`crate::redact`]): a JSON file string by string, so
/// that it stays valid JSON, any other text as a whole. Bytes that are not text are left.
fn scrubbed<'a>(path: &Path, bytes: &'a [u8]) -> Cow<'a, [u8]> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Cow::Borrowed(bytes);
    };
    let json = path
        .extension()
        .is_some_and(|e| e == "json" || e == "jsonl");
    let masked = if json {
        crate::redact::json(text)
    } else {
        crate::redact::secrets(text)
    };
    match masked {
        Cow::Borrowed(_) => Cow::Borrowed(bytes),
        Cow::Owned(s) => Cow::Owned(s.into_bytes()),
    }
}

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it over `path`.
///
/// Every file a run writes (results, reports, JUnit, CSV, plots) comes through here, so the
/// bytes are scrubbed of secrets here first ([`scrubbed`]): whatever path carried a secret
/// into a file, it does not reach the disk.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let bytes = scrubbed(path, bytes);
    write_atomic_with(path, |tmp| tmp.write_all(&bytes), |e| e)
}

/// A file written by `write` into a temporary file beside `path`, synced and renamed over
/// `path` once `write` succeeded (left out otherwise), the file's own I/O errors made `E` by
/// `io`: for an output written as a stream, whose writer scrubs what it writes itself
/// (`requests.parquet`, whose strings are scrubbed one by one; see [`write_atomic`] for every
/// other output).
pub(crate) fn write_atomic_with<E>(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> Result<(), E>,
    io: impl Fn(std::io::Error) -> E,
) -> Result<(), E> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    builder.prefix(".infermeter-").suffix(".tmp");
    // Readable like any file the user writes (a temporary file is private by default).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let mut tmp = builder.tempfile_in(dir).map_err(&io)?;
    write(tmp.as_file_mut())?;
    tmp.as_file().sync_all().map_err(&io)?;
    tmp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}
