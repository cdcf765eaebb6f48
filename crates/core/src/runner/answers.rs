//! `answers.jsonl`: one row per judged answer (see `metrics::AnswerRow`), written by the
//! request task that judged it, once per whole answer, through a buffered writer behind a
//! lock (a data set without a `quality` block writes nothing and takes no lock). The file is
//! a temporary one beside its path until the run ends, like `requests.jsonl`, so memory stays
//! flat however long the run.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::metrics::AnswerRow;

/// The writer's buffer, in bytes.
const ANSWERS_BUFFER: usize = 64 * 1024;

/// Where the run's answers go.
pub(super) struct AnswerSink {
    path: PathBuf,
    /// `None` once a write failed (the error is kept for the end of the run).
    out: Mutex<Option<BufWriter<tempfile::NamedTempFile>>>,
    failed: Mutex<Option<std::io::Error>>,
}

impl AnswerSink {
    pub(super) fn create(path: &Path) -> Result<AnswerSink, super::RunError> {
        let file = super::temp::temp_beside(path, ".answers-")?;
        Ok(AnswerSink {
            path: path.to_path_buf(),
            // Room for several kept answers (4 KiB each before escaping), so most rows are
            // copied under the lock, not written.
            out: Mutex::new(Some(BufWriter::with_capacity(ANSWERS_BUFFER, file))),
            failed: Mutex::new(None),
        })
    }

    /// Writes one row; after a failed write, nothing more.
    pub(super) fn keep(&self, row: &AnswerRow) {
        let Ok(mut line) = serde_json::to_vec(row) else {
            return;
        };
        line.push(b'\n');
        let Ok(mut out) = self.out.lock() else {
            return;
        };
        if let Some(w) = out.as_mut()
            && let Err(e) = w.write_all(&line)
        {
            *out = None;
            if let Ok(mut f) = self.failed.lock() {
                *f = Some(e);
            }
        }
    }

    /// Puts the file in place; the first write error, if any.
    pub(super) fn finish(self) -> Result<(), (PathBuf, std::io::Error)> {
        let failed = self.failed.into_inner().ok().flatten();
        let out = self.out.into_inner().ok().flatten();
        let result = match (failed, out) {
            (Some(e), _) => Err(e),
            (None, Some(w)) => super::temp::persist_temp(w, &self.path),
            (None, None) => Ok(()),
        };
        result.map_err(|e| (self.path, e))
    }
}
