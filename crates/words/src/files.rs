//! Reading a user's file whole, with a bound: a scenario, a hook script, a template or a
//! results file is read into memory, and `/dev/zero` or a multi-gigabyte file given by
//! mistake must be an error, not the end of the process's memory. A scenario or a results file
//! may come through a pipe (`validate -`, `compare <(…)`), so [`read_text`] reads what is not
//! a regular file too — a FIFO nobody writes to, a terminal — which may block the read
//! forever; where the program handles SIGINT, SIGTERM or SIGHUP (which a blocked read would
//! otherwise swallow) and says so ([`signals_handled`]), such a read is waited for beside its
//! word that one came ([`interrupt_waiting_reads`]), which ends it. The signals themselves are
//! the program's: this crate installs no handler. The files a scenario names (data sets, the
//! images they name, report templates, hook scripts, tokenizers) are opened only as regular
//! files ([`open_regular`], [`read_regular_text`]): a FIFO, a device or a directory there is
//! refused at once, never waited on. A server's answer read
//! whole (a `/metrics` page, a model list, `/props`, an error body) has its bound too
//! ([`read_answer`]): a server that streams without end must not fill the process's memory.
//! A vocabulary module like `units.rs`: any stage may use it, it uses none.

use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};

/// The most of a scenario, hook script, report template or simulator config read (they are
/// a few kilobytes; data goes in data set files, which are streamed).
pub const MAX_TEXT_FILE: u64 = 64 << 20;

/// The most of a `results.json` read (a run's results are kilobytes to a few megabytes).
pub const MAX_RESULTS_FILE: u64 = 256 << 20;

/// The file at `path` as UTF-8 text, or an error (`InvalidData`, naming the bound) when it
/// is longer than `limit` bytes. A FIFO, terminal or socket that a signal stops waiting for
/// is an error of kind `Interrupted`, which no other read here returns (std retries `EINTR`);
/// the library's `Error::exit_code` makes it the interrupted exit code.
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    if std::fs::metadata(path)?.is_file() {
        read_bounded(path, limit)
    } else {
        read_waiting(path, limit)
    }
}

fn read_bounded(path: &Path, limit: u64) -> std::io::Result<String> {
    read_file_bounded(std::fs::File::open(path)?, limit)
}

fn read_file_bounded(file: std::fs::File, limit: u64) -> std::io::Result<String> {
    let mut text = String::new();
    file.take(limit + 1).read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the file is larger than {} MiB", limit >> 20),
        ));
    }
    Ok(text)
}

/// The file at `path` as UTF-8 text within `limit` bytes, like [`read_text`], but only when
/// it is a regular file ([`open_regular`]): for the files a scenario names (templates, hook
/// scripts, tokenizers), which are never waited for.
pub fn read_regular_text(path: &Path, limit: u64) -> std::io::Result<String> {
    read_file_bounded(open_regular(path)?, limit)
}

/// What `meta` describes when it is not a regular file, in words for an error ("a FIFO", "a
/// directory", …); `None` for a regular file.
pub fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return Some("a FIFO");
        }
        if t.is_char_device() {
            return Some("a character device");
        }
        if t.is_block_device() {
            return Some("a block device");
        }
        if t.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

fn not_regular_error(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("it is {what}, not a regular file"),
    )
}

/// Opens `path` for reading when it is a regular file (a symbolic link is followed), else an
/// error of kind `InvalidInput` saying what it is. A FIFO would block the open until a writer
/// came, a device or a directory has no end or no text: each is refused before it is read.
/// The path is looked at before it is opened (so a device is never opened), and opened
/// without blocking and looked at again (so one replaced by a FIFO in between cannot block
/// the open); on a regular file, which never blocks, the flag changes nothing.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(what) = not_regular(&std::fs::metadata(path)?) {
        return Err(not_regular_error(what));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    if let Some(what) = not_regular(&file.metadata()?) {
        return Err(not_regular_error(what));
    }
    Ok(file)
}

/// Whether the program handles termination signals and calls [`interrupt_waiting_reads`] on
/// each ([`signals_handled`]).
static SIGNALS_HANDLED: AtomicBool = AtomicBool::new(false);

/// What a read waiting on a FIFO, terminal or socket is told: its text, or that the program
/// was interrupted.
enum Wake {
    Read(std::io::Result<String>),
    Interrupted,
}

/// Every read waiting now, by a number of its own (so it can take itself off when done).
static WAITING: Mutex<Vec<(u64, mpsc::Sender<Wake>)>> = Mutex::new(Vec::new());
static NEXT_WAITER: AtomicU64 = AtomicU64::new(0);

/// Says that the program handles SIGINT, SIGTERM and SIGHUP and calls
/// [`interrupt_waiting_reads`] on each (the `infermeter` command's `run` does). From then on a
/// read of a FIFO, terminal or socket waits on a thread of its own, so a signal can end it;
/// without a handler a signal keeps its default action, which ends the process however
/// blocked.
pub fn signals_handled() {
    SIGNALS_HANDLED.store(true, Ordering::SeqCst);
}

/// Ends every read waiting on a FIFO, terminal or socket: each returns an error of kind
/// `Interrupted`. The reader threads stay blocked until the process exits.
pub fn interrupt_waiting_reads() {
    let waiting = std::mem::take(&mut *WAITING.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, tx) in waiting {
        let _ = tx.send(Wake::Interrupted);
    }
}

/// [`read_bounded`] on a thread of its own, waited for beside the program's word that a
/// signal came ([`interrupt_waiting_reads`]), when it handles signals.
fn read_waiting(path: &Path, limit: u64) -> std::io::Result<String> {
    if !SIGNALS_HANDLED.load(Ordering::SeqCst) {
        return read_bounded(path, limit);
    }
    let (tx, rx) = mpsc::channel();
    let id = NEXT_WAITER.fetch_add(1, Ordering::Relaxed);
    let waiting = |list: &mut Vec<(u64, mpsc::Sender<Wake>)>| list.retain(|(n, _)| *n != id);
    WAITING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((id, tx.clone()));
    let owned = path.to_path_buf();
    std::thread::Builder::new()
        .name("input-reader".into())
        .spawn(move || {
            let _ = tx.send(Wake::Read(read_bounded(&owned, limit)));
        })?;
    let woken = rx.recv();
    waiting(&mut WAITING.lock().unwrap_or_else(|e| e.into_inner()));
    match woken {
        Ok(Wake::Read(read)) => read,
        Ok(Wake::Interrupted) | Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "interrupted while waiting for it to be written to (a FIFO, a terminal or a socket)",
        )),
    }
}

/// The most of a server's `/v1/models` list read (by `run` and `wait`): a list of even a
/// thousand models is far smaller, and a server that streams without end must not fill the
/// client's memory.
pub const MAX_MODEL_LIST_BYTES: usize = 4 << 20;

/// Why a server's answer was not read whole.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// Longer than the bound (announced so, or found so while reading).
    #[error("the answer is larger than {}", shown_bytes(*.0))]
    TooLarge(usize),
    /// It broke off, or its bytes could not be read (the URL left out: the caller names it,
    /// masked).
    #[error("{0}")]
    Read(reqwest::Error),
}

/// The body of `resp`, read to its end, or [`AnswerError::TooLarge`] as soon as it is known to
/// pass `limit` bytes (its `content-length` says so, or the bytes received do): the one read
/// of a whole answer from a server, so that none can grow the process's memory without bound.
/// The response is dropped unread past the bound (its connection is not reused).
pub async fn read_answer(
    mut resp: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, AnswerError> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(AnswerError::TooLarge(limit));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| AnswerError::Read(e.without_url()))?
    {
        if body.len() + chunk.len() > limit {
            return Err(AnswerError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn shown_bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{} KiB", n >> 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_an_error() {
        let e = read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, "hello").unwrap();
        assert_eq!(read_text(&p, 5).unwrap(), "hello");
        assert!(read_text(&p, 4).is_err());
    }

    #[test]
    #[cfg(unix)]
    fn only_a_regular_file_is_opened_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "hello").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_regular_text(&link, 5).unwrap(), "hello");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo(3) on a NUL-terminated path in a directory this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let fifo_link = dir.path().join("fifo-link");
        std::os::unix::fs::symlink(&fifo, &fifo_link).unwrap();
        // Refused at once: nobody writes to the FIFO, so a blocking open would never return.
        for (path, what) in [
            (fifo.as_path(), "a FIFO"),
            (fifo_link.as_path(), "a FIFO"),
            (dir.path(), "a directory"),
            (Path::new("/dev/zero"), "a character device"),
        ] {
            let e = open_regular(path).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{path:?}");
            assert!(e.to_string().contains(what), "{path:?}: {e}");
            assert!(read_regular_text(path, 5).is_err(), "{path:?}");
        }
        assert_eq!(
            open_regular(&dir.path().join("none")).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
    }
}
