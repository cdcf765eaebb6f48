//! `otlp "URL"`: a span per finished request (each turn of a session is one), built from its
//! record on the stage's collector thread (never per chunk, never on a request's task) and
//! handed to the OpenTelemetry SDK's batch processor, whose own thread exports batches over
//! OTLP/HTTP (protobuf). Its queue is bounded: when the collector is slow or dead, spans are
//! dropped, never waited for, and the first failed export is said once as the run's warning.
//!
//! Attributes follow the OpenTelemetry GenAI semantic conventions (`gen_ai.operation.name`,
//! `gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`,
//! `gen_ai.response.finish_reasons`, `server.address`, `server.port`, `error.type`), plus the
//! client's measurements under `infermeter.*` (see `docs/telemetry.md`). No header, no key, no
//! prompt or answer text: nothing a request carried is copied into a span but its counts.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SpanData, SpanEvents, SpanExporter, SpanLinks,
    SpanProcessor,
};

use super::types::{OtlpExportError, SpanFacts, SpanOf};
use crate::metrics::RequestRecord;
use crate::telemetry::OtlpExport;

/// How long one export may take before it counts as failed.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
/// Spans waiting for export at most; past it new ones are dropped (memory stays flat).
const MAX_QUEUE: usize = 16_384;
/// How long the run's end waits for the last batch.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(4);

impl SpanFacts {
    /// The host and port request `rec` was sent to.
    fn server(&self, rec: &RequestRecord) -> (&str, u16) {
        let i = usize::from(rec.url.unwrap_or(0));
        self.servers
            .get(i)
            .or(self.servers.first())
            .map_or(("", 0), |(h, p)| (h.as_str(), *p))
    }
}

/// The run's span exporter.
pub struct OtlpExporter {
    processor: BatchSpanProcessor,
    facts: SpanFacts,
    scope: InstrumentationScope,
    failed: Arc<Mutex<Option<String>>>,
    url: String,
}

/// The OTLP exporter, noting its first failure.
#[derive(Debug)]
struct Noting {
    inner: opentelemetry_otlp::SpanExporter,
    failed: Arc<Mutex<Option<String>>>,
}

impl SpanExporter for Noting {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let r = self.inner.export(batch).await;
        if let Err(e) = &r
            && let Ok(mut f) = self.failed.lock()
            && f.is_none()
        {
            *f = Some(e.to_string());
        }
        r
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl OtlpExporter {
    /// Builds the exporter (nothing is sent until a span is).
    pub fn start(config: &OtlpExport, facts: SpanFacts) -> Result<OtlpExporter, OtlpExportError> {
        // The blocking HTTP client uses rustls, whose provider must be chosen first.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let url = config.traces_url();
        let shown = crate::redact::secrets(&url).into_owned();
        let inner = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| OtlpExportError {
                url: shown.clone(),
                reason: e.to_string(),
            })?;
        let failed = Arc::new(Mutex::new(None));
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(MAX_QUEUE)
            .with_scheduled_delay(Duration::from_millis(500))
            .build();
        let mut processor = BatchSpanProcessor::new(
            Noting {
                inner,
                failed: failed.clone(),
            },
            batch,
        );
        processor.set_resource(
            &Resource::builder_empty()
                .with_service_name("infermeter")
                .with_attributes([KeyValue::new("service.version", env!("CARGO_PKG_VERSION"))])
                .build(),
        );
        Ok(OtlpExporter {
            processor,
            facts,
            scope: InstrumentationScope::builder("infermeter")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
            failed,
            url: shown,
        })
    }

    /// Queues the span of one finished request of stage `stage` (whose clock started at
    /// `t0`, wall time); a request without trace context has none. `model`: the model or
    /// adapter the request named where its stage splits them (else the target's).
    pub fn record(&self, span: SpanOf<'_>, rec: &RequestRecord, t0: SystemTime) {
        let Some(trace) = rec.trace else {
            return;
        };
        let at = |ns: u64| t0 + Duration::from_nanos(ns);
        let model = span.model.unwrap_or(&self.facts.model);
        let (attributes, status) = self.attributes(&span, model, rec);
        let name = format!("{} {model}", self.facts.operation);
        self.processor.on_end(SpanData {
            span_context: SpanContext::new(
                TraceId::from_bytes(trace.trace_id.to_be_bytes()),
                SpanId::from_bytes(trace.span_id.to_be_bytes()),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Client,
            name: Cow::Owned(name),
            start_time: at(rec.sent_ns.max(rec.scheduled_ns)),
            end_time: at(rec.done_ns),
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.scope.clone(),
        });
    }

    /// A request's span attributes (GenAI conventions, then ours) and its status.
    fn attributes(
        &self,
        span: &SpanOf<'_>,
        model: &str,
        rec: &RequestRecord,
    ) -> (Vec<KeyValue>, Status) {
        let (stage, sessions) = (span.stage, span.sessions);
        let f = &self.facts;
        let (host, port) = f.server(rec);
        let mut attributes = Vec::with_capacity(20);
        attributes.extend([
            KeyValue::new("gen_ai.operation.name", f.operation),
            KeyValue::new("gen_ai.request.model", model.to_string()),
            KeyValue::new("gen_ai.usage.input_tokens", i64::from(rec.input_tokens)),
            KeyValue::new("gen_ai.usage.output_tokens", i64::from(rec.output_tokens)),
            KeyValue::new(
                "gen_ai.request.max_tokens",
                i64::from(rec.planned_output_tokens),
            ),
            KeyValue::new("server.address", host.to_string()),
            KeyValue::new("server.port", i64::from(port)),
            KeyValue::new("infermeter.stage", stage.to_string()),
            KeyValue::new("infermeter.request.index", rec.index as i64),
            KeyValue::new("infermeter.e2e_ms", rec.e2e_ns() as f64 / 1e6),
            KeyValue::new("infermeter.send_lag_ms", rec.send_lag_ns() as f64 / 1e6),
        ]);
        if sessions {
            let id = format!("{stage}/{}", rec.index);
            attributes.push(KeyValue::new("gen_ai.conversation.id", id));
            attributes.push(KeyValue::new(
                "infermeter.session.turn",
                i64::from(rec.turn),
            ));
        }
        if let Some(ns) = rec.ttft_ns() {
            attributes.push(KeyValue::new("infermeter.ttft_ms", ns as f64 / 1e6));
        }
        if rec.itl_us.len() >= 2 {
            let mean = rec.itl_us.iter().map(|&u| f64::from(u)).sum::<f64>()
                / rec.itl_us.len() as f64
                / 1e3;
            attributes.push(KeyValue::new("infermeter.itl_mean_ms", mean));
        }
        if let Some(c) = rec.cached_tokens {
            attributes.push(KeyValue::new(
                "gen_ai.usage.cache_read.input_tokens",
                i64::from(c),
            ));
        }
        if let Some(r) = rec.finish_reason {
            let reason = serde_json::to_value(r)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            attributes.push(KeyValue::new(
                "gen_ai.response.finish_reasons",
                opentelemetry::Value::Array(opentelemetry::Array::String(vec![reason.into()])),
            ));
        }
        let status = match rec.error {
            Some(kind) => {
                attributes.push(KeyValue::new("error.type", kind.key()));
                Status::Error {
                    description: Cow::Owned(kind.key()),
                }
            }
            None => Status::Unset,
        };
        (attributes, status)
    }

    /// Exports what is queued (waiting a few seconds at most) and stops; the first export
    /// that failed, as a warning, when one did. Blocks: call it off the runtime's workers.
    pub fn finish(self) -> Option<String> {
        let _ = self.processor.shutdown_with_timeout(SHUTDOWN_WAIT);
        let failed = self.failed.lock().ok().and_then(|mut f| f.take());
        failed.map(|why| {
            let why = crate::redact::secrets(&why).into_owned();
            format!(
                "OTLP export to {} failed ({why}); spans were dropped, the run went on",
                self.url
            )
        })
    }
}
