//! Reading data set files: a reader that hashes every byte it passes on (so a file is read
//! once, streaming, whatever its size), seeded sampling keys, and file errors with line numbers.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::DatasetError;

/// A buffered reader over a file that feeds every byte read to a sha256.
pub(crate) struct HashingReader {
    inner: BufReader<File>,
    hasher: Sha256,
}

impl HashingReader {
    pub(crate) fn open(path: &Path) -> Result<HashingReader, DatasetError> {
        let file = File::open(path).map_err(|e| io_error(path, e))?;
        Ok(HashingReader {
            inner: BufReader::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
        })
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
        Ok(n)
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
        reason: reason.into(),
    }
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> DatasetError {
    DatasetError::Io {
        path: path.to_path_buf(),
        source,
    }
}
