//! What a server says about itself, for the provenance of a result: its `GET /v1/models`
//! answer (the runner's preflight asks it anyway and hands it over, `ServerInfo::from_models`),
//! vLLM's `/version`, llama.cpp's `/props`, SGLang's `/get_server_info`, and the `server`
//! response header. The three engine endpoints are asked once, concurrently, with a short
//! timeout; whatever answered with JSON is kept (bounded in size, secret-named fields masked,
//! long strings such as chat templates cut), and whatever did not is simply absent: a probe
//! never fails a run.

use std::time::Duration;

use crate::server_info::{ServerInfo, cut, scrub};

/// The self-description endpoints [`probe_server`] asks, relative to the server root.
pub const PROBED_PATHS: [&str; 3] = ["/version", "/props", "/get_server_info"];
/// The most of one answer that is read.
const MAX_BODY: usize = 256 * 1024;

/// Asks every endpoint of [`PROBED_PATHS`] at once, each bounded by `timeout`. Never fails.
pub async fn probe_server(http: &reqwest::Client, base_url: &str, timeout: Duration) -> ServerInfo {
    let root = crate::protocol::server_root(base_url);
    let root = root.as_str();
    let asks = PROBED_PATHS.iter().map(|path| async move {
        let url = format!("{root}{path}");
        let answer = tokio::time::timeout(timeout, ask(http, &url)).await;
        (*path, answer.ok().flatten())
    });
    let mut info = ServerInfo::default();
    for (path, answer) in futures_util::future::join_all(asks).await {
        let Some((header, body)) = answer else {
            continue;
        };
        if info.server_header.is_none() {
            info.server_header = header;
        }
        if let Some(body) = body {
            info.endpoints.insert(path.to_string(), body);
        }
    }
    info
}

/// One GET: the `server` header, and the body when it was a 2xx JSON answer.
async fn ask(
    http: &reqwest::Client,
    url: &str,
) -> Option<(Option<String>, Option<serde_json::Value>)> {
    let mut resp = http.get(url).send().await.ok()?;
    let header = resp
        .headers()
        .get(reqwest::header::SERVER)
        .and_then(|v| v.to_str().ok())
        .map(|s| cut(s.trim()));
    if !resp.status().is_success() {
        return Some((header, None));
    }
    let mut bytes = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        if bytes.len() + chunk.len() > MAX_BODY {
            // Too big to be a self-description worth keeping.
            return Some((header, None));
        }
        bytes.extend_from_slice(&chunk);
    }
    let body = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .map(scrub);
    Some((header, body))
}
