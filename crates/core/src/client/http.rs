//! The OpenAI-compatible streaming client: sends one request, reads its SSE stream
//! incrementally and timestamps every content chunk on arrival.
//!
//! Hot-path rules: one connection pool built before the clock starts; headers set once on the
//! pool; per request one body (built ahead by the caller), one ITL buffer, one text buffer; per
//! chunk one clock read and a scan that borrows from the event (see `chunk`).
//!
//! What counts as a failure, beyond the transport: an event past `max_event_bytes`, text that
//! is not UTF-8 or a chunk that is not the API's JSON is `malformed`; a stream that ends with
//! `[DONE]` but carried no generated content is `empty`; an answer that is not HTTP/1.1 the
//! client can read without guessing (an unparsable or oversized head, conflicting lengths, a
//! broken chunked encoding) is `protocol`. A request whose first attempt on a reused
//! connection failed before any byte of response (the server had closed it) is sent once
//! more on a fresh connection; its latency still counts from its scheduled instant. A fresh
//! connection's failure is never resent. See `docs/metrics.md`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::reqwest_errors::{never_answered, send_error, unusable};
use super::sse::Events;
use super::tokenize::ServerTokenizer;
use super::wire::{BodyError, Held, POOL_IDLE_TIMEOUT, Response, SendError, Tag, Wire};
use crate::metrics::{ErrorKind, RequestRecord};
use crate::protocol::{Answer, Api, TraceContext, Usage};

/// The most of an error answer's body read (to keep its connection): an error says what it
/// says in far less.
const MAX_ERROR_BODY: usize = 64 << 10;

mod count;
mod generated;
mod tally;
mod whole;

use tally::{End, Tally};

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
    /// The API the URL speaks: how its events read, and the tokens its prompt template may
    /// add before the server's prompt count is taken to disagree with ours.
    pub api: Api,
    /// Ask for a stream (the default), or for whole answers where the API can give them
    /// (`stream #false`): with `api`, how requests are answered (`protocol::answer_of`).
    pub stream: bool,
    /// The most bytes one SSE event may take before the request fails as `malformed`.
    pub max_event_bytes: usize,
    /// The server's base URL without the API's `/v1`, where `/tokenize` is asked when a
    /// response carries no usage; `None` leaves such counts to the scenario's tokenizer.
    pub server_root: Option<String>,
    /// The header each request's session-affinity id goes in (`affinity-header`), if any.
    pub affinity_header: Option<String>,
    /// The header each request's class priority goes in (`priority-as "header"`), if any.
    pub priority_header: Option<String>,
}

impl ClientConfig {
    /// A configuration for `url` with the defaults: no extra headers, a 60 s timeout, a small
    /// pool, the default API (chat) and the default event cap.
    pub fn new(url: impl Into<String>) -> Self {
        ClientConfig {
            url: url.into(),
            headers: Vec::new(),
            api_key: None,
            timeout: Duration::from_secs(60),
            pool_size: 8,
            api: Api::default(),
            stream: true,
            max_event_bytes: crate::protocol::DEFAULT_MAX_EVENT_BYTES as usize,
            server_root: None,
            affinity_header: None,
            priority_header: None,
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
    api: Api,
    answer: Answer,
    max_event_bytes: usize,
    counter: Arc<dyn TokenCounter>,
    tokenize: Option<Arc<ServerTokenizer>>,
    /// Plain-HTTP targets' own connections (see `wire.rs`); `None` sends through reqwest.
    wire: Option<Arc<Wire>>,
    /// The session-affinity header's name, parsed once.
    affinity: Option<HeaderName>,
    /// The priority header's name, parsed once.
    priority: Option<HeaderName>,
}

/// How long a finished response's remaining bytes are waited for before its connection is
/// given up (they normally came with `[DONE]`).
const DRAIN_WAIT: Duration = Duration::from_secs(1);

/// The most bytes of the model list one warm-up request reads.
const WARM_BODY_LIMIT: usize = 4 << 20;

/// `rb` with the request's trace context headers, when it has one.
fn traced(rb: reqwest::RequestBuilder, trace: Option<TraceContext>) -> reqwest::RequestBuilder {
    match trace {
        Some(t) => rb
            .header("traceparent", &t.traceparent()[..])
            .header("x-request-id", &t.trace_hex()[..]),
        None => rb,
    }
}

/// A per-request header's name (affinity, priority), parsed once.
fn header_name(name: Option<&str>) -> Result<Option<HeaderName>, ClientError> {
    name.map(|n| {
        HeaderName::from_bytes(n.as_bytes()).map_err(|e| ClientError::Header {
            name: n.to_string(),
            reason: e.to_string(),
        })
    })
    .transpose()
}

/// An HTTP proxy variable is set: reqwest, which honours them (and `NO_PROXY`), sends.
fn proxied() -> bool {
    ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
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
        let affinity = header_name(cfg.affinity_header.as_deref())?;
        let priority = header_name(cfg.priority_header.as_deref())?;
        let connect_timeout = cfg.timeout.min(Duration::from_secs(10));
        let wire = (!proxied())
            .then(|| {
                let rendered: Vec<(String, String)> = headers
                    .iter()
                    .filter(|(name, _)| *name != CONTENT_TYPE)
                    .filter_map(|(n, v)| {
                        Some((n.as_str().to_string(), v.to_str().ok()?.to_string()))
                    })
                    .collect();
                Wire::new(&cfg.url, &rendered, cfg.pool_size, connect_timeout).map(|w| {
                    w.with_affinity(cfg.affinity_header.as_deref())
                        .with_priority(cfg.priority_header.as_deref())
                })
            })
            .flatten()
            .map(Arc::new);
        let http = reqwest::Client::builder()
            .default_headers(headers.clone())
            .pool_max_idle_per_host(cfg.pool_size.max(1))
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
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
            api: cfg.api,
            answer: crate::protocol::answer_of(cfg.api, cfg.stream),
            max_event_bytes: cfg.max_event_bytes.max(1),
            counter,
            tokenize: cfg
                .server_root
                .as_deref()
                .map(|root| Arc::new(ServerTokenizer::new(root))),
            wire,
            affinity,
            priority,
        })
    }

    /// Opens up to `n` connections to `base_url` (the API base) before a stage, each asked
    /// for the model list and read to its end so it is reusable: the stage's requests then
    /// open none.
    pub async fn warm(&self, base_url: &str, n: usize) {
        let models = crate::protocol::join(base_url, "/models");
        if let Some(wire) = &self.wire
            && let Some(path) = wire.same_origin_path(&models)
        {
            return wire.warm(&path, n, self.max_event_bytes).await;
        }
        let gets = (0..n).map(|_| async {
            // Read to the end (so the connection is reusable), within a bound.
            if let Ok(mut r) = self.http.get(&models).send().await {
                let mut read = 0;
                while let Ok(Some(chunk)) = r.chunk().await {
                    read += chunk.len();
                    if read > WARM_BODY_LIMIT {
                        break;
                    }
                }
            }
        });
        futures_util::future::join_all(gets).await;
    }

    /// The same client with a connection pool of its own (a `--cpus` shard's; see
    /// `Wire::with_own_pool`). reqwest's pool (https, proxies) stays shared.
    pub fn with_own_pool(&self) -> Client {
        Client {
            wire: self.wire.as_deref().map(|w| Arc::new(w.with_own_pool())),
            ..self.clone()
        }
    }

    /// Gives a session's held connection back to this client's pool when the session ends
    /// (reqwest's path holds none).
    pub fn release(&self, held: &mut Held) {
        if let Some(wire) = &self.wire {
            held.release_to(wire);
        }
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
        self.execute_tagged(body, (Tag::default(), None), expected_output, rec, t0)
            .await
    }

    /// Like [`execute_text`](Self::execute_text), with what `tag` adds to the request (its
    /// session-affinity id), on `held`'s connection when one is given and still fit (its
    /// connection is then kept there for the next request, not pooled: a session's turns on
    /// one connection). reqwest's path (https, a proxy) pools as it does.
    pub async fn execute_tagged(
        &self,
        body: Bytes,
        (tag, mut held): (Tag<'_>, Option<&mut Held>),
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
        match self.answer {
            Answer::Stream => {}
            Answer::Pooled(_) => {
                // Nothing is generated: no output is planned either.
                rec.planned_output_tokens = 0;
                self.execute_whole(body, (tag, held), rec, t0).await;
                return text;
            }
            Answer::Whole => return self.execute_generated(body, (tag, held), rec, t0).await,
        }
        let (outcome, tail) = match &self.wire {
            Some(wire) => {
                let on = (tag, held.as_deref_mut());
                let stream = self.stream_wire(wire, &body, on, expected_output, rec, &mut text, t0);
                match tokio::time::timeout(self.timeout, stream).await {
                    Ok((usage, tail)) => (Ok(usage), tail),
                    Err(e) => (Err(e), None),
                }
            }
            None => {
                let stream = self.stream(body, tag, expected_output, rec, &mut text, t0);
                (tokio::time::timeout(self.timeout, stream).await, None)
            }
        };
        rec.done_ns = since(t0);
        // The rest of the body (the chunked encoding's end, an error's text), off the clock:
        // read to its end, the connection goes back to the pool.
        if let (Some(wire), Some(mut resp)) = (&self.wire, tail)
            && tokio::time::timeout(self.timeout.min(DRAIN_WAIT), resp.drain()).await == Ok(true)
        {
            resp.finish_to(wire, held);
        }
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

    /// Sends the request through reqwest and reads its stream into `rec` and `text`; the
    /// server's usage, when it sent one.
    async fn stream(
        &self,
        body: Bytes,
        tag: Tag<'_>,
        expected_output: u32,
        rec: &mut RequestRecord,
        text: &mut String,
        t0: Instant,
    ) -> Option<Usage> {
        rec.sent_ns = since(t0);
        let mut resp = self.post_reqwest(body, tag, rec).await?;
        let status = resp.status();
        rec.status = Some(status.as_u16());
        rec.sim_id = resp
            .headers()
            .get("x-infermeter-sim-id")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        if !status.is_success() {
            rec.error = Some(ErrorKind::Http(status.as_u16()));
            // Reading a small error body keeps the connection reusable; a large one is left
            // unread (its connection closed), so no server can grow the memory with it.
            let _ = crate::files::read_answer(resp, MAX_ERROR_BODY).await;
            return None;
        }
        rec.itl_us.reserve(expected_output as usize);
        text.reserve(expected_output as usize * 6);
        let mut events = Events::new(self.max_event_bytes);
        let mut tally = Tally::new(self.api);
        let mut now = since(t0);
        loop {
            if let Some(end) = tally.take_events(&mut events, now, rec, text) {
                return self.end(tally, end, rec);
            }
            match resp.chunk().await {
                Ok(Some(bytes)) => {
                    now = since(t0);
                    events.push(&bytes);
                }
                Ok(None) => return self.end(tally, End::Eof, rec),
                Err(e) => {
                    let kind = if e.is_timeout() {
                        ErrorKind::Timeout
                    } else if unusable(&e) {
                        ErrorKind::Protocol
                    } else {
                        ErrorKind::StreamBroken
                    };
                    return self.end(tally, End::Failed(kind), rec);
                }
            }
        }
    }

    /// Like [`stream`](Self::stream), over this client's own HTTP/1.1 connections; also
    /// returns the response when its connection may be reused once the rest of its body is
    /// read (after the request's end time is taken).
    #[allow(
        clippy::too_many_arguments,
        reason = "the request, its tag, and where its outcome goes"
    )]
    async fn stream_wire(
        &self,
        wire: &Wire,
        body: &[u8],
        on: (Tag<'_>, Option<&mut Held>),
        expected_output: u32,
        rec: &mut RequestRecord,
        text: &mut String,
        t0: Instant,
    ) -> (Option<Usage>, Option<Response>) {
        let Some(mut resp) = self.post_on(wire, body, on, rec, t0).await else {
            return (None, None);
        };
        let mut now = since(t0);
        rec.status = Some(resp.status);
        rec.sim_id = resp.sim_id;
        if !(200..300).contains(&resp.status) {
            rec.error = Some(ErrorKind::Http(resp.status));
            return (None, Some(resp));
        }
        rec.itl_us.reserve(expected_output as usize);
        text.reserve(expected_output as usize * 6);
        let mut tally = Tally::new(self.api);
        loop {
            if let Some(end) = tally.take_events(&mut resp.conn.events, now, rec, text) {
                let reusable = matches!(end, End::Done).then_some(resp);
                return (self.end(tally, end, rec), reusable);
            }
            match resp.fill().await {
                Ok(true) => now = since(t0),
                Ok(false) => return (self.end(tally, End::Eof, rec), None),
                Err(e) => {
                    tracing::debug!("stream broken: {e}");
                    let end = End::Failed(match e {
                        BodyError::Io(_) => ErrorKind::StreamBroken,
                        BodyError::Framing(_) => ErrorKind::Protocol,
                    });
                    return (self.end(tally, end, rec), None);
                }
            }
        }
    }

    /// How the stream ended, into `rec`; the server's usage, when it sent one.
    fn end(&self, tally: Tally, end: End, rec: &mut RequestRecord) -> Option<Usage> {
        match end {
            End::Failed(kind) => {
                rec.error = Some(kind);
                return tally.usage;
            }
            End::Eof => rec.error = Some(ErrorKind::StreamBroken),
            End::Done if rec.chunks == 0 => rec.error = Some(ErrorKind::Empty),
            End::Done => {}
        }
        // The server's prompt count: its usage, else llama.cpp's timings (the templated
        // prompt, as usage would say: the tokens it processed plus those it had cached).
        let prompt = match (&tally.usage, rec.server_timings) {
            (Some(u), _) => Some((u.prompt_tokens, u.cached_tokens)),
            (None, Some(t)) => t
                .prompt_n
                .map(|n| (n.saturating_add(t.cache_n.unwrap_or(0)), t.cache_n)),
            (None, None) => None,
        };
        if let Some((tokens, cached)) = prompt {
            self.check_prompt(rec, tokens, cached);
        }
        tally.usage
    }

    /// Posts `body` on `wire` and reads the answer's head, recording when it was sent and a
    /// retry on a fresh connection; `None` with the record's error kind when nothing usable
    /// came back. Shared by the streamed and the whole-body paths.
    async fn post_on(
        &self,
        wire: &Wire,
        body: &[u8],
        on: (Tag<'_>, Option<&mut Held>),
        rec: &mut RequestRecord,
        t0: Instant,
    ) -> Option<Response> {
        rec.sent_ns = since(t0);
        let mut retried = false;
        let sent = wire
            .post(
                body,
                on,
                rec.trace.as_ref(),
                self.max_event_bytes,
                &mut retried,
            )
            .await;
        if retried {
            rec.retries += 1;
        }
        match sent {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::debug!("request failed: {e}");
                rec.error = Some(match e {
                    SendError::Connect(_) => ErrorKind::Connect,
                    SendError::ConnectTimeout => ErrorKind::Timeout,
                    SendError::NotAnswered(_) | SendError::Cut(_) => ErrorKind::StreamBroken,
                    SendError::Protocol(_) => ErrorKind::Protocol,
                });
                None
            }
        }
    }

    /// Posts `body` through reqwest (https, a proxied target), once more on a fresh connection
    /// when a reused one was closed before any answer; `None` with the record's error kind when
    /// nothing came back. The reqwest counterpart of [`post_on`](Self::post_on).
    async fn post_reqwest(
        &self,
        body: Bytes,
        tag: Tag<'_>,
        rec: &mut RequestRecord,
    ) -> Option<reqwest::Response> {
        match self
            .post(&self.http, body.clone(), tag, rec.trace)
            .send()
            .await
        {
            Ok(r) => Some(r),
            Err(e) if never_answered(&e) => {
                tracing::debug!("retrying on a fresh connection: {e}");
                rec.retries += 1;
                match self.post(&self.fresh, body, tag, rec.trace).send().await {
                    Ok(r) => Some(r),
                    Err(e) => {
                        rec.error = Some(send_error(&e));
                        None
                    }
                }
            }
            Err(e) => {
                rec.error = Some(send_error(&e));
                None
            }
        }
    }

    /// A POST of `body` through `http` (the pooled client or the fresh one), with the tag's
    /// affinity and priority headers when the target has them.
    fn post(
        &self,
        http: &reqwest::Client,
        body: Bytes,
        tag: Tag<'_>,
        trace: Option<TraceContext>,
    ) -> reqwest::RequestBuilder {
        let mut req = traced(http.post(&*self.url), trace).body(body);
        if let (Some(name), Some(p)) = (&self.priority, tag.priority) {
            req = req.header(name.clone(), HeaderValue::from(p));
        }
        match (&self.affinity, tag.affinity.map(HeaderValue::from_str)) {
            (Some(name), Some(Ok(value))) => req.header(name.clone(), value),
            _ => req,
        }
    }
}

fn since(t0: Instant) -> u64 {
    Instant::now().saturating_duration_since(t0).as_nanos() as u64
}
