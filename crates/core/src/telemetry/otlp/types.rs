//! What the OTLP exporter and receiver share with the rest of the run, with or without the
//! `otlp` feature: the facts every span carries, the receiver's bounds and spans, the errors.

/// What every span of the run shares.
#[derive(Debug, Clone, Default)]
pub struct SpanFacts {
    /// The model requests name.
    pub model: String,
    /// The API's GenAI operation name: `chat`, `text_completion`, `embeddings`…
    pub operation: &'static str,
    /// Each target URL's host and port (never its credentials or query), by the URL's index
    /// (a request's `url`; the first when it has none).
    pub servers: Vec<(String, u16)>,
}

/// Where a span's request belongs: its stage, whether the stage runs sessions, and the model
/// its label named.
#[derive(Debug, Clone, Copy)]
pub struct SpanOf<'a> {
    pub stage: &'a str,
    pub sessions: bool,
    pub model: Option<&'a str>,
}

/// Why the exporter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot export OTLP traces to {url}: {reason}")]
pub struct OtlpExportError {
    pub url: String,
    pub reason: String,
}

/// The largest request body read (OTLP exporters batch 512 spans, well under this).
pub const MAX_BODY: usize = 4 << 20;
/// Spans kept per run at most.
pub const MAX_SPANS: usize = 200_000;
/// Bodies decoded at once at most.
pub const MAX_DECODING: usize = 4;

/// What a server's span says of one request, in seconds (vLLM's `gen_ai.latency.*`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerSpan {
    pub queue_s: Option<f64>,
    pub prefill_s: Option<f64>,
    pub decode_s: Option<f64>,
    pub ttft_s: Option<f64>,
    pub e2e_s: Option<f64>,
}

/// What the receiver saw, for the report's notes and the tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReceiveStats {
    /// Export requests accepted.
    pub batches: u64,
    /// Spans received in them.
    pub spans: u64,
    /// Spans kept (this run's, with request timings).
    pub kept: u64,
    /// Spans of traces this run did not start.
    pub unknown: u64,
    /// Spans of this run without request timings (other spans of the server's trace).
    pub other: u64,
    /// Spans of a request already kept.
    pub duplicates: u64,
    /// Spans past [`MAX_SPANS`].
    pub dropped: u64,
    /// Bodies refused: too large, not protobuf, not OTLP, or sent while busy.
    pub refused: u64,
}

/// The receiver could not listen.
#[derive(Debug, thiserror::Error)]
#[error("cannot receive OTLP on {addr}")]
pub struct OtlpReceiveError {
    pub addr: String,
    #[source]
    pub source: std::io::Error,
}
