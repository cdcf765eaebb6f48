//! Telemetry sources sampled during a run: local GPUs through NVML, and Prometheus endpoints
//! (vLLM, SGLang, llama.cpp, dcgm-exporter). Produces a [`TelemetryReport`] with bounded series,
//! per-stage summaries (energy, throttling, queue depth, KV usage) and warnings; also the
//! warm-up stability rule and the telemetry SLA metric values. See `docs/telemetry.md`.

mod config;
mod counter;
mod error;
pub mod expo;
mod gpu;
mod kind;
mod latency;
mod normalize;
mod nvml;
pub mod otlp;
mod prometheus;
mod record;
mod report;
mod sampler;
mod source;
mod spec;
mod stability;

pub use config::{
    MetricsUrl, OtlpExport, OtlpReceive, SourceConfig, TelemetryConfig, default_wait,
};
pub use error::{ScrapeError, TelemetryError};
pub use expo::LineError;
pub use gpu::{
    DeviceError, FakeGpu, GpuDevice, GpuReading, THROTTLE_CLOCK_RATIO, throttle_reason_names,
};
pub use kind::{PrometheusKind, detect_kind};
pub use latency::{LatencyHistograms, PromHistogram, ServerLatency};
pub use normalize::{Normalized, ServerReading, normalize};
pub use nvml::{GpuOpenError, NvmlGpu, open_nvml};
pub use record::{BoundedSeries, GpuFrame, GpuRecorder, MAX_POINTS, ServerRecorder};
pub use report::{
    GpuPoint, GpuSeries, GpuStageSummary, ServerPoint, ServerSeries, ServerStageSummary,
    StageTelemetry, TelemetryReport, telemetry_metric, tokens_per_joule,
};
pub use sampler::{GpuOpener, Telemetry, TelemetryHandle};
pub use spec::{MAX_DRAFT_POSITIONS, SpecReading, SpecSource, SpecStageSummary};
pub use stability::{
    MIN_TTFT_SAMPLES, StabilityBasis, StabilityRule, StabilityVerdict, WarmupUntil, assess_gpu,
    assess_stability, assess_ttft,
};
