//! Reading data set files: a reader that hashes every byte it passes on (so a file is read
//! once, streaming, whatever its size), lines read with a bound on their size and checked as
//! UTF-8, seeded sampling keys, and file errors with line numbers.
//!
//! Memory is bounded by what is kept, never by the file: a line (a JSONL record, a trace
//! row) may be at most [`MAX_LINE_BYTES`], and so may one record of a JSON array (see
//! [`HashingReader::bound_records`]).

use std::cell::Cell;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use sha2::{Digest, Sha256};

use super::DatasetError;

/// The longest line a data set file may have (16 MiB: a prompt of some four million tokens);
/// also the most one record of a ShareGPT JSON array may take.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// A buffered reader over a file that feeds every byte read to a sha256.
pub(crate) struct HashingReader {
    inner: BufReader<File>,
    hasher: Sha256,
    records: Option<Rc<RecordBound>>,
}

/// Where the current record of a streamed JSON array started, and how far the reader is.
#[derive(Default)]
pub(crate) struct RecordBound {
    pos: Cell<u64>,
    start: Cell<u64>,
}

impl RecordBound {
    /// A new record starts here.
    pub(crate) fn start_record(&self) {
        self.start.set(self.pos.get());
    }
}

impl HashingReader {
    /// Opens `path`, a regular file only: a FIFO would hang `validate`, a device or a
    /// directory is no data set.
    pub(crate) fn open(path: &Path) -> Result<HashingReader, DatasetError> {
        let file = crate::files::open_regular(path).map_err(|e| io_error(path, e))?;
        Ok(HashingReader {
            inner: BufReader::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
            records: None,
        })
    }

    /// From now on, reading fails once more than [`MAX_LINE_BYTES`] were read since the last
    /// [`RecordBound::start_record`] on the returned handle.
    pub(crate) fn bound_records(&mut self) -> Rc<RecordBound> {
        let bound = Rc::new(RecordBound::default());
        self.records = Some(bound.clone());
        bound
    }

    /// Reads what the parser left (trailing whitespace) and returns the file's hex sha256.
    pub(crate) fn finish(mut self) -> std::io::Result<String> {
        let mut sink = [0u8; 1 << 14];
        while self.read(&mut sink)? > 0 {}
        Ok(self
            .hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    }

    /// The first byte that is not whitespace, without consuming it.
    pub(crate) fn peek_non_ws(&mut self) -> std::io::Result<Option<u8>> {
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(None);
            }
            match buf.iter().position(|b| !b.is_ascii_whitespace()) {
                Some(i) => {
                    let b = buf[i];
                    self.hasher.update(&buf[..i]);
                    self.inner.consume(i);
                    return Ok(Some(b));
                }
                None => {
                    let n = buf.len();
                    self.hasher.update(&self.inner.buffer()[..n]);
                    self.inner.consume(n);
                }
            }
        }
    }
}

impl Read for HashingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        if let Some(b) = &self.records {
            b.pos.set(b.pos.get() + n as u64);
            if b.pos.get() - b.start.get() > MAX_LINE_BYTES as u64 {
                return Err(std::io::Error::other(format!(
                    "a record is larger than the {} MiB one may take",
                    MAX_LINE_BYTES >> 20
                )));
            }
        }
        Ok(n)
    }
}

/// The next line of `reader` (its line break included), at most [`MAX_LINE_BYTES`] long and
/// valid UTF-8; `None` at the end of the file. `buf` holds it; `number` is its 1-based line
/// number, for the error.
pub(crate) fn next_line<'b>(
    reader: &mut impl BufRead,
    buf: &'b mut Vec<u8>,
    path: &Path,
    number: u64,
) -> Result<Option<&'b str>, DatasetError> {
    buf.clear();
    loop {
        let chunk = reader.fill_buf().map_err(|e| io_error(path, e))?;
        if chunk.is_empty() {
            break;
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        if buf.len() + take > MAX_LINE_BYTES {
            return Err(file_error(
                path,
                Some(number),
                format!(
                    "the line is longer than the {} MiB a line may have",
                    MAX_LINE_BYTES >> 20
                ),
            ));
        }
        buf.extend_from_slice(&chunk[..take]);
        reader.consume(take);
        if done {
            break;
        }
    }
    if buf.is_empty() {
        return Ok(None);
    }
    match std::str::from_utf8(buf) {
        Ok(line) => Ok(Some(line)),
        Err(e) => Err(file_error(
            path,
            Some(number),
            format!(
                "not valid UTF-8 (at byte {} of the line)",
                e.valid_up_to() + 1
            ),
        )),
    }
}

/// The records of a line-based data set file (JSONL, a trace): its lines that are not blank,
/// each with its 1-based line number, read as [`next_line`] reads them (bounded, UTF-8). Every
/// line-based loader reads through this, so each skips, numbers, bounds and reports lines
/// alike; an error names the line through [`file_error`] (masked and cut).
pub(crate) struct Records<'r> {
    reader: &'r mut HashingReader,
    path: &'r Path,
    buf: Vec<u8>,
    number: u64,
}

impl<'r> Records<'r> {
    pub(crate) fn new(reader: &'r mut HashingReader, path: &'r Path) -> Records<'r> {
        Records {
            reader,
            path,
            buf: Vec::new(),
            number: 0,
        }
    }

    /// The next record and its line number; `None` at the end of the file.
    pub(crate) fn next_record(&mut self) -> Result<Option<(u64, &str)>, DatasetError> {
        loop {
            self.number += 1;
            match next_line(self.reader, &mut self.buf, self.path, self.number)? {
                None => return Ok(None),
                Some(line) if !line.trim().is_empty() => break,
                Some(_) => {}
            }
        }
        // The line was checked as UTF-8 above; the borrow checker wants it taken again.
        let line = std::str::from_utf8(&self.buf)
            .map_err(|e| file_error(self.path, Some(self.number), e.to_string()))?;
        Ok(Some((self.number, line)))
    }
}

impl BufRead for HashingReader {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        let buf = self.inner.buffer();
        let amt = amt.min(buf.len());
        self.hasher.update(&buf[..amt]);
        self.inner.consume(amt);
    }
}

/// The sampling key of record `ordinal`: records are taken in increasing key order, which is a
/// seeded shuffle that needs no record in memory but the ones kept.
pub(crate) fn sample_key(seed: u64, ordinal: u64) -> u64 {
    let mut z = seed ^ ordinal.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(crate) fn file_error(
    path: &Path,
    line: Option<u64>,
    reason: impl Into<String>,
) -> DatasetError {
    DatasetError::File {
        path: path.to_path_buf(),
        line,
        reason: bounded_reason(reason.into()),
    }
}

/// The most characters of a data file's error kept: its start and end (what it names, and the
/// fix) with the middle cut.
const MAX_REASON_CHARS: usize = 1000;

/// `reason`, its secrets masked, then at most [`MAX_REASON_CHARS`] characters: it may quote the
/// file (an id, a value), and a megabyte of one must not become a megabyte of error. Masked
/// before it is cut, so that no cut leaves part of a secret no scrub would know.
fn bounded_reason(reason: String) -> String {
    let masked = crate::redact::secrets(&reason);
    let n = masked.chars().count();
    if n <= MAX_REASON_CHARS {
        return masked.into_owned();
    }
    let (head, tail) = (MAX_REASON_CHARS * 2 / 3, MAX_REASON_CHARS / 3);
    let mut out: String = masked.chars().take(head).collect();
    out.push_str(&format!(" …({} characters cut)… ", n - head - tail));
    out.extend(masked.chars().skip(n - tail));
    out
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> DatasetError {
    // A missing file named as a recipe writes it (`gsm8k.jsonl`): say how to write it.
    if source.kind() == std::io::ErrorKind::NotFound
        && let Some(recipe) = crate::hub::Recipe::writing(path)
    {
        return DatasetError::File {
            path: path.to_path_buf(),
            line: None,
            reason: format!(
                "it does not exist; write it first: infermeter dataset fetch {} --out {}",
                recipe.name(),
                path.display()
            ),
        };
    }
    DatasetError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8]) -> Vec<Result<String, String>> {
        let mut r = std::io::BufReader::with_capacity(7, bytes);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for n in 1.. {
            match next_line(&mut r, &mut buf, Path::new("f.jsonl"), n) {
                Ok(Some(l)) => out.push(Ok(l.to_string())),
                Ok(None) => break,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn lines_keep_their_break_and_the_last_may_lack_one() {
        assert_eq!(
            lines(b"a\nbcdefghij\n\nk"),
            [Ok("a\n"), Ok("bcdefghij\n"), Ok("\n"), Ok("k")].map(|r| r.map(String::from))
        );
    }

    #[test]
    fn invalid_utf8_names_its_line() {
        let got = lines(b"ok\nok\nbad \xff\n");
        assert_eq!(
            got[2],
            Err("f.jsonl:3: not valid UTF-8 (at byte 5 of the line)".into())
        );
    }

    #[test]
    fn a_line_over_the_bound_fails_without_being_held() {
        let long = vec![b'x'; MAX_LINE_BYTES + 1];
        let got = lines(&long);
        assert!(
            got[0]
                .as_ref()
                .unwrap_err()
                .starts_with("f.jsonl:1: the line is longer than"),
            "{got:?}"
        );
    }
}
