//! The OTLP receiver (`otlp-receive`) over real HTTP on loopback, fed what the network can
//! send: real OTLP protobuf, a body past the bound, garbage, the wrong media type, spans of
//! other traces, duplicates and a flood. It refuses or ignores each, never panics, and keeps
//! what it should.

use std::time::Duration;

use infermeter_core::protocol::TraceContext;
use infermeter_core::telemetry::otlp::{MAX_BODY, OtlpReceiver, ServerSpan};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};
use prost::Message;

const RUN: u64 = 0x1234_5678_9abc_def0;

fn kv(key: &str, secs: f64) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue {
            value: Some(Value::DoubleValue(secs)),
        }),
        ..KeyValue::default()
    }
}

/// vLLM's `llm_request` span of request `index` of stage 0.
fn span(trace: TraceContext, queue: f64) -> Span {
    Span {
        trace_id: trace.trace_id.to_be_bytes().to_vec(),
        span_id: 7u64.to_be_bytes().to_vec(),
        parent_span_id: trace.span_id.to_be_bytes().to_vec(),
        name: "llm_request".into(),
        attributes: vec![
            kv("gen_ai.latency.time_in_queue", queue),
            kv("gen_ai.latency.time_in_model_prefill", 0.020),
            kv("gen_ai.latency.time_in_model_decode", 0.100),
            kv("gen_ai.latency.time_to_first_token", 0.025 + queue),
            kv("gen_ai.latency.e2e", 0.125 + queue),
        ],
        ..Span::default()
    }
}

fn body(spans: Vec<Span>) -> Vec<u8> {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            scope_spans: vec![ScopeSpans {
                spans,
                ..ScopeSpans::default()
            }],
            ..ResourceSpans::default()
        }],
    }
    .encode_to_vec()
}

async fn post(url: &str, content_type: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    infermeter_core::client::install_tls_provider();
    let r = reqwest::Client::new()
        .post(url)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("the receiver answers");
    let status = r.status().as_u16();
    (
        status,
        r.bytes().await.map(|b| b.to_vec()).unwrap_or_default(),
    )
}

fn ours(index: u64) -> TraceContext {
    TraceContext::for_request(RUN, 0, 0, index)
}

#[tokio::test]
async fn the_receiver_keeps_this_runs_spans_and_refuses_the_rest() {
    let rx = OtlpReceiver::start("127.0.0.1:0", RUN).await.unwrap();
    let url = format!("http://{}/v1/traces", rx.addr());
    let proto = "application/x-protobuf";

    // Two requests' spans, one sent twice, one of another run's trace.
    let stranger = TraceContext::for_request(RUN ^ 1, 0, 0, 1);
    let batch = body(vec![
        span(ours(1), 0.5),
        span(ours(2), 0.25),
        span(ours(1), 9.0),
        span(stranger, 1.0),
    ]);
    let (status, answer) = post(&url, proto, batch).await;
    assert_eq!(status, 200);
    let answer = ExportTraceServiceResponse::decode(&answer[..]).expect("an OTLP response");
    assert_eq!(
        answer.partial_success.map(|p| p.rejected_spans),
        Some(2),
        "the duplicate and the stranger are rejected"
    );

    // Garbage, a truncated body, the wrong media type, JSON, a body past the bound.
    let good = body(vec![span(ours(3), 0.1)]);
    let (status, _) = post(&url, proto, b"\xff\xff\xff garbage".to_vec()).await;
    assert_eq!(status, 400);
    let (status, _) = post(&url, proto, good[..good.len() - 3].to_vec()).await;
    assert_eq!(status, 400);
    let (status, _) = post(&url, "text/html", good.clone()).await;
    assert_eq!(status, 415);
    let (status, _) = post(&url, "application/json", b"{}".to_vec()).await;
    assert_eq!(status, 415);
    let (status, _) = post(&url, proto, vec![0; MAX_BODY + 1]).await;
    assert_eq!(status, 413);

    // A span with no request timings (another span of the trace), and junk values.
    let mut plain = span(ours(4), 0.1);
    plain.attributes.clear();
    let mut junk = span(ours(5), f64::NAN);
    junk.attributes.truncate(1);
    let (status, _) = post(&url, proto, body(vec![plain, junk])).await;
    assert_eq!(status, 200);

    let stats = rx.stats();
    assert_eq!(stats.kept, 2, "{stats:?}");
    assert_eq!(stats.duplicates, 1, "{stats:?}");
    assert_eq!(stats.unknown, 1, "{stats:?}");
    assert_eq!(stats.other, 2, "{stats:?}");
    assert_eq!(stats.refused, 5, "{stats:?}");
    let (spans, _) = rx.finish().await;
    assert_eq!(
        spans
            .get(&ours(1).trace_id)
            .and_then(|s: &ServerSpan| s.queue_s),
        Some(0.5),
        "the first of two copies is kept"
    );
    assert_eq!(spans.len(), 2);
}

#[tokio::test]
async fn a_flood_keeps_memory_bounded_and_the_receiver_answering() {
    let rx = OtlpReceiver::start("127.0.0.1:0", RUN).await.unwrap();
    let url = format!("http://{}/v1/traces", rx.addr());
    // 48 batches of 5,000 distinct spans of this run, eight senders at a time: the cap
    // (200,000) holds, the rest is counted as dropped, nothing panics; busy answers (503)
    // are allowed.
    let mut tasks = Vec::new();
    for sender in 0..8u64 {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            for b in 0..6u64 {
                let first = (sender * 6 + b) * 5_000;
                let spans = (first..first + 5_000)
                    .map(|i| span(ours(i), 0.01))
                    .collect();
                statuses.push(post(&url, "application/x-protobuf", body(spans)).await.0);
            }
            statuses
        }));
    }
    for t in tasks {
        for status in t.await.unwrap() {
            assert!(status == 200 || status == 503, "{status}");
        }
    }
    // Still answering after the flood.
    let (status, _) = post(&url, "application/x-protobuf", body(vec![])).await;
    assert_eq!(status, 200);
    let stats = rx.stats();
    assert!(stats.kept <= infermeter_core::telemetry::otlp::MAX_SPANS as u64);
    assert_eq!(stats.kept + stats.dropped + stats.duplicates, stats.spans);
    let _ = tokio::time::timeout(Duration::from_secs(5), rx.finish()).await;
}
