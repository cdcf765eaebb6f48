//! Reading a user's file whole, with a bound: a scenario, a hook script, a template or a
//! results file is read into memory, and `/dev/zero` or a multi-gigabyte file given by
//! mistake must be an error, not the end of the process's memory. A vocabulary module like
//! `units.rs`: any stage may use it, it uses none.

use std::io::Read;
use std::path::Path;

/// The most of a scenario, hook script, report template or simulator config read (they are
/// a few kilobytes; data goes in data set files, which are streamed).
pub const MAX_TEXT_FILE: u64 = 64 << 20;

/// The most of a `results.json` read (a run's results are kilobytes to a few megabytes).
pub const MAX_RESULTS_FILE: u64 = 256 << 20;

/// The file at `path` as UTF-8 text, or an error (`InvalidData`, naming the bound) when it
/// is longer than `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the file is larger than {} MiB", limit >> 20),
        ));
    }
    Ok(text)
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
}
