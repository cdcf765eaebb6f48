//! The OpenAI-compatible streaming client: sends one request, reads its SSE stream
//! incrementally and timestamps every content chunk on arrival.
//!
//! Hot-path rules: one connection pool built before the clock starts; headers set once on the
//! pool; per request one body (built ahead by the caller), one ITL buffer, one text buffer; per
//! chunk one clock read and a scan that borrows from the event (see `chunk`).
//!
//! What counts as a failure, beyond the transport: an event past `max_event_bytes`, text that
//! is not UTF-8 or a chunk that is not the API's JSON is `malformed`; a stream that ends with
//! `[DONE]` but carried no generated content is `empty`. A request whose first attempt
//! provably never reached the server (a reused connection the server had already closed: no
//! byte of response came back) is sent once more on a fresh connection; its latency still
//! counts from its scheduled instant. See `docs/metrics.md`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use sse_stream::SseByteStream;

use super::chunk::{Usage, parse_chunk};
use super::limit::{BodyError, Capped};
use super::tokenize::ServerTokenizer;
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
    /// The most bytes one SSE event may take before the request fails as `malformed`.
    pub max_event_bytes: usize,
    /// The server's base URL without the API's `/v1`, where `/tokenize` is asked when a
    /// response carries no usage; `None` leaves such counts to the scenario's tokenizer.
    pub server_root: Option<String>,
}

impl ClientConfig {
    /// A configuration for `url` with the defaults: no extra headers, a 60 s timeout, a small
    /// pool, the chat template allowance and the default event cap.
    pub fn new(url: impl Into<String>) -> Self {
        ClientConfig {
            url: url.into(),
            headers: Vec::new(),
            api_key: None,
            timeout: Duration::from_secs(60),
            pool_size: 8,
            template_tokens: 16,
            max_event_bytes: crate::protocol::DEFAULT_MAX_EVENT_BYTES as usize,
            server_root: None,
        }
    }
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// Keeps no idle connection: a retry on it always opens a fresh one.
    fresh: reqwest::Client,
    url: Arc<str>,
    timeout: Duration,
    template_tokens: u32,
    max_event_bytes: usize,
    counter: Arc<dyn TokenCounter>,
    tokenize: Option<Arc<ServerTokenizer>>,
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
        let connect_timeout = cfg.timeout.min(Duration::from_secs(10));
        let http = reqwest::Client::builder()
            .default_headers(headers.clone())
            .pool_max_idle_per_host(cfg.pool_size.max(1))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .connect_timeout(connect_timeout)
            .build()?;
        let fresh = reqwest::Client::builder()
            .default_headers(headers)
            .pool_max_idle_per_host(0)
            .tcp_nodelay(true)
            .connect_timeout(connect_timeout)
            .build()?;
        Ok(Client {
            http,
            fresh,
            url: cfg.url.into(),
            timeout: cfg.timeout,
            template_tokens: cfg.template_tokens,
            max_event_bytes: cfg.max_event_bytes.max(1),
            counter,
            tokenize: cfg
                .server_root
                .as_deref()
                .map(|root| Arc::new(ServerTokenizer::new(root))),
        })
    }

    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The same headers, but a connection per request, closed after it: for asides such as the
    /// server's self-description, whose connections must not join the measured requests' pool
    /// (a server that closes reused connections would otherwise close one under the preflight).
    pub fn unpooled(&self) -> &reqwest::Client {
        &self.fresh
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
        if rec.planned_output_tokens == 0 {
            rec.planned_output_tokens = expected_output;
        }
        if rec.planned_input_tokens == 0 {
            rec.planned_input_tokens = rec.input_tokens;
        }
        let outcome = tokio::time::timeout(
            self.timeout,
            self.stream(body, expected_output, rec, &mut text, t0),
        )
        .await;
        rec.done_ns = since(t0);
        let usage = match outcome {
            Ok(usage) => usage,
            Err(_) => {
                rec.error = Some(ErrorKind::Timeout);
                None
            }
        };
        self.count_output(rec, usage, &text).await;
        text
    }

    /// Sets the output token count from the best source there is: the server's `usage` when
    /// it is plausible, else llama.cpp's `timings.predicted_n`, else an estimate from the text
    /// (the server's `/tokenize`, else the scenario's tokenizer). Runs after `done_ns` is
    /// taken, so a `/tokenize` call is not part of any latency.
    async fn count_output(&self, rec: &mut RequestRecord, usage: Option<Usage>, text: &str) {
        if let Some(u) = usage {
            let n = u.completion_tokens;
            let plausible = n <= u64::from(rec.planned_output_tokens.max(1))
                && n.saturating_mul(2) >= u64::from(rec.chunks);
            if plausible {
                rec.token_source = TokenSource::Usage;
                rec.output_tokens = n.min(u32::MAX as u64) as u32;
                return;
            }
            rec.implausible_usage = true;
        }
        let predicted = rec
            .server_timings
            .and_then(|t| t.predicted_n)
            .filter(|&n| n <= u64::from(rec.planned_output_tokens.max(1)));
        if let Some(n) = predicted {
            rec.token_source = TokenSource::Timings;
            rec.output_tokens = n as u32;
            return;
        }
        if text.is_empty() {
            rec.token_source = TokenSource::Tokenizer;
            rec.output_tokens = 0;
            return;
        }
        // Only a request that succeeded feeds the numbers: do not ask the server for others.
        if rec.ok()
            && let Some(t) = &self.tokenize
            && let Some(n) = t.count(&self.http, text, self.timeout).await
        {
            rec.token_source = TokenSource::Tokenize;
            rec.output_tokens = n.min(u32::MAX as u64) as u32;
            return;
        }
        rec.token_source = TokenSource::Tokenizer;
        rec.output_tokens = self.counter.count(text).min(u32::MAX as usize) as u32;
    }

    /// Sends the request and reads its stream into `rec` and `text`; the server's usage, when
    /// it sent one.
    async fn stream(
        &self,
        body: Bytes,
        expected_output: u32,
        rec: &mut RequestRecord,
        text: &mut String,
        t0: Instant,
    ) -> Option<Usage> {
        rec.sent_ns = since(t0);
        let resp = match self.http.post(&*self.url).body(body.clone()).send().await {
            Ok(r) => r,
            Err(e) if never_answered(&e) => {
                tracing::debug!("retrying on a fresh connection: {e}");
                rec.retries += 1;
                match self.fresh.post(&*self.url).body(body).send().await {
                    Ok(r) => r,
                    Err(e) => {
                        rec.error = Some(send_error(&e));
                        return None;
                    }
                }
            }
            Err(e) => {
                rec.error = Some(send_error(&e));
                return None;
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
            return None;
        }
        rec.itl_us.reserve(expected_output as usize);
        text.reserve(expected_output as usize * 6);
        let bytes = Capped::new(resp.bytes_stream(), self.max_event_bytes);
        let mut events = SseByteStream::new(bytes);
        let mut last: Option<u64> = None;
        let mut usage = None;
        let mut done = false;
        while let Some(event) = events.next().await {
            let now = since(t0);
            let event = match event {
                Ok(e) => e,
                Err(e) => {
                    rec.error = Some(stream_error(&e));
                    return usage;
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
                    return usage;
                }
            };
            if chunk.error {
                rec.error = Some(ErrorKind::StreamBroken);
                return usage;
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
        } else if rec.chunks == 0 {
            rec.error = Some(ErrorKind::Empty);
        }
        if let Some(u) = usage {
            self.check_prompt(rec, &u);
        }
        usage
    }

    /// Compares the server's prompt count with the plan's, then keeps the server's.
    fn check_prompt(&self, rec: &mut RequestRecord, u: &Usage) {
        let ours = rec.planned_input_tokens as f64;
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
}

/// The first attempt provably never reached the server: no byte of a response came back
/// because the connection was closed or reset under the request (a pooled connection the
/// server had closed after its previous response, as llama-server does after every stream),
/// or the request could not be written at all. A refused or timed-out connection is not this.
fn never_answered(e: &reqwest::Error) -> bool {
    if e.is_timeout() || e.is_connect() {
        return false;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(err) = source {
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_canceled())
        {
            return true;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::BrokenPipe
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
            )
        {
            return true;
        }
        source = err.source();
    }
    false
}

/// A request that got no response: `timeout` or `connect`.
fn send_error(e: &reqwest::Error) -> ErrorKind {
    if e.is_timeout() {
        ErrorKind::Timeout
    } else {
        ErrorKind::Connect
    }
}

/// Why the stream stopped: the connection (`stream_broken`), or what it carried (`malformed`:
/// text that is not UTF-8, an event past the size cap).
fn stream_error(e: &sse_stream::Error) -> ErrorKind {
    match e {
        sse_stream::Error::Body(b) => match b.downcast_ref::<BodyError>() {
            Some(BodyError::EventTooLarge(_)) => ErrorKind::Malformed,
            Some(BodyError::Http(h)) if h.is_timeout() => ErrorKind::Timeout,
            _ => ErrorKind::StreamBroken,
        },
        _ => ErrorKind::Malformed,
    }
}

fn since(t0: Instant) -> u64 {
    Instant::now().saturating_duration_since(t0).as_nanos() as u64
}
