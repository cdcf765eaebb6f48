//! The per-stage summary a run produces: plain data, serialized into `results.json` (the
//! public contract in `docs/results.md`), read by the SLA evaluator and the report renderers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A latency distribution in milliseconds, from an HDR histogram (µs resolution, 3 significant
/// digits). `count` 0 means no sample: every other field is then 0 and SLAs on it fail.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Dist {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
    /// Confidence intervals of the percentiles and the mean (absent in results from before
    /// they were kept, and where no sample was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<super::Intervals>,
}

/// What the stage was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlannedLoad {
    pub arrival: crate::arrival::ArrivalKind,
    /// Offered request rate (open loop).
    pub rate_per_s: Option<f64>,
    /// Closed-loop clients.
    pub clients: Option<u32>,
    /// Planned requests, when bounded by count or open loop.
    pub requests: Option<u64>,
    /// Planned sending time in seconds, when bounded by time.
    pub duration_s: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestCounts {
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// Failures by kind: `connect`, `timeout`, `http_429`, `http_5xx`…, `stream_broken`,
    /// `malformed`, `hook`, `invalid`.
    pub errors: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Latency {
    pub ttft_ms: Dist,
    pub itl_ms: Dist,
    pub tpot_ms: Dist,
    pub e2e_ms: Dist,
    pub ntpot_ms: Dist,
    /// Time to the first answer token, when it differs from TTFT (reasoning models).
    pub ttfa_ms: Dist,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Throughput {
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub input_tokens_per_s: f64,
    /// Requests per second that met every per-request SLO (all ok requests when none is set).
    pub goodput_per_s: f64,
    /// Share of sent requests that met every per-request SLO, 0..=1.
    pub goodput_ratio: f64,
    /// Achieved send rate (sent / sending time), to compare with the planned rate.
    pub achieved_rate_per_s: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    /// Requests whose counts came from the server's `usage`.
    pub from_usage: u64,
    /// Requests whose counts came from our tokenizer (the server sent no usage).
    pub from_tokenizer: u64,
    /// Requests where the server's prompt count differs from ours by more than 5 %.
    pub mismatched: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendLag {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// The client's own health: how late it sent, how busy it was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientHealth {
    pub send_lag_ms: SendLag,
    /// Process CPU time over wall time during the stage, in percent of one core.
    pub cpu_percent: f64,
    /// Cores available to the process.
    pub cores: u32,
    /// The client process's peak resident memory so far, in MiB (0 where unknown).
    #[serde(default)]
    pub peak_rss_mb: f64,
    /// Share of the time of the CPUs the client may run on that the hypervisor gave to
    /// something else during the stage (`steal` in /proc/stat), in percent. Absent where
    /// unknown (not Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_percent: Option<f64>,
    /// The most requests this client had in flight at once during the stage (a closed loop's
    /// clients, once all have started). Absent when no request was sent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub peak_in_flight: u64,
    /// Idle CPUs were kept polling instead of sleeping during the stage (`--poll-idle`), which
    /// removes their wake-up latency from send lag and TTFT. Absent when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub poll_idle: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whether the stage's numbers can be trusted, and if not, why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Validity {
    pub trusted: bool,
    pub reasons: Vec<String>,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            trusted: true,
            reasons: Vec::new(),
        }
    }
}

/// One second of a stage, for plots over time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelinePoint {
    /// Seconds since the stage start (bucket start).
    pub t_s: f64,
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub output_tokens: u64,
    /// Median TTFT of requests completed in this second (0 when none).
    pub ttft_p50_ms: f64,
    /// 99th percentile E2E of requests completed in this second (0 when none).
    pub e2e_p99_ms: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageSummary {
    pub name: String,
    pub planned: PlannedLoad,
    /// Wall time from the stage start to its last response (or drain end), in seconds.
    pub wall_time_s: f64,
    pub requests: RequestCounts,
    pub latency: Latency,
    pub tokens: Tokens,
    pub throughput: Throughput,
    pub client: ClientHealth,
    pub validity: Validity,
    /// Per-second series (sent, completed, tokens, latency) for plots.
    pub timeline: Vec<TimelinePoint>,
    /// Set when the stage is one point of a sweep or one probe of a rate search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<super::ProfilePoint>,
    /// Multi-turn sessions: metrics per turn index (0 first), up to 32 indices.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_turn: Vec<super::TurnSummary>,
    /// Warm-up with `until="stable"` only: what ended it, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_end: Option<WarmupEnd>,
    /// Every latency histogram of the stage, whole (µs; see `StageHistograms`), for
    /// confidence intervals and `compare`. Absent from results written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<super::StageHistograms>,
    /// A stage run in `rounds`: each round's own summary (without histograms or timeline), in
    /// order. The stage's figures above are then the medians across rounds, its intervals
    /// across rounds, its counts the sums and its histograms the union.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<StageSummary>,
}

impl StageSummary {
    /// The stage's histogram of `metric` (µs), decoded; `None` when the summary has none
    /// stored (results from before histograms were kept).
    pub fn histogram(
        &self,
        metric: super::LatencyMetric,
    ) -> Option<Result<hdrhistogram::Histogram<u64>, crate::stats::StatsError>> {
        self.histograms.as_ref().map(|h| h.decode(metric))
    }
}

/// Why and when a `warmup until="stable"` stopped sending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WarmupEnd {
    pub reason: WarmupEndReason,
    /// Seconds from the warm-up's start to the moment sending stopped.
    pub at_s: f64,
    /// Stability checks made.
    pub checks: u32,
    /// The last stability verdict, with its numbers (e.g. the TTFT coefficient of variation).
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WarmupEndReason {
    /// GPU clocks held and temperature settled (GPU telemetry present).
    GpuStable,
    /// Recent TTFTs settled (no GPU telemetry).
    LatencyStable,
    /// `max` elapsed before the rule held.
    MaxDuration,
    /// Ctrl-C during the warm-up.
    Interrupted,
}

impl WarmupEndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            WarmupEndReason::GpuStable => "gpu_stable",
            WarmupEndReason::LatencyStable => "latency_stable",
            WarmupEndReason::MaxDuration => "max_duration",
            WarmupEndReason::Interrupted => "interrupted",
        }
    }
}
