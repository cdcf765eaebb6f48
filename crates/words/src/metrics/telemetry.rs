//! The telemetry family of the metric vocabulary ([`TelemetryMetric`]): readings of the GPUs'
//! and the server's own telemetry over a stage, whose values `telemetry::telemetry_metric`
//! computes. Readings, not sampled distributions: an SLA on one is judged on the value, with
//! no interval.

use super::def::{ApiScope, LateClient, MetricDef, MetricKind, Worse};

/// Readings of the server's telemetry over a stage, served by `telemetry::telemetry_metric`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TelemetryMetric {
    /// Lowest SM-clock ratio of the stage's GPUs.
    GpuThrottleRatioMin,
    /// Highest GPU temperature, °C.
    GpuTempMax,
    /// Mean total GPU power draw, W.
    GpuPowerMean,
    /// GPU energy spent during the stage, J.
    EnergyJ,
    /// Output tokens per joule of GPU energy.
    TokensPerJoule,
    /// Highest KV-cache usage the server reported (0–1).
    KvCacheMax,
    /// Longest server queue (waiting requests).
    QueueMax,
    /// Speculative decoding: draft tokens accepted over draft tokens proposed (0–1).
    SpecAcceptanceRate,
    /// Speculative decoding: tokens per verification step, 1 + accepted / drafts.
    SpecAcceptanceLength,
}

impl TelemetryMetric {
    pub const ALL: [TelemetryMetric; 9] = [
        TelemetryMetric::GpuThrottleRatioMin,
        TelemetryMetric::GpuTempMax,
        TelemetryMetric::GpuPowerMean,
        TelemetryMetric::EnergyJ,
        TelemetryMetric::TokensPerJoule,
        TelemetryMetric::KvCacheMax,
        TelemetryMetric::QueueMax,
        TelemetryMetric::SpecAcceptanceRate,
        TelemetryMetric::SpecAcceptanceLength,
    ];

    pub fn def(self) -> &'static MetricDef {
        &TELEMETRY_DEFS[self as usize]
    }
}

const fn reading(
    name: &'static str,
    label: &'static str,
    key: &'static str,
    kind: MetricKind,
    worse: Worse,
    example: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        label,
        key,
        kind,
        worse,
        late_client: LateClient::LoadOnly,
        from_output_tokens: false,
        scope: ApiScope::All,
        example,
    }
}

/// In the order of [`TelemetryMetric`].
const TELEMETRY_DEFS: [MetricDef; 9] = {
    use MetricKind as K;
    use Worse::{Higher, Lower};
    [
        reading(
            "gpu.throttle_ratio.min",
            "GPU clock ratio (min)",
            "telemetry.stages[].gpus[].clock_ratio_min",
            K::Number,
            Lower,
            "0.9",
        ),
        reading(
            "gpu.temp.max",
            "GPU temperature (max)",
            "telemetry.stages[].gpus[].temp_max_c",
            K::Celsius,
            Higher,
            "85",
        ),
        reading(
            "gpu.power.mean",
            "GPU power (mean)",
            "telemetry.stages[].gpus[].power_mean_w",
            K::Watts,
            Higher,
            "600 W",
        ),
        reading(
            "energy_j",
            "GPU energy",
            "telemetry.stages[].gpus[].energy_j",
            K::Joules,
            Higher,
            "50000 J",
        ),
        MetricDef {
            from_output_tokens: true,
            scope: ApiScope::Generated,
            ..reading(
                "tokens_per_joule",
                "tokens per joule",
                "tokens.output / telemetry.stages[].gpus[].energy_j",
                K::TokPerJoule,
                Lower,
                "2",
            )
        },
        reading(
            "kv_cache.max",
            "KV-cache usage (max)",
            "telemetry.stages[].servers[].kv_cache_max",
            K::Number,
            Higher,
            "0.9",
        ),
        reading(
            "queue.max",
            "queue (max)",
            "telemetry.stages[].servers[].waiting_max",
            K::Number,
            Higher,
            "10",
        ),
        // The server's counters over the stage (vLLM; SGLang's gauges averaged): what the
        // draft model guessed right, whatever the client's pace.
        reading(
            "spec.acceptance_rate",
            "draft acceptance rate",
            "telemetry.stages[].servers[].spec.acceptance_rate",
            K::Number,
            Lower,
            "60%",
        ),
        reading(
            "spec.acceptance_length",
            "mean acceptance length",
            "telemetry.stages[].servers[].spec.acceptance_length",
            K::Number,
            Lower,
            "2.5",
        ),
    ]
};
