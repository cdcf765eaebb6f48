//! Downloading one Hub file into the cache: a `HEAD` without following redirects (the Hub's
//! own headers name the commit, the etag — an LFS file's sha256 — and the size), then a `GET`
//! into `blobs/<etag>.incomplete` that resumes with an HTTP `Range` from whatever an earlier,
//! broken attempt left (in this run or a previous one), a sha256 of the whole file checked
//! against the etag when it is one, and finally the blob, its snapshot link and the ref.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::header::{ACCEPT_ENCODING, AUTHORIZATION, HeaderMap, HeaderValue, RANGE};
use reqwest::{StatusCode, Url, redirect};
use sha2::{Digest, Sha256};

use super::cache::is_commit;
use super::{HfFile, HubConfig, HubError, Received};

/// What a fetch reports while it works.
#[derive(Debug, Clone, PartialEq)]
pub enum FetchEvent {
    /// The Hub answered: the file's size, and the bytes already on disk it resumes from.
    Start { url: String, size: u64, from: u64 },
    /// Bytes on disk so far.
    Progress { done: u64, total: u64 },
    /// A connection broke; the next attempt resumes from `from`.
    Retry {
        from: u64,
        attempt: u32,
        reason: String,
    },
    /// Hashing the file.
    Verifying,
}

/// A file in the cache.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The snapshot path a scenario's `hf://` reference resolves to.
    pub path: PathBuf,
    pub size: u64,
    /// Hex sha256 of the file.
    pub sha256: String,
    /// The commit the revision pointed at.
    pub commit: String,
    /// The sha256 matched the Hub's (an LFS file's etag is its sha256). False when the Hub
    /// gives only a git blob id, as for small files kept in git: the sha256 is then recorded,
    /// not checked, and the plan's hash pins it.
    pub verified: bool,
    /// The file was already complete in the cache; nothing was downloaded.
    pub cached: bool,
    /// Bytes an earlier attempt had left that the download resumed from (0 when it started
    /// afresh).
    pub resumed_from: u64,
}

/// What the `HEAD` said about the file.
struct Meta {
    commit: String,
    etag: String,
    size: u64,
}

/// Downloads `file` into `cfg`'s cache (or finds it there), retrying a broken connection up to
/// `retries` times, each attempt resuming where the last stopped.
pub async fn fetch(
    cfg: &HubConfig,
    file: &HfFile,
    retries: u32,
    on: &mut dyn FnMut(FetchEvent),
) -> Result<Fetched, HubError> {
    let url = resolve_url(&cfg.endpoint, file)?;
    let shown = url.to_string();
    if cfg.offline {
        return Err(HubError::Offline { url: shown });
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let head_client = client(cfg, redirect::Policy::none(), &shown)?;
    let meta = head(&head_client, &url).await?;
    let cache = &cfg.cache;
    let blob = cache.blob(file, &meta.etag);
    let expected_sha = is_sha256(&meta.etag).then(|| meta.etag.to_ascii_lowercase());

    let cached = file_len(&blob) == Some(meta.size);
    let resumed_from = if cached {
        0
    } else {
        download_blob(
            cfg,
            &url,
            &blob,
            &meta,
            expected_sha.as_deref(),
            retries,
            on,
        )
        .await?
    };
    if cached {
        on(FetchEvent::Verifying);
    }
    let sha256 = sha256_file(&blob)?;
    if let Some(expected) = &expected_sha
        && expected != &sha256
    {
        let _ = std::fs::remove_file(&blob);
        return Err(HubError::Checksum {
            url: shown,
            expected: expected.clone(),
            actual: sha256,
        });
    }
    let path = cache.snapshot(file, &meta.commit);
    link(&blob, &path, &meta.etag, file)?;
    if !is_commit(&file.revision) {
        let r = cache.ref_file(file);
        let dir = r.parent().expect("refs has a parent");
        std::fs::create_dir_all(dir).map_err(|e| HubError::io("create", dir, e))?;
        std::fs::write(&r, &meta.commit).map_err(|e| HubError::io("write", &r, e))?;
    }
    Ok(Fetched {
        path,
        size: meta.size,
        sha256,
        commit: meta.commit,
        verified: expected_sha.is_some(),
        cached,
        resumed_from,
    })
}

/// Downloads the file into `blob` through `blob.incomplete`, resuming a broken connection up
/// to `retries` times; the length and the sha256 (when the Hub gives one) are checked before
/// the rename. Returns the bytes an earlier attempt had left, which it resumed from.
async fn download_blob(
    cfg: &HubConfig,
    url: &Url,
    blob: &Path,
    meta: &Meta,
    expected_sha: Option<&str>,
    retries: u32,
    on: &mut dyn FnMut(FetchEvent),
) -> Result<u64, HubError> {
    let shown = url.to_string();
    let dir = blob.parent().expect("blobs has a parent");
    std::fs::create_dir_all(dir).map_err(|e| HubError::io("create the cache directory", dir, e))?;
    let partial = incomplete(blob);
    let resumed_from = file_len(&partial).filter(|&n| n < meta.size).unwrap_or(0);
    on(FetchEvent::Start {
        url: shown.clone(),
        size: meta.size,
        from: resumed_from,
    });
    let get_client = client(cfg, redirect::Policy::limited(10), &shown)?;
    let mut attempt = 0;
    loop {
        match download(&get_client, url, &partial, meta.size, on).await {
            Ok(()) => break,
            Err(e @ HubError::Broken { .. }) if attempt < retries => {
                attempt += 1;
                on(FetchEvent::Retry {
                    from: file_len(&partial).unwrap_or(0),
                    attempt,
                    reason: innermost(&e),
                });
                tokio::time::sleep(Duration::from_millis(500 * u64::from(attempt))).await;
            }
            Err(e) => return Err(e),
        }
    }
    let got = file_len(&partial).unwrap_or(0);
    if got != meta.size {
        let _ = std::fs::remove_file(&partial);
        return Err(HubError::Size {
            url: shown,
            expected: meta.size,
            received: Received::Exactly(got),
        });
    }
    on(FetchEvent::Verifying);
    let sha = sha256_file(&partial)?;
    if let Some(expected) = expected_sha
        && expected != sha
    {
        let _ = std::fs::remove_file(&partial);
        return Err(HubError::Checksum {
            url: shown,
            expected: expected.to_string(),
            actual: sha,
        });
    }
    std::fs::rename(&partial, blob).map_err(|e| HubError::io("move the download into", blob, e))?;
    Ok(resumed_from)
}

/// `{endpoint}/datasets/{owner}/{name}/resolve/{revision}/{path}`, each part percent-encoded
/// as one segment (a revision's `/` included, as the Hub wants).
fn resolve_url(endpoint: &str, file: &HfFile) -> Result<Url, HubError> {
    let bad = |reason: String| HubError::BadUri {
        uri: endpoint.to_string(),
        reason,
    };
    let mut url =
        Url::parse(endpoint).map_err(|e| bad(format!("HF_ENDPOINT is not a URL: {e}")))?;
    let (owner, name) = file.owner_name();
    {
        let mut segs = url
            .path_segments_mut()
            .map_err(|()| bad("HF_ENDPOINT cannot be a base URL".into()))?;
        segs.pop_if_empty();
        segs.extend(["datasets", owner, name, "resolve", &file.revision]);
        segs.extend(file.path.split('/'));
    }
    Ok(url)
}

fn client(
    cfg: &HubConfig,
    policy: redirect::Policy,
    url: &str,
) -> Result<reqwest::Client, HubError> {
    let mut headers = HeaderMap::new();
    // Sizes and ranges are of the stored bytes, never of a compressed transfer.
    headers.insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    if let Some(token) = &cfg.token
        && let Ok(mut v) = HeaderValue::from_str(&format!("Bearer {token}"))
    {
        v.set_sensitive(true);
        headers.insert(AUTHORIZATION, v);
    }
    reqwest::Client::builder()
        .user_agent(concat!("infermeter/", env!("CARGO_PKG_VERSION")))
        .default_headers(headers)
        .redirect(policy)
        .connect_timeout(Duration::from_secs(30))
        // A stalled transfer is a broken one: resume rather than wait forever.
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|source| HubError::Request {
            url: url.to_string(),
            source,
        })
}

async fn head(client: &reqwest::Client, url: &Url) -> Result<Meta, HubError> {
    let shown = url.to_string();
    let resp = client
        .head(url.clone())
        .send()
        .await
        .map_err(|source| HubError::Request {
            url: shown.clone(),
            source,
        })?;
    let status = resp.status();
    if !(status.is_success() || status.is_redirection()) {
        return Err(HubError::Status {
            url: shown,
            status: status.as_u16(),
        });
    }
    let h = resp.headers();
    let text = |name: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let missing = |header| HubError::MissingHeader {
        url: shown.clone(),
        header,
    };
    let commit = text("x-repo-commit").ok_or_else(|| missing("X-Repo-Commit"))?;
    // An LFS file's X-Linked-Etag is its sha256; a git file's ETag its blob id.
    let etag = text("x-linked-etag")
        .or_else(|| text("etag"))
        .map(|e| e.trim_start_matches("W/").trim_matches('"').to_string())
        .filter(|e| {
            !e.is_empty()
                && e.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        })
        .ok_or_else(|| missing("ETag"))?;
    // Not `resp.content_length()`: a HEAD response has no body, and so no body length.
    let size = text("x-linked-size")
        .or_else(|| text("content-length"))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| missing("Content-Length"))?;
    if !(is_commit(commit)) {
        return Err(missing("X-Repo-Commit"));
    }
    Ok(Meta {
        commit: commit.to_ascii_lowercase(),
        etag,
        size,
    })
}

/// One attempt: appends to `partial` from its current length (a `Range` request), or starts
/// it afresh when the server sends the whole file. Every byte counted has been written, so
/// the next attempt resumes exactly there. Never more than `size` bytes are written: an answer
/// longer or shorter than `size` (by its `Content-Length`, or by what it sends before it ends)
/// removes the partial file; only a broken connection keeps it, to resume from.
async fn download(
    client: &reqwest::Client,
    url: &Url,
    partial: &Path,
    size: u64,
    on: &mut dyn FnMut(FetchEvent),
) -> Result<(), HubError> {
    let shown = url.to_string();
    let have = file_len(partial).unwrap_or(0);
    let have = if have > size { 0 } else { have };
    if have == size && size > 0 {
        return Ok(());
    }
    let broken = |received, source| HubError::Broken {
        url: shown.clone(),
        received,
        total: size,
        source,
    };
    let mut req = client.get(url.clone());
    if have > 0 {
        req = req.header(RANGE, format!("bytes={have}-"));
    }
    let resp = req.send().await.map_err(|e| broken(have, Some(e)))?;
    let append = match resp.status() {
        StatusCode::PARTIAL_CONTENT => {
            let starts_here = resp
                .headers()
                .get(reqwest::header::CONTENT_RANGE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with(&format!("bytes {have}-")));
            if !starts_here {
                // Not the range asked for: start over rather than splice wrong bytes.
                let _ = std::fs::remove_file(partial);
                return Err(broken(0, None));
            }
            true
        }
        StatusCode::OK => false,
        StatusCode::RANGE_NOT_SATISFIABLE => {
            let _ = std::fs::remove_file(partial);
            return Err(broken(0, None));
        }
        s => {
            return Err(HubError::Status {
                url: shown.clone(),
                status: s.as_u16(),
            });
        }
    };
    let from = if append { have } else { 0 };
    let mismatch = |received| {
        let _ = std::fs::remove_file(partial);
        HubError::Size {
            url: shown.clone(),
            expected: size,
            received,
        }
    };
    if let Some(n) = resp.content_length()
        && from.checked_add(n) != Some(size)
    {
        return Err(mismatch(Received::Announced(from.saturating_add(n))));
    }
    match write_body(resp, partial, from, size, on).await {
        Ok(done) if done == size => Ok(()),
        Ok(done) => Err(mismatch(Received::Exactly(done))),
        Err(Body::TooLong) => Err(mismatch(Received::MoreThan(size))),
        Err(Body::Broken(done, e)) => Err(broken(done, e)),
        Err(Body::Io(e)) => Err(e),
    }
}

/// How writing a response body into the partial file stopped, when not at its end.
enum Body {
    /// The server sent more than the announced size (nothing past it was written).
    TooLong,
    /// The connection broke after this many bytes (all of them on disk).
    Broken(u64, Option<reqwest::Error>),
    Io(HubError),
}

/// Appends `resp`'s body to `partial` (truncated first unless `from` > 0, the bytes it already
/// holds), up to `size` bytes in all; the file's length when the body ended.
async fn write_body(
    mut resp: reqwest::Response,
    partial: &Path,
    from: u64,
    size: u64,
    on: &mut dyn FnMut(FetchEvent),
) -> Result<u64, Body> {
    let append = from > 0;
    let out = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(partial)
        .map_err(|e| Body::Io(HubError::io("open", partial, e)))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    let mut done = from;
    let result = loop {
        match resp.chunk().await {
            Ok(Some(bytes)) if bytes.len() as u64 > size - done => break Err(Body::TooLong),
            Ok(Some(bytes)) => {
                if let Err(e) = out.write_all(&bytes) {
                    break Err(Body::Io(HubError::io("write", partial, e)));
                }
                done += bytes.len() as u64;
                on(FetchEvent::Progress { done, total: size });
            }
            Ok(None) => break Ok(done),
            Err(e) => break Err(Body::Broken(done, Some(e))),
        }
    };
    // Flushed whatever happened: the file's length is what the next attempt resumes from.
    out.flush()
        .map_err(|e| Body::Io(HubError::io("write", partial, e)))?;
    result
}

/// `snapshots/<commit>/<path>` → `../../blobs/<etag>` (one more `..` per directory in path),
/// relative as `huggingface_hub` makes it, so the cache can be moved whole.
fn link(blob: &Path, snapshot: &Path, etag: &str, file: &HfFile) -> Result<(), HubError> {
    let dir = snapshot.parent().expect("a snapshot path has a parent");
    std::fs::create_dir_all(dir).map_err(|e| HubError::io("create", dir, e))?;
    if std::fs::symlink_metadata(snapshot).is_ok() {
        std::fs::remove_file(snapshot).map_err(|e| HubError::io("replace", snapshot, e))?;
    }
    place(blob, snapshot, etag, file).map_err(|e| HubError::io("link", snapshot, e))
}

#[cfg(unix)]
fn place(_blob: &Path, snapshot: &Path, etag: &str, file: &HfFile) -> std::io::Result<()> {
    let mut target = PathBuf::new();
    for _ in 0..file.path.split('/').count() + 1 {
        target.push("..");
    }
    target.push("blobs");
    target.push(etag);
    std::os::unix::fs::symlink(&target, snapshot)
}

/// Without symlinks, a copy (as `huggingface_hub` does on Windows without developer mode).
#[cfg(not(unix))]
fn place(blob: &Path, snapshot: &Path, _etag: &str, _file: &HfFile) -> std::io::Result<()> {
    std::fs::copy(blob, snapshot).map(|_| ())
}

/// The deepest cause of `e` ("connection reset by peer"), for a one-line progress report.
fn innermost(e: &dyn std::error::Error) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

fn incomplete(blob: &Path) -> PathBuf {
    let mut s = blob.as_os_str().to_owned();
    s.push(".incomplete");
    PathBuf::from(s)
}

fn file_len(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn sha256_file(path: &Path) -> Result<String, HubError> {
    let mut f = std::fs::File::open(path).map_err(|e| HubError::io("open", path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| HubError::io("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_the_hub_layout() {
        let f = HfFile::parse("hf://datasets/org/data@refs%2Fpr%2F1/dir/a b.json").unwrap();
        let u = resolve_url("http://127.0.0.1:9/mirror/", &f).unwrap();
        assert_eq!(
            u.as_str(),
            "http://127.0.0.1:9/mirror/datasets/org/data/resolve/refs%2Fpr%2F1/dir/a%20b.json"
        );
    }
}
