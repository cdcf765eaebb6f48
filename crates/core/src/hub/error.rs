//! Why a Hub reference cannot be resolved or a file cannot be fetched.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("`{uri}` is not a Hub data set file: {reason}")]
    BadUri { uri: String, reason: String },

    #[error(
        "`{uri}` is not in the local cache ({}); fetch it first: infermeter dataset fetch hf {repo} {path}{}",
        cache.display(),
        if revision == "main" { String::new() } else { format!(" --revision {revision}") }
    )]
    NotFetched {
        uri: String,
        repo: String,
        path: String,
        revision: String,
        cache: PathBuf,
    },

    #[error("HF_HUB_OFFLINE is set: not downloading {url}")]
    Offline { url: String },

    #[error("cannot reach {url}")]
    Request {
        url: String,
        #[source]
        source: reqwest::Error,
    },

    #[error(
        "{url} answered {status}{}",
        match status {
            401 | 403 => "; the data set may be gated or private: accept its terms on the Hub and set HF_TOKEN",
            404 => "; check the repository, the file's path and the revision",
            _ => "",
        }
    )]
    Status { url: String, status: u16 },

    #[error("{url} answered without {header}; is HF_ENDPOINT a Hugging Face Hub?")]
    MissingHeader { url: String, header: &'static str },

    #[error(
        "the download of {url} broke off after {received} of {total} bytes; run the same command again to resume"
    )]
    Broken {
        url: String,
        received: u64,
        total: u64,
        #[source]
        source: Option<reqwest::Error>,
    },

    #[error(
        "{url}: the downloaded file's sha256 is {actual}, the Hub says {expected}; the partial file was removed, run the command again"
    )]
    Checksum {
        url: String,
        expected: String,
        actual: String,
    },

    /// The server sent (or announced in its answer) another length than the `HEAD` did: more
    /// bytes are never written, and the partial file is removed.
    #[error(
        "{url}: {}, the Hub announced {expected}; the partial file was removed",
        match received {
            Received::Exactly(n) => format!("received {n} bytes"),
            Received::MoreThan(n) => format!("received more than {n} bytes (the rest was not read)"),
            Received::Announced(n) => format!("the download announced {n} bytes"),
        }
    )]
    Size {
        url: String,
        expected: u64,
        received: Received,
    },

    #[error("failed to {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// How long a download turned out, when it was not the announced length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// It ended after this many bytes.
    Exactly(u64),
    /// It went on past the announced length (this many bytes): it was not read further.
    MoreThan(u64),
    /// Its own `Content-Length` said this many bytes.
    Announced(u64),
}

impl HubError {
    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        HubError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}
