//! `otlp-traces-endpoint`: the simulator's span per finished request that came with a
//! `traceparent`, as vLLM's `--otlp-traces-endpoint` exports it (a `llm_request` span, kind
//! server, child of the client's span, with `gen_ai.latency.*` attributes in seconds), posted
//! as OTLP/HTTP protobuf in batches by a task of its own. It sits in front of the ground-truth
//! trace: every record is passed on to the file writer or receiver behind it, unchanged.
//!
//! Exporting is best effort, as a server's is: a batch that cannot be posted is dropped (said
//! once in the log), and at most [`MAX_PENDING`] spans wait.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, span::SpanKind};
use prost::Message;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::trace::{Outcome, TraceRecord};

/// Spans per posted batch at most.
const BATCH: usize = 512;
/// Spans waiting to be posted at most; past it they are dropped.
const MAX_PENDING: usize = 8_192;
/// How long a span waits for its batch to fill.
const LINGER: Duration = Duration::from_millis(200);

/// Starts the exporting task; the sender the scheduler writes records to.
pub(crate) fn spawn(
    endpoint: &str,
    model: &str,
    epoch: Instant,
    next: Option<mpsc::UnboundedSender<TraceRecord>>,
) -> mpsc::UnboundedSender<TraceRecord> {
    let (tx, rx) = mpsc::unbounded_channel();
    let base = endpoint.trim_end_matches('/');
    let url = if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    };
    let wall = SystemTime::now()
        .checked_sub(epoch.elapsed())
        .unwrap_or_else(SystemTime::now);
    let epoch_ns = wall
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    tokio::spawn(export(rx, next, url, model.to_string(), epoch_ns));
    tx
}

async fn export(
    mut rx: mpsc::UnboundedReceiver<TraceRecord>,
    next: Option<mpsc::UnboundedSender<TraceRecord>>,
    url: String,
    model: String,
    epoch_ns: u64,
) {
    // reqwest's TLS needs rustls's provider chosen first (the client installs the same).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .ok();
    let mut pending: Vec<Span> = Vec::new();
    let mut warned = false;
    loop {
        let record = if pending.is_empty() {
            rx.recv().await
        } else {
            match tokio::time::timeout(LINGER, rx.recv()).await {
                Ok(r) => r,
                Err(_) => {
                    post(http.as_ref(), &url, &model, &mut pending, &mut warned).await;
                    continue;
                }
            }
        };
        let Some(record) = record else {
            break;
        };
        if let Some(span) = span_of(&record, &model, epoch_ns)
            && pending.len() < MAX_PENDING
        {
            pending.push(span);
        }
        if let Some(n) = &next {
            let _ = n.send(record);
        }
        if pending.len() >= BATCH {
            post(http.as_ref(), &url, &model, &mut pending, &mut warned).await;
        }
    }
    post(http.as_ref(), &url, &model, &mut pending, &mut warned).await;
}

/// Posts what is pending (all of it, in batches); drops it when the endpoint fails.
async fn post(
    http: Option<&reqwest::Client>,
    url: &str,
    model: &str,
    pending: &mut Vec<Span>,
    warned: &mut bool,
) {
    let Some(http) = http else {
        pending.clear();
        return;
    };
    while !pending.is_empty() {
        let n = pending.len().min(BATCH);
        let spans: Vec<Span> = pending.drain(..n).collect();
        let body = request(spans, model).encode_to_vec();
        let sent = http
            .post(url)
            .header("content-type", "application/x-protobuf")
            .body(body)
            .send()
            .await;
        let failed = match sent {
            Ok(r) if r.status().is_success() => None,
            Ok(r) => Some(format!("status {}", r.status())),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = failed
            && !std::mem::replace(warned, true)
        {
            tracing::warn!("OTLP export to {url} failed ({why}); spans are dropped");
        }
    }
}

fn request(spans: Vec<Span>, model: &str) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    kv("service.name", Value::StringValue("infermeter-sim".into())),
                    kv("gen_ai.response.model", Value::StringValue(model.into())),
                ],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "infermeter.sim".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

fn kv(key: &str, value: Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

/// vLLM's span of a completed request; `None` for one without trace context or that did not
/// complete (vLLM traces finished requests only).
fn span_of(r: &TraceRecord, model: &str, epoch_ns: u64) -> Option<Span> {
    let trace = r.trace?;
    if r.outcome != Outcome::Completed {
        return None;
    }
    let s = |us: u64| Value::DoubleValue(us as f64 / 1e6);
    let admitted = r.admitted_us.unwrap_or(r.arrival_us);
    let first = r.first_token_us.unwrap_or(r.finished_us);
    let last = r.token_us.last().copied().unwrap_or(r.finished_us);
    let attributes = vec![
        kv("gen_ai.response.model", Value::StringValue(model.into())),
        kv("gen_ai.request.id", Value::StringValue(r.id.to_string())),
        kv(
            "gen_ai.usage.prompt_tokens",
            Value::IntValue(r.prompt_tokens as i64),
        ),
        kv(
            "gen_ai.usage.completion_tokens",
            Value::IntValue(r.completion_tokens as i64),
        ),
        kv(
            "gen_ai.request.max_tokens",
            Value::IntValue(r.max_tokens as i64),
        ),
        kv(
            "gen_ai.latency.time_in_queue",
            s(admitted.saturating_sub(r.arrival_us)),
        ),
        kv(
            "gen_ai.latency.time_to_first_token",
            s(first.saturating_sub(r.arrival_us)),
        ),
        kv(
            "gen_ai.latency.time_in_model_prefill",
            s(first.saturating_sub(admitted)),
        ),
        kv(
            "gen_ai.latency.time_in_model_decode",
            s(last.saturating_sub(first)),
        ),
        kv(
            "gen_ai.latency.time_in_model_inference",
            s(last.saturating_sub(admitted)),
        ),
        kv(
            "gen_ai.latency.e2e",
            s(r.finished_us.saturating_sub(r.arrival_us)),
        ),
    ];
    // The span's own id: a mix of the parent's and the request's, never zero.
    let own = (trace.span_id.rotate_left(17) ^ r.id.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
    Some(Span {
        trace_id: trace.trace_id.to_be_bytes().to_vec(),
        span_id: own.to_be_bytes().to_vec(),
        parent_span_id: trace.span_id.to_be_bytes().to_vec(),
        name: "llm_request".into(),
        kind: SpanKind::Server as i32,
        start_time_unix_nano: epoch_ns + r.arrival_us * 1_000,
        end_time_unix_nano: epoch_ns + r.finished_us * 1_000,
        attributes,
        ..Span::default()
    })
}
