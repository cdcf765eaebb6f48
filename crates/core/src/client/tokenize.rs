//! Counting generated text with the server's own tokenizer (`POST /tokenize`), for servers that
//! stream no `usage`. llama.cpp takes `{"content"}` and answers `{"tokens": […]}`; vLLM and
//! SGLang take `{"prompt"}` and answer `{"count", "tokens"}`. Which one a server speaks is found
//! out once, on the first request that needs it; a server with neither leaves the count to the
//! scenario's tokenizer.

use std::time::Duration;

use serde::Deserialize;
use tokio::sync::OnceCell;

/// The most of a `/tokenize` answer read: token ids of a 100,000-token text take under 1 MiB.
const MAX_ANSWER_BYTES: usize = 8 << 20;

/// The request shape a server's `/tokenize` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// `{"content": text, "add_special": false}` (llama.cpp).
    Content,
    /// `{"prompt": text, "add_special_tokens": false}` (vLLM, SGLang).
    Prompt,
}

#[derive(Deserialize)]
struct Answer {
    count: Option<u64>,
    #[serde(default)]
    tokens: Vec<serde::de::IgnoredAny>,
}

/// A server's `/tokenize`, probed on first use.
pub(super) struct ServerTokenizer {
    url: String,
    dialect: OnceCell<Option<Dialect>>,
}

impl ServerTokenizer {
    /// `root` is the server's base without the `/v1` of the API.
    pub(super) fn new(root: &str) -> Self {
        ServerTokenizer {
            url: format!("{}/tokenize", root.trim_end_matches('/')),
            dialect: OnceCell::new(),
        }
    }

    /// The server's count of `text`'s tokens; `None` when it has no usable `/tokenize`.
    pub(super) async fn count(
        &self,
        http: &reqwest::Client,
        text: &str,
        timeout: Duration,
    ) -> Option<u64> {
        let dialect = *self
            .dialect
            .get_or_init(|| async {
                // A probe text whose count is not 0 under any tokenizer.
                for d in [Dialect::Content, Dialect::Prompt] {
                    if self.ask(http, d, "hello world", timeout).await.is_some() {
                        return Some(d);
                    }
                }
                None
            })
            .await;
        self.ask(http, dialect?, text, timeout).await
    }

    async fn ask(
        &self,
        http: &reqwest::Client,
        dialect: Dialect,
        text: &str,
        timeout: Duration,
    ) -> Option<u64> {
        let body = match dialect {
            Dialect::Content => serde_json::json!({ "content": text, "add_special": false }),
            Dialect::Prompt => {
                serde_json::json!({ "prompt": text, "add_special_tokens": false })
            }
        };
        let mut resp = http
            .post(&self.url)
            .json(&body)
            .timeout(timeout)
            .send()
            .await
            .ok()?;
        if !resp.status().is_success() {
            return None;
        }
        // Read at most MAX_ANSWER_BYTES: a server that answers without end must not fill the
        // client's memory (the preflight asks every server that has the endpoint).
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.ok()? {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return None;
            }
            bytes.extend_from_slice(&chunk);
        }
        let answer: Answer = serde_json::from_slice(&bytes).ok()?;
        let n = answer.count.unwrap_or(answer.tokens.len() as u64);
        // llama.cpp answers an unknown body with no tokens: not an answer for a non-empty text.
        (n > 0 || text.is_empty()).then_some(n)
    }
}
