//! What a run asks of the server besides generation: dropping its prompt cache between
//! stages (`reset-cache`), at the endpoint each engine has for it, at the server's root.

use std::time::Duration;

use crate::protocol::CacheReset;

/// How long one reset request may take: a cache drop is quick, and a server that does not
/// answer must not hold the run.
const RESET_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the server did not drop its cache: each endpoint tried, and what it did.
#[derive(Debug, thiserror::Error)]
pub(super) enum ResetError {
    #[error("{method} {url}: {source}")]
    Send {
        method: &'static str,
        url: String,
        source: reqwest::Error,
    },
    #[error("{method} {url} answered {status}")]
    Status {
        method: &'static str,
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("GET {url}: not JSON ({source})")]
    NotJson { url: String, source: reqwest::Error },
    #[error("GET {url} has no `total_slots`")]
    NoSlots { url: String },
    #[error("auto is not an endpoint")]
    Auto,
    /// Every endpoint tried failed.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Every(Vec<ResetError>),
}

/// Asks the server to drop its prompt cache. `Ok` names what answered (`auto` resolves to the
/// first engine whose endpoint did, which the caller keeps for the next stages); `Err` says
/// why nothing did.
pub(super) async fn reset_cache(
    http: &reqwest::Client,
    root: &str,
    how: CacheReset,
) -> Result<(CacheReset, String), ResetError> {
    let kinds: &[CacheReset] = match how {
        CacheReset::Auto => &[CacheReset::Vllm, CacheReset::Sglang, CacheReset::LlamaCpp],
        CacheReset::Vllm => &[CacheReset::Vllm],
        CacheReset::Sglang => &[CacheReset::Sglang],
        CacheReset::LlamaCpp => &[CacheReset::LlamaCpp],
    };
    let mut why = Vec::new();
    for &kind in kinds {
        match reset_one(http, root, kind).await {
            Ok(done) => return Ok((kind, done)),
            Err(e) => why.push(e),
        }
    }
    Err(ResetError::Every(why))
}

async fn reset_one(
    http: &reqwest::Client,
    root: &str,
    kind: CacheReset,
) -> Result<String, ResetError> {
    match kind {
        CacheReset::Vllm => post(http, &format!("{root}/reset_prefix_cache")).await,
        CacheReset::Sglang => post(http, &format!("{root}/flush_cache")).await,
        CacheReset::LlamaCpp => {
            let slots = llama_slots(http, root).await?;
            for id in 0..slots {
                post(http, &format!("{root}/slots/{id}?action=erase")).await?;
            }
            // The slots' KV only: llama-server's host-RAM prompt cache (`--cache-ram`, on by
            // default) has no endpoint, and keeps serving what it saved.
            Ok(format!(
                "POST {root}/slots/{{id}}?action=erase for slots 0–{}; llama.cpp's host-RAM \
                 prompt cache, if on, is not dropped",
                slots - 1
            ))
        }
        CacheReset::Auto => Err(ResetError::Auto),
    }
}

async fn post(http: &reqwest::Client, url: &str) -> Result<String, ResetError> {
    let resp = http
        .post(url)
        .timeout(RESET_TIMEOUT)
        .send()
        .await
        .map_err(|source| ResetError::Send {
            method: "POST",
            url: url.to_string(),
            source,
        })?;
    let status = resp.status();
    // Read the body so the connection can be reused.
    let _ = resp.bytes().await;
    if status.is_success() {
        Ok(format!("POST {url}"))
    } else {
        Err(ResetError::Status {
            method: "POST",
            url: url.to_string(),
            status,
        })
    }
}

/// llama-server's slot count, from `GET /props` (`total_slots`).
async fn llama_slots(http: &reqwest::Client, root: &str) -> Result<u64, ResetError> {
    let url = format!("{root}/props");
    let resp = http
        .get(&url)
        .timeout(RESET_TIMEOUT)
        .send()
        .await
        .map_err(|source| ResetError::Send {
            method: "GET",
            url: url.clone(),
            source,
        })?;
    if !resp.status().is_success() {
        return Err(ResetError::Status {
            method: "GET",
            status: resp.status(),
            url,
        });
    }
    let props: serde_json::Value = resp.json().await.map_err(|source| ResetError::NotJson {
        url: url.clone(),
        source,
    })?;
    props
        .get("total_slots")
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or(ResetError::NoSlots { url })
}
