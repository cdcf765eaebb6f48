//! `otlp-receive "ADDR"`: an OTLP/HTTP receiver (`POST /v1/traces`, protobuf) that keeps the
//! server's request spans (vLLM's `llm_request`: queue, prefill, decode, TTFT and E2E times as
//! `gen_ai.latency.*` attributes) of this run's requests, by trace id.
//!
//! It faces the network, so it trusts nothing: a body past [`MAX_BODY`] is refused (413)
//! before it is read whole — at the headers, unread, when its `Content-Length` says so (a
//! sender announcing 10 GiB and sending nothing must not hold a request open) — one that is
//! not OTLP protobuf is refused (400), spans of traces
//! this run did not start are counted and dropped, a span seen twice is kept once, and at
//! most [`MAX_SPANS`] are kept (the rest counted as dropped): memory stays flat however much
//! is sent. At most [`MAX_DECODING`] bodies are decoded at once; past that a sender is told to
//! retry (503).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use prost::Message;
use tokio::sync::{Semaphore, oneshot};

use super::types::{MAX_BODY, MAX_DECODING, MAX_SPANS, OtlpReceiveError, ReceiveStats, ServerSpan};
use crate::protocol::TraceContext;

#[derive(Default)]
struct Store {
    spans: HashMap<u128, ServerSpan>,
    stats: ReceiveStats,
}

struct Shared {
    run: u64,
    store: Mutex<Store>,
    decoding: Semaphore,
}

/// The running receiver.
pub struct OtlpReceiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl OtlpReceiver {
    /// Listens on `listen` for the spans of the run whose trace ids start with `run`.
    pub async fn start(listen: &str, run: u64) -> Result<OtlpReceiver, OtlpReceiveError> {
        let err = |source| OtlpReceiveError {
            addr: listen.to_string(),
            source,
        };
        let listener = tokio::net::TcpListener::bind(listen).await.map_err(err)?;
        let addr = listener.local_addr().map_err(err)?;
        let shared = Arc::new(Shared {
            run,
            store: Mutex::new(Store::default()),
            decoding: Semaphore::new(MAX_DECODING),
        });
        let app = axum::Router::new()
            .route("/v1/traces", post(traces))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(OtlpReceiver {
            addr,
            shared,
            stop,
            task,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it saw so far.
    pub fn stats(&self) -> ReceiveStats {
        self.shared
            .store
            .lock()
            .map(|s| s.stats)
            .unwrap_or_default()
    }

    /// Waits until `expected` spans are kept, or `wait` has passed.
    pub async fn wait_for(&self, expected: u64, wait: Duration) {
        let until = tokio::time::Instant::now() + wait;
        while self.stats().kept < expected && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops listening; the spans kept, by trace id, and what it saw.
    pub async fn finish(self) -> (HashMap<u128, ServerSpan>, ReceiveStats) {
        let _ = self.stop.send(());
        // A sender holding a connection open must not hold the run: the task is cut after a
        // moment.
        let mut task = self.task;
        if tokio::time::timeout(Duration::from_secs(1), &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
        let store = self
            .shared
            .store
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        (store.spans, store.stats)
    }
}

fn refuse(shared: &Shared, status: StatusCode, why: &'static str) -> Response {
    if let Ok(mut s) = shared.store.lock() {
        s.stats.refused += 1;
    }
    (status, why).into_response()
}

/// Whether `headers` announce a body longer than [`MAX_BODY`] (a `Content-Length` that is
/// not a number is hyper's to refuse before the handler runs).
fn announced_too_large(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > MAX_BODY as u64)
}

async fn traces(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Body) -> Response {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().starts_with("application/x-protobuf"));
    if !protobuf {
        return refuse(
            &shared,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "only application/x-protobuf is accepted",
        );
    }
    // Refused at the headers, the body unread: the answer goes out at once, and the
    // connection is closed rather than drained.
    if announced_too_large(&headers) {
        return refuse(&shared, StatusCode::PAYLOAD_TOO_LARGE, "body too large");
    }
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        // Past `MAX_BODY` as it came (chunked, or longer than announced), or cut off: refused
        // before it was read whole.
        return refuse(&shared, StatusCode::PAYLOAD_TOO_LARGE, "body too large");
    };
    let Ok(_permit) = shared.decoding.try_acquire() else {
        return refuse(
            &shared,
            StatusCode::SERVICE_UNAVAILABLE,
            "busy, retry later",
        );
    };
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return refuse(&shared, StatusCode::BAD_REQUEST, "not an OTLP trace export");
    };
    let rejected = keep(&shared, &request);
    let response = ExportTraceServiceResponse {
        partial_success: (rejected > 0).then(|| ExportTracePartialSuccess {
            rejected_spans: rejected as i64,
            error_message: "spans of unknown traces, duplicates, or past the cap".into(),
        }),
    };
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        response.encode_to_vec(),
    )
        .into_response()
}

/// Keeps the request spans of `request`; how many spans it dropped.
fn keep(shared: &Shared, request: &ExportTraceServiceRequest) -> u64 {
    let Ok(mut store) = shared.store.lock() else {
        return 0;
    };
    let store = &mut *store;
    store.stats.batches += 1;
    let mut dropped = 0;
    let spans = request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| &s.spans);
    for span in spans {
        store.stats.spans += 1;
        let known = TraceContext::from_bytes(&span.trace_id, &span.span_id)
            .filter(|t| TraceContext::request_of(t.trace_id, shared.run).is_some());
        let Some(trace) = known else {
            store.stats.unknown += 1;
            dropped += 1;
            continue;
        };
        let Some(timings) = timings(&span.attributes) else {
            store.stats.other += 1;
            continue;
        };
        if store.spans.contains_key(&trace.trace_id) {
            store.stats.duplicates += 1;
            dropped += 1;
        } else if store.spans.len() >= MAX_SPANS {
            store.stats.dropped += 1;
            dropped += 1;
        } else {
            store.spans.insert(trace.trace_id, timings);
            store.stats.kept += 1;
        }
    }
    dropped
}

/// A number attribute's value: a finite, non-negative double or integer.
fn seconds(v: &Option<AnyValue>) -> Option<f64> {
    let s = match v.as_ref()?.value.as_ref()? {
        Value::DoubleValue(d) => *d,
        Value::IntValue(i) => *i as f64,
        _ => return None,
    };
    (s.is_finite() && s >= 0.0).then_some(s)
}

/// The request timings a span carries; `None` when it has none (not a request span).
fn timings(attributes: &[KeyValue]) -> Option<ServerSpan> {
    let mut t = ServerSpan::default();
    for kv in attributes {
        let slot = match kv.key.as_str() {
            "gen_ai.latency.time_in_queue" => &mut t.queue_s,
            "gen_ai.latency.time_in_model_prefill" => &mut t.prefill_s,
            "gen_ai.latency.time_in_model_decode" => &mut t.decode_s,
            "gen_ai.latency.time_to_first_token" => &mut t.ttft_s,
            "gen_ai.latency.e2e" => &mut t.e2e_s,
            _ => continue,
        };
        *slot = seconds(&kv.value);
    }
    (t != ServerSpan::default()).then_some(t)
}
