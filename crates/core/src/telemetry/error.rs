//! Why telemetry could not start, and why a scrape got nothing: the errors the configuration,
//! the sampler and the Prometheus source share.

use super::nvml::GpuOpenError;

/// Why telemetry could not start. Each message names the source and the fix.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error(
        "telemetry source `nvml` is required but unavailable: {reason}; run on a machine with an \
         NVIDIA GPU and driver (libnvidia-ml.so.1), or make the source optional (`nvml required=#false`)"
    )]
    NvmlUnavailable { reason: GpuOpenError },
    #[error(
        "telemetry source `prometheus \"{url}\"` is required but unreachable: {reason}; start the \
         server with its metrics endpoint enabled or fix the URL, or make the source optional"
    )]
    PrometheusUnavailable { url: String, reason: ScrapeError },
    #[error("invalid telemetry configuration: {0}")]
    Invalid(String),
    #[error("failed to start the telemetry sampler")]
    Spawn(#[source] std::io::Error),
    #[error("the telemetry sampler failed: {0}")]
    Probe(ScrapeError),
    #[error("the telemetry sampler failed: {0}")]
    Died(String),
}

/// Why a scrape (or the start-up probe) got no exposition. The URL is left out: the caller
/// names the source (masked).
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("failed to build the HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("failed to start the probe's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("connection refused or failed ({0})")]
    Connect(reqwest::Error),
    #[error("timed out")]
    Timeout,
    #[error("{0}")]
    Request(reqwest::Error),
    #[error("HTTP {0}")]
    Status(reqwest::StatusCode),
    #[error("the page is larger than {} MiB (left unread)", .0 >> 20)]
    TooLarge(usize),
    #[error("failed to read the body ({0})")]
    Body(reqwest::Error),
    #[error("not probed")]
    NotProbed,
}
