//! `server.log`: what the server writes on its standard output and error, kept beside the
//! results within a bound. The first half of the bound is written as it comes (so a log that
//! stops early, or an infermeter that is killed, still leaves the start on disk); after that
//! a ring of the last lines is held and written when the server stops, after a line saying
//! how much was left out between. Every line is masked ([`crate::redact::secrets`]: the
//! values `env … env="NAME"` passed are registered secrets) before it is kept anywhere.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use super::error::ServerError;

/// The lines an error shows of the server's log.
pub(super) const SHOWN_LINES: usize = 20;

/// The longest line kept whole; a longer one is cut into pieces of this size (a server that
/// writes without line breaks cannot grow a line without bound).
const MAX_LINE: usize = 8 * 1024;

pub(super) struct Log {
    state: Mutex<State>,
    /// The text `ready log="…"` waits for, and the token cancelled when a line has it.
    ready_text: Option<String>,
    pub ready_seen: CancellationToken,
}

struct State {
    file: std::fs::File,
    path: PathBuf,
    /// Bytes the head may still take.
    head_left: u64,
    tail: VecDeque<String>,
    tail_bytes: u64,
    tail_max: u64,
    /// Lines (and their bytes) that fell out of the ring: neither in the head nor kept.
    dropped: (u64, u64),
    last: VecDeque<String>,
    failed: bool,
}

impl Log {
    /// A fresh `path` (an earlier run's log replaced), or `path` continued (`append`: a later
    /// start of the same run), keeping at most `max` bytes of this start's output.
    pub fn create(
        path: &Path,
        max: u64,
        ready_text: Option<String>,
        append: bool,
    ) -> Result<Log, ServerError> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .append(append)
            .truncate(!append)
            .open(path);
        let file = file.map_err(|source| ServerError::Log {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Log {
            state: Mutex::new(State {
                file,
                path: path.to_path_buf(),
                head_left: max / 2,
                tail: VecDeque::new(),
                tail_bytes: 0,
                tail_max: max - max / 2,
                dropped: (0, 0),
                last: VecDeque::new(),
                failed: false,
            }),
            ready_text,
            ready_seen: CancellationToken::new(),
        })
    }

    /// One line of the server's output (without its line break).
    pub fn line(&self, raw: &str) {
        if let Some(text) = &self.ready_text
            && raw.contains(text.as_str())
        {
            self.ready_seen.cancel();
        }
        self.keep(raw, true);
    }

    /// A line of infermeter's own (what it did to the server), kept in the file only: the
    /// last lines an error shows are the server's.
    pub fn note(&self, text: &str) {
        self.keep(&format!("[infermeter: {text}]"), false);
    }

    fn keep(&self, raw: &str, shown: bool) {
        let line = crate::redact::secrets(raw).into_owned();
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let size = line.len() as u64 + 1;
        if shown {
            if s.last.len() == SHOWN_LINES {
                s.last.pop_front();
            }
            s.last.push_back(line.clone());
        }
        if s.tail.is_empty() && size <= s.head_left {
            s.head_left -= size;
            let written = writeln!(s.file, "{line}");
            s.failed |= written.is_err();
            return;
        }
        // The head is full: the line joins the ring, which sheds its oldest lines.
        s.head_left = 0;
        s.tail_bytes += size;
        s.tail.push_back(line);
        while s.tail_bytes > s.tail_max
            && let Some(old) = s.tail.pop_front()
        {
            s.tail_bytes -= old.len() as u64 + 1;
            s.dropped.0 += 1;
            s.dropped.1 += old.len() as u64 + 1;
        }
    }

    /// The last lines the server wrote (masked), for an error.
    pub fn last_lines(&self) -> Vec<String> {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.last.iter().cloned().collect()
    }

    /// Writes the ring after the head, saying what was left out between them. Once, when the
    /// server has stopped.
    pub fn finish(&self) -> Result<(), ServerError> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let tail: Vec<String> = s.tail.drain(..).collect();
        let (lines, bytes) = s.dropped;
        let mut text = String::new();
        if lines > 0 {
            text.push_str(&format!(
                "[infermeter: {lines} line(s), {bytes} byte(s) left out here: the log is kept \
                 within `log max`]\n"
            ));
        }
        for l in tail {
            text.push_str(&l);
            text.push('\n');
        }
        let written = s
            .file
            .write_all(text.as_bytes())
            .and_then(|()| s.file.flush());
        match written {
            Ok(()) if !s.failed => Ok(()),
            Ok(()) => Err(log_error(
                &s.path,
                std::io::Error::other("a line could not be written"),
            )),
            Err(e) => Err(log_error(&s.path, e)),
        }
    }
}

fn log_error(path: &Path, source: std::io::Error) -> ServerError {
    ServerError::Log {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads `from` (the server's stdout or stderr) line by line into `log` until it closes.
pub(super) async fn pump(mut from: impl AsyncRead + Unpin, log: &Log) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some(end) = memchr::memchr(b'\n', &pending) {
            let line: Vec<u8> = pending.drain(..=end).collect();
            log.line(String::from_utf8_lossy(&line[..end]).trim_end_matches('\r'));
        }
        while pending.len() >= MAX_LINE {
            let piece: Vec<u8> = pending.drain(..MAX_LINE).collect();
            log.line(&String::from_utf8_lossy(&piece));
        }
    }
    if !pending.is_empty() {
        log.line(String::from_utf8_lossy(&pending).trim_end_matches('\r'));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_its_head_and_last_lines_within_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.log");
        let log = Log::create(&path, 200, Some("ready now".into()), false).unwrap();
        for i in 0..100 {
            log.line(&format!("line {i:03}"));
        }
        log.line("server ready now");
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.len() <= 200 + 120, "{text}");
        assert!(text.starts_with("line 000\n"), "{text}");
        assert!(text.contains("left out here"), "{text}");
        assert!(text.ends_with("server ready now\n"), "{text}");
        assert!(log.ready_seen.is_cancelled());
        let last = log.last_lines();
        assert_eq!(last.len(), SHOWN_LINES);
        assert_eq!(last.last().map(String::as_str), Some("server ready now"));
    }

    #[test]
    fn a_registered_secret_never_reaches_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.log");
        crate::redact::register("s3cr3t-server-value-42");
        let log = Log::create(&path, 1024, None, false).unwrap();
        log.line("token is s3cr3t-server-value-42");
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("s3cr3t-server-value-42"), "{text}");
        assert!(!log.last_lines()[0].contains("s3cr3t-server-value-42"));
    }
}
