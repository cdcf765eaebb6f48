//! What a run asks of the server besides generation: dropping its prompt cache between
//! stages (`reset-cache`), at the endpoint each engine has for it, at the server's root.
//!
//! vLLM answers its reset with HTTP 200 and `{"success": false}` while requests still hold
//! cache blocks (stragglers of the previous stage the client gave up on, or other users): the
//! body is read, and a declined reset is asked again with backoff until the server has
//! drained, for at most the stage's drain time; one still declined then is an error, never a
//! reset taken as done.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::protocol::CacheReset;

/// How long one reset request may take: a cache drop is quick, and a server that does not
/// answer must not hold the run.
const RESET_TIMEOUT: Duration = Duration::from_secs(10);

/// The first pause before asking a declined reset again; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

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
    #[error("GET {url}: not JSON ({problem})")]
    NotJson { url: String, problem: String },
    #[error("GET {url} has no `total_slots`")]
    NoSlots { url: String },
    #[error("auto is not an endpoint")]
    Auto,
    /// The endpoint answered, but said it did not drop the cache (vLLM's `{"success": false}`
    /// while requests are running), every time it was asked.
    #[error(
        "POST {url} answered {{\"success\": false}} {tries} time(s) over {:.1} s (the server \
         drops its cache only when no request is running on it)",
        waited.as_secs_f64()
    )]
    Declined {
        url: String,
        tries: u32,
        waited: Duration,
    },
    /// Every endpoint tried failed.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Every(Vec<ResetError>),
}

/// How long a declined reset is asked again, and what cuts the wait short.
pub(super) struct ResetWait<'a> {
    /// The most time spent asking again (the stage's drain time).
    pub(super) budget: Duration,
    pub(super) interrupt: &'a CancellationToken,
}

/// Asks the server to drop its prompt cache. `Ok` names what answered (`auto` resolves to the
/// first engine whose endpoint did, which the caller keeps for the next stages); `Err` says
/// why nothing did. An endpoint that answers but declines is the server's answer: `auto`
/// tries no other engine's after it.
pub(super) async fn reset_cache(
    http: &reqwest::Client,
    root: &str,
    how: CacheReset,
    wait: &ResetWait<'_>,
) -> Result<(CacheReset, String), ResetError> {
    let kinds: &[CacheReset] = match how {
        CacheReset::Auto => &[CacheReset::Vllm, CacheReset::Sglang, CacheReset::LlamaCpp],
        CacheReset::Vllm => &[CacheReset::Vllm],
        CacheReset::Sglang => &[CacheReset::Sglang],
        CacheReset::LlamaCpp => &[CacheReset::LlamaCpp],
    };
    let mut why = Vec::new();
    for &kind in kinds {
        match reset_one(http, root, kind, wait).await {
            Ok(done) => return Ok((kind, done)),
            Err(e @ ResetError::Declined { .. }) => return Err(e),
            Err(e) => why.push(e),
        }
    }
    Err(ResetError::Every(why))
}

async fn reset_one(
    http: &reqwest::Client,
    root: &str,
    kind: CacheReset,
    wait: &ResetWait<'_>,
) -> Result<String, ResetError> {
    match kind {
        CacheReset::Vllm => until_accepted(http, &format!("{root}/reset_prefix_cache"), wait).await,
        CacheReset::Sglang => until_accepted(http, &format!("{root}/flush_cache"), wait).await,
        CacheReset::LlamaCpp => {
            let slots = llama_slots(http, root).await?;
            for id in 0..slots {
                until_accepted(http, &format!("{root}/slots/{id}?action=erase"), wait).await?;
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

/// `POST url` until the server does not decline it, backing off between tries, within the
/// wait's budget (an interrupt ends the wait).
async fn until_accepted(
    http: &reqwest::Client,
    url: &str,
    wait: &ResetWait<'_>,
) -> Result<String, ResetError> {
    let start = Instant::now();
    let mut backoff = FIRST_BACKOFF;
    let mut tries = 0u32;
    loop {
        tries += 1;
        if post(http, url).await? == Answer::Done {
            return Ok(match tries {
                1 => format!("POST {url}"),
                n => format!(
                    "POST {url}, accepted on try {n} after {:.1} s: the server declined while \
                     requests were running on it",
                    start.elapsed().as_secs_f64()
                ),
            });
        }
        let left = wait.budget.saturating_sub(start.elapsed());
        if left.is_zero() || wait.interrupt.is_cancelled() {
            return Err(ResetError::Declined {
                url: url.to_string(),
                tries,
                waited: start.elapsed(),
            });
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff.min(left)) => {}
            _ = wait.interrupt.cancelled() => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// What a 2xx answer to a reset said.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Done,
    /// `{"success": false}`: the server kept its cache.
    Declined,
}

/// Whether a 2xx body declines: only a JSON object whose `success` is `false` does (vLLM's
/// empty or `{"success": true}`, SGLang's text and llama.cpp's slot answer do not).
fn declined(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("success").and_then(serde_json::Value::as_bool))
        == Some(false)
}

async fn post(http: &reqwest::Client, url: &str) -> Result<Answer, ResetError> {
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
    let body = read_small(resp).await;
    if status.is_success() {
        Ok(if declined(&body) {
            Answer::Declined
        } else {
            Answer::Done
        })
    } else {
        Err(ResetError::Status {
            method: "POST",
            url: url.to_string(),
            status,
        })
    }
}

/// The most of a reset's answer that is read: what it says fits in a few bytes.
const MAX_ANSWER_BYTES: usize = 4096;

/// The answer's body, read to its end so the connection can be reused; empty when it is
/// larger than [`MAX_ANSWER_BYTES`] (no reset says anything in that much) or breaks off.
async fn read_small(mut resp: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Vec::new();
        }
        body.extend_from_slice(&chunk);
    }
    body
}

/// The most of llama-server's `/props` read (its chat template and settings: kilobytes).
const MAX_PROPS_BYTES: usize = 4 << 20;

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
    let not_json = |problem: String| ResetError::NotJson {
        url: url.clone(),
        problem,
    };
    let body = crate::files::read_answer(resp, MAX_PROPS_BYTES)
        .await
        .map_err(|e| not_json(e.to_string()))?;
    let props: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| not_json(e.to_string()))?;
    props
        .get("total_slots")
        .and_then(serde_json::Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or(ResetError::NoSlots { url })
}

#[cfg(test)]
mod tests {
    use super::declined;

    #[test]
    fn only_a_json_success_false_declines() {
        assert!(declined(br#"{"success": false}"#));
        assert!(declined(br#"{"success":false,"detail":"running"}"#));
        for body in [
            &b""[..],
            br#"{"success": true}"#,
            b"Cache flushed.\n",
            br#"{"id_slot":0,"n_erased":12}"#,
            br#"{"success": "false"}"#,
            br#"[false]"#,
            b"\xff\xfe",
        ] {
            assert!(!declined(body), "{}", String::from_utf8_lossy(body));
        }
    }
}
