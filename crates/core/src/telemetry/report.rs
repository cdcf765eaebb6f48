//! The telemetry part of `results.json`: bounded time series per source, per-stage summaries
//! and warnings; plus the derived numbers other modules ask for (tokens per joule, SLA metric
//! values by name).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::gpu::GpuReading;
use super::kind::PrometheusKind;
use super::normalize::ServerReading;
use crate::metrics::TelemetryMetric;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TelemetryReport {
    /// Configured sampling interval in seconds.
    pub interval_s: f64,
    /// One series per GPU per source (NVML, dcgm-exporter).
    pub gpus: Vec<GpuSeries>,
    /// One series per inference-server endpoint.
    pub servers: Vec<ServerSeries>,
    pub stages: Vec<StageTelemetry>,
    /// Unavailable optional sources, failed scrapes, energy-counter resets.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuSeries {
    /// `nvml` or the dcgm-exporter URL.
    pub source: String,
    /// NVML index or dcgm `gpu` label.
    pub device: String,
    pub name: String,
    /// Every `stride`-th sample was kept (1 unless the run was long; see `docs/telemetry.md`).
    pub stride: u64,
    pub points: Vec<GpuPoint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuPoint {
    /// Seconds since telemetry started.
    pub t_s: f64,
    #[serde(flatten)]
    pub reading: GpuReading,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerSeries {
    pub source: String,
    pub kind: Option<PrometheusKind>,
    pub stride: u64,
    pub points: Vec<ServerPoint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerPoint {
    pub t_s: f64,
    #[serde(flatten)]
    pub reading: ServerReading,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageTelemetry {
    pub name: String,
    pub start_s: f64,
    /// `None` when the stage never ended (interrupted run).
    pub end_s: Option<f64>,
    pub gpus: Vec<GpuStageSummary>,
    pub servers: Vec<ServerStageSummary>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GpuStageSummary {
    pub source: String,
    pub device: String,
    pub samples: u64,
    pub temp_mean_c: Option<f64>,
    pub temp_max_c: Option<f64>,
    pub clock_ratio_min: Option<f64>,
    pub clock_ratio_mean: Option<f64>,
    /// Share of samples that were throttled (see `docs/telemetry.md`), 0..=1.
    pub throttled_share: f64,
    /// Limiting throttle reasons seen in any sample.
    pub throttle_reasons: Vec<String>,
    /// Energy-counter increase over the stage, in joules.
    pub energy_j: Option<f64>,
    /// The counter went backwards (driver reset) at least once; those intervals were
    /// estimated from power × time.
    pub energy_counter_resets: u32,
    pub power_mean_w: Option<f64>,
    pub util_mean_pct: Option<f64>,
    pub mem_used_max_mib: Option<f64>,
}

impl GpuStageSummary {
    /// Throttling findings make the stage's latency numbers suspect.
    pub fn throttled(&self) -> bool {
        self.throttled_share > 0.0
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerStageSummary {
    pub source: String,
    pub kind: Option<PrometheusKind>,
    pub samples: u64,
    pub running_mean: Option<f64>,
    pub running_max: Option<f64>,
    pub waiting_mean: Option<f64>,
    pub waiting_max: Option<f64>,
    /// KV-cache usage, 0..=1.
    pub kv_cache_mean: Option<f64>,
    pub kv_cache_max: Option<f64>,
    /// Prefix-cache hit rate over the stage (hit / queried token deltas; else the server's
    /// own gauge averaged), 0..=1.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Server-counted tokens during the stage (counter deltas).
    pub prompt_tokens: Option<f64>,
    pub generation_tokens: Option<f64>,
    /// The stage's distributions from the server's latency histograms (their increase between
    /// the stage's start and end scrapes), where it exports them. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<super::latency::ServerLatency>,
    /// Speculative decoding over the stage, where the server decodes so (see
    /// `docs/telemetry.md`). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<super::spec::SpecStageSummary>,
}

impl TelemetryReport {
    pub fn stage(&self, name: &str) -> Option<&StageTelemetry> {
        self.stages.iter().find(|s| s.name == name)
    }
}

impl StageTelemetry {
    /// GPU summaries of one source only, so a GPU seen by both NVML and dcgm-exporter is not
    /// counted twice: NVML when it has data, else the first source with samples.
    pub fn primary_gpus(&self) -> Vec<&GpuStageSummary> {
        let with_data: Vec<&GpuStageSummary> = self.gpus.iter().filter(|g| g.samples > 0).collect();
        let source = with_data
            .iter()
            .find(|g| g.source == "nvml")
            .or_else(|| with_data.first())
            .map(|g| g.source.clone());
        with_data
            .into_iter()
            .filter(|g| Some(&g.source) == source.as_ref())
            .collect()
    }

    /// The stage's speculative decoding over all its servers: (acceptance rate, mean
    /// acceptance length), pooled from the counters of those that have them, else the mean of
    /// their gauges; each `None` when no server reported it.
    pub fn spec_figures(&self) -> (Option<f64>, Option<f64>) {
        let specs: Vec<&super::spec::SpecStageSummary> = self
            .servers
            .iter()
            .filter_map(|s| s.spec.as_ref())
            .collect();
        let counted: Vec<(f64, f64, f64)> = specs
            .iter()
            .filter(|s| s.acceptance_rate.is_some() && s.acceptance_length.is_some())
            .filter_map(|s| Some((s.drafts?, s.draft_tokens?, s.accepted_tokens?)))
            .collect();
        if !counted.is_empty() {
            let (d, p, a) = counted
                .iter()
                .fold((0.0, 0.0, 0.0), |t, c| (t.0 + c.0, t.1 + c.1, t.2 + c.2));
            return ((p > 0.0).then(|| a / p), (d > 0.0).then(|| 1.0 + a / d));
        }
        let mean = |f: fn(&super::spec::SpecStageSummary) -> Option<f64>| {
            let v: Vec<f64> = specs.iter().filter_map(|s| f(s)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        (mean(|s| s.acceptance_rate), mean(|s| s.acceptance_length))
    }

    /// Total GPU energy of the stage (all primary GPUs), when every one has a counter.
    pub fn energy_j(&self) -> Option<f64> {
        let gpus = self.primary_gpus();
        if gpus.is_empty() {
            return None;
        }
        gpus.iter().map(|g| g.energy_j).sum()
    }
}

/// Output tokens per joule of GPU energy; `None` without energy or with zero energy.
pub fn tokens_per_joule(stage: &StageTelemetry, output_tokens: u64) -> Option<f64> {
    stage
        .energy_j()
        .filter(|e| *e > 0.0)
        .map(|e| output_tokens as f64 / e)
}

fn fold(vals: impl Iterator<Item = Option<f64>>, f: fn(f64, f64) -> f64) -> Option<f64> {
    vals.flatten().reduce(f)
}

/// The value of a telemetry SLA metric for a stage; `None` when the stage has no telemetry or
/// the sources could not measure it. `output_tokens` is needed only for `tokens_per_joule`.
pub fn telemetry_metric(
    report: &TelemetryReport,
    stage: &str,
    metric: TelemetryMetric,
    output_tokens: Option<u64>,
) -> Option<f64> {
    let s = report.stage(stage)?;
    let gpus = s.primary_gpus();
    match metric {
        TelemetryMetric::GpuThrottleRatioMin => {
            fold(gpus.iter().map(|g| g.clock_ratio_min), f64::min)
        }
        TelemetryMetric::GpuTempMax => fold(gpus.iter().map(|g| g.temp_max_c), f64::max),
        // Total draw of all GPUs: what the server as a whole burns.
        TelemetryMetric::GpuPowerMean => fold(gpus.iter().map(|g| g.power_mean_w), |a, b| a + b),
        TelemetryMetric::EnergyJ => s.energy_j(),
        TelemetryMetric::TokensPerJoule => tokens_per_joule(s, output_tokens?),
        TelemetryMetric::KvCacheMax => fold(s.servers.iter().map(|v| v.kv_cache_max), f64::max),
        TelemetryMetric::QueueMax => fold(s.servers.iter().map(|v| v.waiting_max), f64::max),
        TelemetryMetric::SpecAcceptanceRate => s.spec_figures().0,
        TelemetryMetric::SpecAcceptanceLength => s.spec_figures().1,
    }
}
