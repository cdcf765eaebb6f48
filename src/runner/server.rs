//! What a run asks of the server besides generation: dropping its prompt cache between
//! stages (`reset-cache`), at the endpoint each engine has for it, at the server's root.

use std::time::Duration;

use crate::protocol::CacheReset;

/// How long one reset request may take: a cache drop is quick, and a server that does not
/// answer must not hold the run.
const RESET_TIMEOUT: Duration = Duration::from_secs(10);

/// Asks the server to drop its prompt cache. `Ok` names what answered (`auto` resolves to the
/// first engine whose endpoint did, which the caller keeps for the next stages); `Err` says
/// why nothing did.
pub(super) async fn reset_cache(
    http: &reqwest::Client,
    root: &str,
    how: CacheReset,
) -> Result<(CacheReset, String), String> {
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
    Err(why.join("; "))
}

async fn reset_one(http: &reqwest::Client, root: &str, kind: CacheReset) -> Result<String, String> {
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
        CacheReset::Auto => Err("auto is not an endpoint".into()),
    }
}

async fn post(http: &reqwest::Client, url: &str) -> Result<String, String> {
    let resp = http
        .post(url)
        .timeout(RESET_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    let status = resp.status();
    // Read the body so the connection can be reused.
    let _ = resp.bytes().await;
    if status.is_success() {
        Ok(format!("POST {url}"))
    } else {
        Err(format!("POST {url} answered {status}"))
    }
}

/// llama-server's slot count, from `GET /props` (`total_slots`).
async fn llama_slots(http: &reqwest::Client, root: &str) -> Result<u64, String> {
    let url = format!("{root}/props");
    let resp = http
        .get(&url)
        .timeout(RESET_TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("GET {url} answered {}", resp.status()));
    }
    let props: serde_json::Value = resp
        .json()
        .await
        .map_err(|e| format!("GET {url}: not JSON ({e})"))?;
    props
        .get("total_slots")
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("GET {url} has no `total_slots`"))
}
