//! OpenTelemetry traces: exporting a span per request (`otlp`), and receiving the server's
//! spans to join them to the requests by trace id (`otlp-receive`). See `docs/telemetry.md`.

mod export;
mod join;
mod receive;

pub use export::{OtlpExportError, OtlpExporter, SpanFacts, SpanOf, operation_name};
pub use join::{ClientTimes, join, stats_note};
pub use receive::{
    MAX_BODY, MAX_DECODING, MAX_SPANS, OtlpReceiveError, OtlpReceiver, ReceiveStats, ServerSpan,
};
