//! A generation request from its body to its answer: the model, the lengths, the faults and
//! the trace decided, the sequence handed to the scheduler, and its chunks streamed back or
//! collected into one whole answer.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::apis::Served;
use super::config::SimConfig;
use super::conn::ConnTag;
use super::faults::{self, Fault};
use super::framing::Framing;
use super::qa;
use super::scheduler::{Chunk, NewSeq};
use super::state::{AppState, SIM_ID_HEADER, bad_request, json_response};
use super::tokens;
use super::trace::{Outcome, TraceRecord};
use super::wire::{self, GenRequest, Timings, Whole};
use crate::protocol::TraceContext;

/// A generation request to one API, answered with the common headers.
pub(super) async fn serve(
    app: Arc<AppState>,
    conn: ConnTag,
    served: Served,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let close_after_stream = app.config.close_after_stream;
    let trace = app
        .config
        .otlp_traces_endpoint
        .as_ref()
        .and_then(|_| headers.get("traceparent"))
        .and_then(|v| TraceContext::parse_traceparent(v.as_bytes()));
    let told = match super::priority::told(&app.config, &headers) {
        Ok(p) => p,
        Err(message) => {
            let mut resp = bad_request(&message, None);
            common_headers(&mut resp, close_after_stream);
            return resp;
        }
    };
    let mut resp = generate(app, conn, (served, trace, told), body).await;
    common_headers(&mut resp, close_after_stream);
    resp
}

pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The response's framing: the API's stream, or with `tool-calls` and a request offering a
/// tool, a streamed call of it — unless the request ends with a tool result, which the model
/// answers with text (a session's tool round trip ends).
fn framing(
    served: Served,
    req: &GenRequest,
    (id, tool): (u64, Option<&str>),
    model: &str,
    cfg: &SimConfig,
) -> Framing {
    let side = served.side;
    let tool_stream = || {
        side.tool_stream()
            .map(wire::Stream::Choices)
            .or_else(|| side.tool_events().map(wire::Stream::Events))
    };
    let shape = tool
        .and_then(|_| tool_stream())
        .unwrap_or_else(|| side.stream());
    Framing::new(shape, id, unix_now(), model, req, cfg.prefix_cache, tool)
}

/// The function the answer calls: with `tool-calls`, a request offering a tool on an API
/// that can call one is answered with a call of it, streamed or whole — unless the request
/// ends with a tool result, which the model answers with text (a tool round trip ends).
fn tool_of<'r>(cfg: &SimConfig, served: Served, req: &'r GenRequest) -> Option<&'r str> {
    let side = served.side;
    let can = side.tool_stream().is_some() || side.tool_events().is_some();
    (cfg.tool_calls && can && !req.tool_results.last)
        .then_some(req.tool.as_deref())
        .flatten()
}

async fn generate(
    app: Arc<AppState>,
    conn: ConnTag,
    (served, trace, told): (Served, Option<TraceContext>, Option<i64>),
    body: Bytes,
) -> Response {
    if conn.closing() {
        // Pipelined behind the stream that closes this connection: llama-server never reads
        // it. The answer waits for the shutdown, after which writing it fails, so the client
        // sees the connection end instead.
        conn.closed().await;
        let body = wire::error_body(503, "ServiceUnavailableError", "connection closed", None);
        return json_response(StatusCode::SERVICE_UNAVAILABLE, body, None);
    }
    let arrival = Instant::now();
    let mut req = match served.side.parse(&body, app.prefix.is_some()) {
        Ok(r) => r,
        Err(e) => return bad_request(&e.message, e.param),
    };
    let conversation = match stored(&app, served, &mut req) {
        Ok(c) => c,
        Err((code, body)) => return json_response(code, body, None),
    };
    let cfg = &app.config;
    let Some(cost) = cfg.cost_of(req.model.as_deref()) else {
        return unknown_model(req.model.as_deref().unwrap_or_default());
    };
    // The name answers carry: the adapter's own, as vLLM answers for a LoRA module.
    let model = req.model.as_deref().unwrap_or(&cfg.model);
    let max_tokens = match max_tokens(cfg, &req) {
        Ok(n) => n,
        Err(e) => return bad_request(&e.message, e.param),
    };
    let id = app.next_id.fetch_add(1, Ordering::Relaxed);
    let (fault, output_len, reasoning) = lengths(cfg, id, &req, max_tokens);
    let tool = tool_of(cfg, served, &req);
    let lens = (output_len, reasoning, max_tokens);
    let (script, output_len) = qa::scripted(cfg, (&req, &body), tool.is_some(), lens);
    if let Some((status, kind)) = fault.status() {
        trace_rejected(&app, id, served, &req, arrival, max_tokens, fault);
        let body = wire::error_body(status, kind, "injected fault (infermeter sim)", None);
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return json_response(code, body, Some(id));
    }
    let framing = framing(served, &req, (id, tool), model, cfg).with_reasoning(reasoning);
    let (prefix_blocks, store) = prefix_and_store(&app, &req, conversation, (id, tool));
    // Room for every chunk plus the cut marker: the scheduler's try_send never meets a full
    // channel, and a slow client only grows its own queue.
    let (tx, rx) = mpsc::channel::<Chunk>(output_len as usize + 2);
    let seq = NewSeq {
        id,
        api: served.api,
        arrival,
        prompt_tokens: req.prompt_tokens,
        output_len,
        max_tokens,
        fault,
        framing,
        prefix_blocks,
        cache_prompt: req.cache_prompt,
        priority: told.unwrap_or(req.priority),
        cost,
        tx,
        trace,
        store,
        script,
    };
    if app.intake.send(seq).is_err() {
        return shutting_down(id);
    }
    if req.stream {
        stream_response(rx, id, conn)
    } else {
        let info = Collected {
            id,
            served,
            model,
            prompt_tokens: req.prompt_tokens,
            max_tokens,
            reasoning,
            malformed: fault == Fault::MalformedSse,
            usage_details: cfg.prefix_cache,
            pooled: (req.inputs, cfg.embedding_dim),
            tool,
        };
        collect_response(rx, info).await
    }
}

/// The 503 a request gets once the scheduler has stopped taking requests.
fn shutting_down(id: u64) -> Response {
    let body = wire::error_body(
        503,
        "ServiceUnavailableError",
        "server is shutting down",
        None,
    );
    json_response(StatusCode::SERVICE_UNAVAILABLE, body, Some(id))
}

/// The Responses API's stored conversation, before the length checks that count it, and the
/// tool results a continuation sends checked against the stored response's calls (then
/// counted); the 404 or 400 to answer when the store refuses.
fn stored(
    app: &AppState,
    served: Served,
    req: &mut GenRequest,
) -> Result<Option<super::store::Context>, (StatusCode, String)> {
    let conversation =
        super::store::asked(&app.store, served.api, req).map_err(|(status, body)| {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            (code, body)
        })?;
    app.metrics.tool_results(req.tool_results);
    Ok(conversation)
}

/// The prompt's prefix-cache blocks (empty without `prefix-cache`; a stored conversation's
/// with its prompt after it) and, for a Responses request with `store`, its response to keep.
fn prefix_and_store(
    app: &AppState,
    req: &GenRequest,
    conversation: Option<super::store::Context>,
    id: (u64, Option<&str>),
) -> (Vec<u64>, Option<super::store::Pending>) {
    match conversation {
        Some(c) => super::store::pending(&app.store, c, id, req.store),
        None if app.prefix.is_some() => (
            tokens::block_hashes(&req.prompt_ids, app.config.prefix_cache_block),
            None,
        ),
        None => (Vec::new(), None),
    }
}

/// The request's output cap, or why its lengths are refused (a 400).
fn max_tokens(cfg: &SimConfig, req: &GenRequest) -> Result<u64, wire::BadRequest> {
    let refuse = |message: String, param: &'static str| wire::BadRequest {
        message,
        param: Some(param),
    };
    let max_tokens = req.max_tokens.unwrap_or(cfg.default_max_tokens);
    if max_tokens == 0 {
        return Err(refuse("max_tokens must be at least 1".into(), "max_tokens"));
    }
    if req.min_tokens > max_tokens {
        return Err(refuse(
            "min_tokens must not exceed max_tokens".into(),
            "min_tokens",
        ));
    }
    if req.prompt_tokens.saturating_add(max_tokens) > cfg.kv_capacity {
        let msg = format!(
            "this model's maximum context length is {} tokens; the request has {} prompt tokens and asks for {max_tokens} more",
            cfg.kv_capacity, req.prompt_tokens
        );
        return Err(refuse(msg, "max_tokens"));
    }
    Ok(max_tokens)
}

/// vLLM's answer to a request naming a model it does not serve: 404, `NotFoundError`.
fn unknown_model(name: &str) -> Response {
    // Bounded: the name is the client's, echoed back.
    let shown: String = name.chars().take(256).collect();
    let body = wire::error_body(
        404,
        "NotFoundError",
        &format!("The model `{shown}` does not exist."),
        Some("model"),
    );
    json_response(StatusCode::NOT_FOUND, body, None)
}

/// The trace's record of a request an error-status fault answered before any token.
fn trace_rejected(
    app: &AppState,
    id: u64,
    served: Served,
    req: &wire::GenRequest,
    arrival: Instant,
    max_tokens: u64,
    fault: Fault,
) {
    let Some(trace) = &app.trace else {
        return;
    };
    let us = |t: Instant| t.saturating_duration_since(app.epoch).as_micros() as u64;
    let _ = trace.send(TraceRecord {
        id,
        endpoint: served.api,
        stream: req.stream,
        arrival_us: us(arrival),
        admitted_us: None,
        first_token_us: None,
        finished_us: us(Instant::now()),
        token_us: Vec::new(),
        batch_sizes: Vec::new(),
        prompt_tokens: req.prompt_tokens,
        cached_tokens: 0,
        completion_tokens: 0,
        max_tokens,
        fault,
        outcome: Outcome::Rejected,
        trace: None,
    });
}

fn stream_response(rx: mpsc::Receiver<Chunk>, id: u64, conn: ConnTag) -> Response {
    let stream = futures_util::stream::unfold((rx, conn), |(mut rx, conn)| async move {
        match rx.recv().await {
            Some(Chunk::Token(bytes)) => Some((Ok(bytes), (rx, conn))),
            Some(Chunk::Cut) => Some((
                Err(std::io::Error::other("injected stream cut")),
                (rx, conn),
            )),
            // The scheduler is done with the sequence: the body ends here.
            Some(Chunk::Done(_)) | None => {
                conn.close_after_response();
                None
            }
        }
    });
    let mut resp = Response::new(Body::from_stream(stream));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(SIM_ID_HEADER, HeaderValue::from(id));
    resp
}

struct Collected<'a> {
    id: u64,
    served: Served,
    model: &'a str,
    prompt_tokens: u64,
    max_tokens: u64,
    /// The first output tokens that are reasoning.
    reasoning: u64,
    malformed: bool,
    /// `usage` carries `prompt_tokens_details` (`prefix-cache`).
    usage_details: bool,
    /// A pooling request's inputs, and the simulator's embedding size.
    pooled: (u32, u32),
    /// The function the answer calls (every token is its arguments' text), if it calls one.
    tool: Option<&'a str>,
}

/// The request's fault, output length and reasoning tokens. A model that stops on its own
/// answers after it has reasoned: the drawn length is the answer's, within max_tokens.
fn lengths(cfg: &SimConfig, id: u64, req: &wire::GenRequest, max_tokens: u64) -> (Fault, u64, u64) {
    let (fault, drawn) = faults::draw(cfg, id, req.ignore_eos, max_tokens, req.min_tokens);
    let reasoning = reasoning_tokens(cfg.reasoning_tokens, req).min(max_tokens);
    let output_len = if req.ignore_eos {
        drawn
    } else {
        drawn.saturating_add(reasoning).min(max_tokens)
    };
    (fault, output_len, reasoning)
}

/// The tokens a request reasons for: the configured count, scaled by its reasoning effort
/// (`low` a quarter, `high` twice).
fn reasoning_tokens(configured: u64, req: &wire::GenRequest) -> u64 {
    use crate::protocol::ReasoningEffort;
    match req.reasoning_effort {
        Some(ReasoningEffort::Low) => configured / 4,
        Some(ReasoningEffort::High) => configured.saturating_mul(2),
        Some(ReasoningEffort::Medium) | None => configured,
    }
}

/// Waits for the whole output, then answers with one JSON body carrying `usage` (and
/// llama.cpp's `timings`, last, with `timings`).
async fn collect_response(mut rx: mpsc::Receiver<Chunk>, info: Collected<'_>) -> Response {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut tokens = 0u64;
    let mut cut = false;
    let mut cached = 0;
    let mut timings: Option<Timings> = None;
    while let Some(chunk) = rx.recv().await {
        match chunk {
            Chunk::Token(b) => {
                // A call's arguments are every token, as its stream sends them.
                let into = if tokens < info.reasoning && info.tool.is_none() {
                    &mut reasoning
                } else {
                    &mut text
                };
                into.push_str(std::str::from_utf8(&b).unwrap_or(""));
                tokens += 1;
            }
            Chunk::Cut => {
                cut = true;
                break;
            }
            Chunk::Done(done) => {
                cached = done.cached;
                timings = done.timings;
            }
        }
    }
    let finish = match (tokens == info.max_tokens, info.tool) {
        (true, _) => "length",
        (false, Some(_)) => "tool_calls",
        (false, None) => "stop",
    };
    let mut usage = serde_json::json!({
        "prompt_tokens": info.prompt_tokens,
        "completion_tokens": tokens,
        "total_tokens": info.prompt_tokens + tokens,
    });
    if info.usage_details {
        usage["prompt_tokens_details"] = serde_json::json!({ "cached_tokens": cached });
    }
    let reasoning_tokens = if info.tool.is_some() {
        0
    } else {
        info.reasoning.min(tokens)
    };
    if reasoning_tokens > 0 {
        usage["completion_tokens_details"] =
            serde_json::json!({ "reasoning_tokens": reasoning_tokens });
    }
    let body = info
        .served
        .side
        .whole(&Whole {
            id: info.id,
            created: unix_now(),
            model: info.model,
            text: &text,
            reasoning: &reasoning,
            reasoning_tokens,
            finish,
            usage,
            inputs: info.pooled.0,
            embedding_dim: info.pooled.1,
            tool: info.tool,
        })
        .to_string();
    let body = match timings {
        // Spliced in as text to keep llama.cpp's field order (and `timings` last).
        Some(t) => format!("{},\"timings\":{}}}", &body[..body.len() - 1], t.to_json()),
        None => body,
    };
    if cut || info.malformed {
        return half_body(body, cut, info.id);
    }
    json_response(StatusCode::OK, body, Some(info.id))
}

/// Half of a whole answer's body (the malformed or cut fault): a cut also errors the body so
/// the connection drops mid-response.
fn half_body(body: String, cut: bool, id: u64) -> Response {
    let full = Bytes::from(body.into_bytes());
    let half = full.slice(..full.len() / 2);
    let tail: Result<Bytes, std::io::Error> = if cut {
        Err(std::io::Error::other("injected stream cut"))
    } else {
        Ok(Bytes::new())
    };
    let parts = futures_util::stream::iter([Ok::<_, std::io::Error>(half), tail]);
    let mut resp = Response::new(Body::from_stream(parts));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut()
        .insert(SIM_ID_HEADER, HeaderValue::from(id));
    resp
}

/// Headers on every routed response: `server`, and with `close-after-stream` the keep-alive
/// promise llama-server (cpp-httplib) makes on every response, streamed or not.
pub(super) fn common_headers(resp: &mut Response, close_after_stream: bool) {
    let h = resp.headers_mut();
    h.insert(header::SERVER, HeaderValue::from_static(SERVER));
    if close_after_stream {
        h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
        h.insert(
            HeaderName::from_static("keep-alive"),
            HeaderValue::from_static("timeout=5, max=100"),
        );
    }
}

/// The `server` header of every response, for provenance (real servers send theirs:
/// `llama.cpp`, `uvicorn`).
const SERVER: &str = concat!("infermeter-sim/", env!("CARGO_PKG_VERSION"));
