//! OpenTelemetry traces: exporting a span per request (`otlp`), and receiving the server's
//! spans to join them to the requests by trace id (`otlp-receive`). See `docs/telemetry.md`.
//!
//! The exporter and the receiver need the `otlp` feature (on by default). Without it both
//! refuse to start, and the run goes on with a telemetry warning, as when the collector's URL
//! is wrong: trace context (`traceparent`) is still sent.

#[cfg(feature = "otlp")]
mod export;
mod join;
#[cfg(feature = "otlp")]
mod receive;
mod types;

#[cfg(feature = "otlp")]
pub use export::OtlpExporter;
pub use join::{ClientTimes, join, stats_note};
#[cfg(feature = "otlp")]
pub use receive::OtlpReceiver;
pub use types::{
    MAX_BODY, MAX_DECODING, MAX_SPANS, OtlpExportError, OtlpReceiveError, ReceiveStats, ServerSpan,
    SpanFacts, SpanOf,
};
#[cfg(not(feature = "otlp"))]
pub use unbuilt::{OtlpExporter, OtlpReceiver};

/// The exporter and receiver of a build without the `otlp` feature: neither can start, so
/// neither can exist.
#[cfg(not(feature = "otlp"))]
mod unbuilt {
    use std::collections::HashMap;
    use std::net::SocketAddr;
    use std::time::{Duration, SystemTime};

    use super::{OtlpExportError, OtlpReceiveError, ReceiveStats, ServerSpan, SpanFacts, SpanOf};
    use crate::metrics::RequestRecord;
    use crate::telemetry::OtlpExport;

    const NOT_BUILT: &str = "this build of infermeter has no OTLP support (built without the \
                             `otlp` feature)";

    pub enum OtlpExporter {}

    impl OtlpExporter {
        pub fn start(config: &OtlpExport, _: SpanFacts) -> Result<OtlpExporter, OtlpExportError> {
            Err(OtlpExportError {
                url: crate::redact::secrets(&config.traces_url()).into_owned(),
                reason: NOT_BUILT.into(),
            })
        }
        pub fn record(&self, _: SpanOf<'_>, _: &RequestRecord, _: SystemTime) {
            match *self {}
        }
        pub fn finish(self) -> Option<String> {
            match self {}
        }
    }

    pub enum OtlpReceiver {}

    impl OtlpReceiver {
        pub async fn start(listen: &str, _: u64) -> Result<OtlpReceiver, OtlpReceiveError> {
            Err(OtlpReceiveError {
                addr: listen.to_string(),
                source: std::io::Error::other(NOT_BUILT),
            })
        }
        pub fn addr(&self) -> SocketAddr {
            match *self {}
        }
        pub fn stats(&self) -> ReceiveStats {
            match *self {}
        }
        pub async fn wait_for(&self, _: u64, _: Duration) {
            match *self {}
        }
        pub async fn finish(self) -> (HashMap<u128, ServerSpan>, ReceiveStats) {
            match self {}
        }
    }
}
