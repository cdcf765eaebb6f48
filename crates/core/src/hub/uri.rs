//! `hf://datasets/OWNER/NAME[@REVISION]/PATH`: a file of a Hugging Face data set repository.
//! The syntax is `huggingface_hub`'s `HfFileSystem` one (also read by pandas, polars and
//! DuckDB), so a path copied from their docs works here unchanged. A revision that contains
//! `/` (`refs/pr/1`) is written with `%2F`, as there.

use std::fmt;

use super::HubError;

/// The scheme every Hub reference starts with.
pub const SCHEME: &str = "hf://";

/// The ShareGPT file vLLM's `benchmark_serving.py` and most serving benchmarks use.
pub const SHAREGPT: (&str, &str) = (
    "anon8231489123/ShareGPT_Vicuna_unfiltered",
    "ShareGPT_V3_unfiltered_cleaned_split.json",
);

/// One file of a data set repository at a revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfFile {
    /// `OWNER/NAME`.
    pub repo: String,
    /// A branch, tag or commit; `main` when not given.
    pub revision: String,
    /// The file's path inside the repository, `/`-separated.
    pub path: String,
}

impl HfFile {
    /// A file of `repo` (`OWNER/NAME`) at `revision` (default `main`), checked like a URI.
    pub fn new(repo: &str, path: &str, revision: Option<&str>) -> Result<HfFile, HubError> {
        let file = HfFile {
            repo: repo.trim_matches('/').to_string(),
            revision: revision.unwrap_or("main").to_string(),
            path: path.trim_start_matches('/').to_string(),
        };
        file.check(&file.uri())?;
        Ok(file)
    }

    /// The ShareGPT file of [`SHAREGPT`], at `main`.
    pub fn sharegpt() -> HfFile {
        HfFile::new(SHAREGPT.0, SHAREGPT.1, None).expect("a valid built-in reference")
    }

    /// True when `s` is meant as a Hub reference (starts with `hf://`).
    pub fn is_uri(s: &str) -> bool {
        s.starts_with(SCHEME)
    }

    /// Parses `hf://datasets/OWNER/NAME[@REVISION]/PATH`.
    pub fn parse(uri: &str) -> Result<HfFile, HubError> {
        let bad = |reason: &str| HubError::BadUri {
            uri: uri.to_string(),
            reason: reason.to_string(),
        };
        let rest = uri
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("does not start with hf://"))?;
        let rest = rest.strip_prefix("datasets/").ok_or_else(|| {
            bad("only data sets can be named: write hf://datasets/OWNER/NAME/PATH")
        })?;
        let mut parts = rest.splitn(3, '/');
        let owner = parts.next().unwrap_or_default();
        let name_rev = parts.next().unwrap_or_default();
        let path = parts.next().unwrap_or_default();
        let (name, revision) = match name_rev.split_once('@') {
            Some((name, rev)) => (name, Some(rev.replace("%2F", "/").replace("%2f", "/"))),
            None => (name_rev, None),
        };
        if owner.is_empty() || name.is_empty() {
            return Err(bad("needs OWNER/NAME after hf://datasets/"));
        }
        if path.is_empty() {
            return Err(bad("names no file: write hf://datasets/OWNER/NAME/PATH"));
        }
        let file = HfFile {
            repo: format!("{owner}/{name}"),
            revision: revision.unwrap_or_else(|| "main".to_string()),
            path: path.to_string(),
        };
        file.check(uri)?;
        Ok(file)
    }

    /// `hf://datasets/…`, the revision left out when it is `main`.
    pub fn uri(&self) -> String {
        let rev = if self.revision == "main" {
            String::new()
        } else {
            format!("@{}", self.revision.replace('/', "%2F"))
        };
        let (owner, name) = self.repo.split_once('/').unwrap_or((&self.repo, ""));
        format!("{SCHEME}datasets/{owner}/{name}{rev}/{}", self.path)
    }

    /// The repository's owner and name.
    pub fn owner_name(&self) -> (&str, &str) {
        self.repo.split_once('/').unwrap_or((&self.repo, ""))
    }

    fn check(&self, uri: &str) -> Result<(), HubError> {
        let bad = |reason: String| HubError::BadUri {
            uri: uri.to_string(),
            reason,
        };
        let (owner, name) = self.owner_name();
        let name_ok = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if !name_ok(owner) || !name_ok(name) || self.repo.matches('/').count() != 1 {
            return Err(bad(format!(
                "`{}` is not a repository name (OWNER/NAME: letters, digits, `-`, `_`, `.`)",
                self.repo
            )));
        }
        if self.revision.is_empty() || self.revision.contains("..") {
            return Err(bad(format!("`{}` is not a revision", self.revision)));
        }
        // The path becomes a path under the cache: nothing may climb out of it.
        if self.path.is_empty()
            || self.path.ends_with('/')
            || self
                .path
                .split('/')
                .any(|seg| seg.is_empty() || seg == "." || seg == ".." || seg.contains('\\'))
        {
            return Err(bad(format!("`{}` is not a file path", self.path)));
        }
        Ok(())
    }
}

impl fmt::Display for HfFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.uri())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_hffilesystem_syntax() {
        let f = HfFile::parse(
            "hf://datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/ShareGPT_V3_unfiltered_cleaned_split.json",
        )
        .unwrap();
        assert_eq!(f, HfFile::sharegpt());
        assert_eq!(f.revision, "main");
        let f = HfFile::parse("hf://datasets/org/data@refs%2Fpr%2F3/dir/x.jsonl").unwrap();
        assert_eq!(f.revision, "refs/pr/3");
        assert_eq!(f.path, "dir/x.jsonl");
        assert_eq!(f.uri(), "hf://datasets/org/data@refs%2Fpr%2F3/dir/x.jsonl");
        assert_eq!(HfFile::parse(&f.uri()).unwrap(), f);
    }

    #[test]
    fn rejects_what_is_not_a_data_set_file() {
        for (uri, needle) in [
            ("hf://org/data/x.json", "only data sets"),
            ("hf://datasets/org", "OWNER/NAME"),
            ("hf://datasets/org/data", "names no file"),
            ("hf://datasets/org/data/../../etc/passwd", "not a file path"),
            ("hf://datasets/org/da ta/x.json", "not a repository name"),
            ("hf://datasets/org/data/dir/", "not a file path"),
        ] {
            let e = HfFile::parse(uri).unwrap_err().to_string();
            assert!(e.contains(needle), "{uri}: {e}");
        }
    }
}
