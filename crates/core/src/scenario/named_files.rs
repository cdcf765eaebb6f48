//! The files a scenario names — a data set file, a hooks script, a report template, a
//! tokenizer — must be regular files: a FIFO nobody writes to would hang `validate` and `run`,
//! and a device or a directory has no end or no text. Checked as each path is read, where its
//! span is known, so the refusal points at the line that wrote it. A path that does not exist
//! is left to the reader that opens it, which names it; the readers themselves open only
//! regular files (`files::open_regular`), for a file that changes after this check and for
//! the paths no scenario writes (a `--template`, an image named in a JSONL line).

use miette::SourceSpan;

use super::ctx::Ctx;
use crate::hub::HfFile;

impl Ctx<'_> {
    /// Whether `written` (a path as the scenario wrote it, at `span`, for `what`) is not
    /// known to be other than a regular file; a problem is recorded when it is. A Hub
    /// reference is resolved later, through the cache.
    pub(crate) fn regular_file(&mut self, written: &str, span: SourceSpan, what: &str) -> bool {
        let Some(dir) = &self.base_dir else {
            return true;
        };
        if HfFile::is_uri(written) {
            return true;
        }
        // `metadata` follows a symbolic link: what counts is what it points at.
        let Ok(meta) = std::fs::metadata(dir.join(written)) else {
            return true;
        };
        let Some(kind) = crate::files::not_regular(&meta) else {
            return true;
        };
        let shown: String = written.chars().take(200).collect();
        let why = match kind {
            "a FIFO" => "a FIFO waits for a writer, which would hold `validate` and the run",
            "a directory" => "a directory is no file to read",
            _ => "a device or a socket may block or never end",
        };
        self.error(
            span,
            format!("the {what} path `{shown}` is {kind}, not a regular file"),
            kind,
            Some(format!(
                "name a regular file (a symbolic link to one will do): {why}"
            )),
        );
        false
    }
}
