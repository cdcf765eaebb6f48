//! The local Hub cache, laid out as `huggingface_hub` lays it out, so that both tools share
//! one copy of a file:
//!
//! ```text
//! $HF_HUB_CACHE/datasets--OWNER--NAME/
//!     refs/main                      the commit `main` pointed at when fetched
//!     blobs/<etag>                   the file's bytes (<etag>.incomplete while downloading)
//!     snapshots/<commit>/<path>      a relative symlink to the blob
//! ```
//!
//! `$HF_HUB_CACHE` defaults to `$HF_HOME/hub`, `$HF_HOME` to `$XDG_CACHE_HOME/huggingface`,
//! then `~/.cache/huggingface`. The endpoint is `$HF_ENDPOINT` (default
//! `https://huggingface.co`), the token `$HF_TOKEN` or `$HF_HOME/token`.

use std::path::{Path, PathBuf};

use super::{HfFile, HubError};

/// Where Hub files are cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubCache {
    /// The `hub` directory (`$HF_HUB_CACHE`).
    pub root: PathBuf,
}

/// Everything a download needs from the environment.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// `https://huggingface.co` or `$HF_ENDPOINT` (a mirror, or a test server).
    pub endpoint: String,
    /// Sent as a bearer token (gated and private data sets).
    pub token: Option<String>,
    /// `HF_HUB_OFFLINE=1`: never download.
    pub offline: bool,
    pub cache: HubCache,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `$HF_HOME`, with `huggingface_hub`'s defaults.
fn hf_home() -> PathBuf {
    if let Some(home) = env("HF_HOME") {
        return PathBuf::from(home);
    }
    let cache = env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| Path::new(&h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("huggingface")
}

impl HubConfig {
    /// The settings `huggingface_hub` would use in this environment.
    pub fn from_env() -> HubConfig {
        let token = env("HF_TOKEN")
            .or_else(|| env("HUGGING_FACE_HUB_TOKEN"))
            .or_else(|| {
                std::fs::read_to_string(hf_home().join("token"))
                    .ok()
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
            });
        HubConfig {
            endpoint: env("HF_ENDPOINT")
                .unwrap_or_else(|| "https://huggingface.co".into())
                .trim_end_matches('/')
                .to_string(),
            token,
            offline: env("HF_HUB_OFFLINE").is_some_and(|v| !matches!(v.as_str(), "0" | "false")),
            cache: HubCache::from_env(),
        }
    }
}

impl HubCache {
    pub fn new(root: impl Into<PathBuf>) -> HubCache {
        HubCache { root: root.into() }
    }

    /// `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`.
    pub fn from_env() -> HubCache {
        match env("HF_HUB_CACHE") {
            Some(dir) => HubCache::new(dir),
            None => HubCache::new(hf_home().join("hub")),
        }
    }

    /// `datasets--OWNER--NAME`.
    pub fn repo_dir(&self, file: &HfFile) -> PathBuf {
        let (owner, name) = file.owner_name();
        self.root.join(format!("datasets--{owner}--{name}"))
    }

    pub(crate) fn blob(&self, file: &HfFile, etag: &str) -> PathBuf {
        self.repo_dir(file).join("blobs").join(etag)
    }

    pub(crate) fn snapshot(&self, file: &HfFile, commit: &str) -> PathBuf {
        let mut p = self.repo_dir(file).join("snapshots").join(commit);
        p.extend(file.path.split('/'));
        p
    }

    pub(crate) fn ref_file(&self, file: &HfFile) -> PathBuf {
        let mut p = self.repo_dir(file).join("refs");
        p.extend(file.revision.split('/'));
        p
    }

    /// The cached copy of `file`, without any network access: the commit its revision pointed
    /// at when it was fetched (or the revision itself, when it is a commit hash), then that
    /// snapshot's file.
    pub fn resolve(&self, file: &HfFile) -> Result<PathBuf, HubError> {
        let not_fetched = || HubError::NotFetched {
            uri: file.uri(),
            repo: file.repo.clone(),
            path: file.path.clone(),
            revision: file.revision.clone(),
            cache: self.root.clone(),
        };
        let commit = if is_commit(&file.revision) {
            file.revision.clone()
        } else {
            match std::fs::read_to_string(self.ref_file(file)) {
                Ok(c) => c.trim().to_string(),
                Err(_) => return Err(not_fetched()),
            }
        };
        let path = self.snapshot(file, &commit);
        // `is_file` follows the symlink: a snapshot entry whose blob is gone is not fetched.
        if path.is_file() {
            Ok(path)
        } else {
            Err(not_fetched())
        }
    }
}

/// A full 40-hex-digit git commit hash.
pub(crate) fn is_commit(rev: &str) -> bool {
    rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_through_refs_and_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HubCache::new(dir.path());
        let file = HfFile::parse("hf://datasets/org/data/sub/x.json").unwrap();
        let e = cache.resolve(&file).unwrap_err().to_string();
        assert!(
            e.contains("infermeter dataset fetch hf org/data sub/x.json"),
            "{e}"
        );
        let commit = "0123456789abcdef0123456789abcdef01234567";
        let repo = dir.path().join("datasets--org--data");
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs/main"), format!("{commit}\n")).unwrap();
        let snap = repo.join("snapshots").join(commit).join("sub/x.json");
        std::fs::create_dir_all(snap.parent().unwrap()).unwrap();
        std::fs::write(&snap, "[]").unwrap();
        assert_eq!(cache.resolve(&file).unwrap(), snap);
        // A commit as the revision needs no ref.
        let pinned = HfFile::new("org/data", "sub/x.json", Some(commit)).unwrap();
        assert_eq!(cache.resolve(&pinned).unwrap(), snap);
    }
}
