//! The OpenAI-compatible streaming client: sends one request, reads its SSE stream
//! incrementally and timestamps every content chunk on arrival.
//!
//! Hot-path rules: one connection pool built before the clock starts; headers set once on the
//! pool; per request one body (built ahead by the caller), one ITL buffer, one text buffer; per
//! chunk one clock read and a scan that borrows from the event (see `chunk`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use sse_stream::SseByteStream;

use super::chunk::parse_chunk;
use crate::metrics::{ErrorKind, RequestRecord, TokenSource};

/// Counts tokens in text the server sent, when it sent no `usage`.
pub trait TokenCounter: Send + Sync {
    fn count(&self, text: &str) -> usize;
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid header `{name}`: {reason}")]
    Header { name: String, reason: String },
    #[error("environment variable `{0}` (the target's api-key) is not set")]
    MissingApiKey(String),
    #[error("failed to build the HTTP client: {0}")]
    Build(#[from] reqwest::Error),
}

/// How to reach the target.
pub struct ClientConfig {
    /// Full URL requests are posted to, e.g. `http://127.0.0.1:8000/v1/chat/completions`.
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The API key's value (read from the environment by the caller), never logged.
    pub api_key: Option<String>,
    pub timeout: Duration,
    /// Idle connections kept per host: size it for the expected concurrency.
    pub pool_size: usize,
    /// Tokens a server may add to a prompt (chat template, BOS) before its count is
    /// considered to disagree with ours.
    pub template_tokens: u32,
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    url: Arc<str>,
    timeout: Duration,
    template_tokens: u32,
    counter: Arc<dyn TokenCounter>,
}

/// Installs the process-wide TLS provider reqwest needs; safe to call more than once.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Client {
    pub fn new(cfg: ClientConfig, counter: Arc<dyn TokenCounter>) -> Result<Self, ClientError> {
        install_tls_provider();
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in &cfg.headers {
            let bad = |reason: String| ClientError::Header {
                name: name.clone(),
                reason,
            };
            let n = HeaderName::from_bytes(name.as_bytes()).map_err(|e| bad(e.to_string()))?;
            let v = HeaderValue::from_str(value).map_err(|e| bad(e.to_string()))?;
            headers.insert(n, v);
        }
        if let Some(key) = &cfg.api_key {
            let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ClientError::Header {
                    name: "authorization".into(),
                    reason: "the api key has characters not allowed in a header".into(),
                }
            })?;
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .pool_max_idle_per_host(cfg.pool_size.max(1))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(10)))
            .build()?;
        Ok(Client {
            http,
            url: cfg.url.into(),
            timeout: cfg.timeout,
            template_tokens: cfg.template_tokens,
            counter,
        })
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Sends one request and fills `rec` (whose `index`, `scheduled_ns` and `input_tokens` the
    /// caller set). Times are nanoseconds since `t0`. Never panics, never returns early
    /// without setting `done_ns`.
    pub async fn execute(
        &self,
        body: Bytes,
        expected_output: u32,
        rec: &mut RequestRecord,
        t0: Instant,
    ) {
        self.execute_text(body, expected_output, rec, t0).await;
    }

    /// Like [`execute`](Self::execute), and returns the response text (answer and reasoning)
    /// for `validate` hooks.
    pub async fn execute_text(
        &self,
        body: Bytes,
        expected_output: u32,
        rec: &mut RequestRecord,
        t0: Instant,
    ) -> String {
        let mut text = String::new();
        let outcome = tokio::time::timeout(
            self.timeout,
            self.stream(body, expected_output, rec, &mut text, t0),
        )
        .await;
        rec.done_ns = since(t0);
        if outcome.is_err() {
            rec.error = Some(ErrorKind::Timeout);
        }
        // Without the server's usage (or when the stream died before it), count what arrived.
        if rec.token_source == TokenSource::Tokenizer
            || (rec.output_tokens == 0 && !text.is_empty())
        {
            rec.token_source = TokenSource::Tokenizer;
            rec.output_tokens = self.counter.count(&text) as u32;
        }
        text
    }

    async fn stream(
        &self,
        body: Bytes,
        expected_output: u32,
        rec: &mut RequestRecord,
        text: &mut String,
        t0: Instant,
    ) {
        rec.sent_ns = since(t0);
        let resp = match self.http.post(&*self.url).body(body).send().await {
            Ok(r) => r,
            Err(e) => {
                rec.error = Some(if e.is_timeout() {
                    ErrorKind::Timeout
                } else {
                    ErrorKind::Connect
                });
                return;
            }
        };
        let status = resp.status();
        rec.status = Some(status.as_u16());
        rec.sim_id = resp
            .headers()
            .get("x-infermeter-sim-id")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        if !status.is_success() {
            rec.error = Some(ErrorKind::Http(status.as_u16()));
            // Reading the (small) error body keeps the connection reusable.
            let _ = resp.bytes().await;
            return;
        }
        rec.itl_us.reserve(expected_output as usize);
        text.reserve(expected_output as usize * 6);
        let mut events = SseByteStream::new(resp.bytes_stream());
        let mut last: Option<u64> = None;
        let mut usage = None;
        let mut done = false;
        while let Some(event) = events.next().await {
            let now = since(t0);
            let event = match event {
                Ok(e) => e,
                Err(_) => {
                    rec.error = Some(ErrorKind::StreamBroken);
                    return;
                }
            };
            // Blocks without data (comments, `event:`-only keep-alives, an empty `data:`)
            // carry no chunk; browsers' EventSource does not dispatch them either.
            let Some(data) = event.data.as_deref().filter(|d| !d.is_empty()) else {
                continue;
            };
            if data == "[DONE]" {
                done = true;
                break;
            }
            let chunk = match parse_chunk(data) {
                Ok(c) => c,
                Err(_) => {
                    rec.error = Some(ErrorKind::Malformed);
                    return;
                }
            };
            if chunk.error {
                rec.error = Some(ErrorKind::StreamBroken);
                return;
            }
            if chunk.has_output() {
                match last {
                    None => rec.first_token_ns = Some(now),
                    Some(prev) => rec
                        .itl_us
                        .push(((now - prev) / 1_000).min(u32::MAX as u64) as u32),
                }
                last = Some(now);
                rec.chunks += 1;
            }
            if chunk.has_answer() && rec.first_answer_ns.is_none() {
                rec.first_answer_ns = Some(now);
            }
            if let Some(a) = &chunk.answer {
                a.push_to(text);
            }
            if let Some(r) = &chunk.reasoning {
                r.push_to(text);
            }
            if let Some(u) = chunk.usage {
                usage = Some(u);
            }
            if chunk.finish_reason.is_some() {
                rec.finish_reason = chunk.finish_reason;
            }
            if chunk.timings.is_some() {
                rec.server_timings = chunk.timings;
            }
        }
        if !done {
            rec.error = Some(ErrorKind::StreamBroken);
        }
        match usage {
            Some(u) => {
                rec.token_source = TokenSource::Usage;
                rec.output_tokens = u.completion_tokens.min(u32::MAX as u64) as u32;
                let ours = rec.input_tokens as f64;
                let theirs = u.prompt_tokens as f64;
                // The server counts its chat template too: a few tokens per message on top of
                // the text we sent, hence an absolute allowance besides the relative one.
                // A conversation's later messages add theirs (8 each, a generous chat template).
                let template =
                    u64::from(self.template_tokens) + 8 * u64::from(rec.messages.saturating_sub(1));
                let allowed = (ours * 0.05).max(template as f64);
                rec.token_mismatch = ours > 0.0 && (theirs - ours).abs() > allowed;
                rec.input_tokens = u.prompt_tokens.min(u32::MAX as u64) as u32;
                rec.cached_tokens = u.cached_tokens.map(|c| c.min(u32::MAX as u64) as u32);
            }
            None => rec.token_source = TokenSource::Tokenizer,
        }
    }
}

fn since(t0: Instant) -> u64 {
    Instant::now().saturating_duration_since(t0).as_nanos() as u64
}
