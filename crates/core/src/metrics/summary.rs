//! The per-stage summary a run produces: plain data, serialized into `results.json` (the
//! public contract in `docs/results.md`), read by the SLA evaluator and the report renderers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dist::Dist;
use super::histograms::HistogramCodec;
use super::net::ClientNet;
pub use super::tokens::Tokens;

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
    /// The GPUs the target declares (`target { gpus N }`), for the per-GPU throughput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestCounts {
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// Failures by kind: `connect`, `timeout`, `http_429`, `http_5xx`…, `stream_broken`,
    /// `protocol` (*added in schema 3*), `malformed`, `empty`, `incomplete` (*added in schema
    /// 3*), `hook`, `invalid`, `cancelled`.
    pub errors: BTreeMap<String, u64>,
    /// Requests sent a second time on a fresh connection because the first attempt, on a
    /// reused connection, failed before any byte of an answer; they count once in
    /// `sent` and by their final outcome. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retried: u64,
}

impl RequestCounts {
    /// Takes in another aggregator's counts (the errors by kind are the aggregator's own map
    /// until the summary).
    pub(super) fn merge(&mut self, o: &RequestCounts) {
        self.sent += o.sent;
        self.ok += o.ok;
        self.failed += o.failed;
        self.retried += o.retried;
        for (k, n) in &o.errors {
            *self.errors.entry(k.clone()).or_default() += n;
        }
    }

    /// Failures of the kinds a starved client can cause itself
    /// ([`super::ErrorKind::client_side`]: its own timeouts, requests cancelled in the drain).
    pub fn client_side_failures(&self) -> u64 {
        super::ErrorKind::CLIENT_SIDE
            .iter()
            .filter_map(|k| self.errors.get(&k.key()))
            .sum()
    }
}

/// A stage's latency distributions, one per metric with a summary (`ttft_ms`, …; see
/// [`super::LatencyMetric`]).
pub type Latency = super::PerMetric<Dist, super::Summarised>;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Throughput {
    pub requests_per_s: f64,
    pub output_tokens_per_s: f64,
    pub input_tokens_per_s: f64,
    /// A pooling API's inputs (texts embedded, documents scored) per second, over the ok
    /// requests; absent for the generation APIs. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_per_s: Option<f64>,
    /// Requests per second that met every per-request SLO (all ok requests when none is set).
    pub goodput_per_s: f64,
    /// Share of sent requests that met every per-request SLO, 0..=1.
    pub goodput_ratio: f64,
    /// Achieved send rate (sent / sending time), to compare with the planned rate.
    pub achieved_rate_per_s: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SendLag {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl SendLag {
    /// The figure an aggregation reads, for the ones kept (p50, p99, max).
    pub fn get(&self, aggregation: super::Aggregation) -> Option<f64> {
        use super::{Aggregation, Percentile};
        match aggregation {
            Aggregation::Percentile(Percentile::P50) => Some(self.p50),
            Aggregation::Percentile(Percentile::P99) => Some(self.p99),
            Aggregation::Max => Some(self.max),
            _ => None,
        }
    }
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
    /// clients, once all have started). With shards (`--cpus N`, or merged distributed
    /// results) the sum of each shard's peak, an upper bound.
    /// Absent when no request was sent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub peak_in_flight: u64,
    /// Idle CPUs were kept polling instead of sleeping during the stage (`--poll-idle`), which
    /// removes their wake-up latency from send lag and TTFT. Absent when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub poll_idle: bool,
    /// How late the client's event loop woke for a probe timer (one every 1 to 2 ms per
    /// worker) during the stage: the delay a response waits, once it has arrived, before the
    /// client reads it. Absent where not measured. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_delay_ms: Option<LoopDelay>,
    /// A closed loop's clients' idle time: the share of their time, between each client's
    /// first and last sends, in which it held no request in flight although it had more to
    /// send (reading an answer, preparing and sending the next), in percent. The load the
    /// server had is short of the plan by this share. Absent for open-loop and session
    /// stages. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_loop_idle_percent: Option<f64>,
    /// Share of the time of the CPUs the client may run on that went to running anything, in
    /// percent (Linux). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_busy_percent: Option<f64>,
    /// Share of the time of those CPUs that went to other processes (busy less the client's
    /// own CPU time), in percent (Linux). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_percent: Option<f64>,
    /// Times a thread of the client was descheduled against its will, per second (Linux).
    /// *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub involuntary_switches_per_s: Option<f64>,
    /// Tasks runnable on the machine during the stage (`procs_running`, sampled; Linux).
    /// *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_queue: Option<RunQueue>,
}

/// The loop probe's longest sleep (ms): a stall ends at most this long before a probe notes
/// it, so a read was at most this plus the longest delay noted late (`runner::probe`).
pub const PROBE_PERIOD_MAX_MS: u64 = 2;

/// How late the client's event loop woke for its probe timer, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoopDelay {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    /// Probe wake-ups measured.
    pub samples: u64,
}

/// Runnable tasks on the machine, over a stage's samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunQueue {
    pub mean: f64,
    pub max: u32,
}

impl ClientHealth {
    /// What the machine reported about the client's CPUs, for the lag's cause.
    pub fn host_load(&self) -> super::HostLoad {
        super::HostLoad {
            busy_share: self.cpus_busy_percent.map(|p| p / 100.0),
            others_share: self.others_percent.map(|p| p / 100.0),
            involuntary_per_s: self.involuntary_switches_per_s,
            run_queue_mean: self.run_queue.map(|q| q.mean),
            run_queue_max: self.run_queue.map(|q| q.max),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whether the stage's numbers can be trusted, and if not, why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Validity {
    pub trusted: bool,
    /// The flags below as sentences.
    pub reasons: Vec<String>,
    /// Why the stage is untrusted, typed: what each flag saw and (by its kind) what it can
    /// distort. *Added in schema 3*; a result written before has `reasons` only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<super::Flag>,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            trusted: true,
            reasons: Vec::new(),
            flags: Vec::new(),
        }
    }
}

impl Validity {
    /// Trusted when there is no flag; the reasons rendered from the flags.
    pub fn from_flags(flags: Vec<super::Flag>) -> Validity {
        Validity {
            trusted: flags.is_empty(),
            reasons: flags.iter().map(ToString::to_string).collect(),
            flags,
        }
    }

    /// Adds a flag (and its sentence): the stage is untrusted.
    pub fn push(&mut self, flag: super::Flag) {
        self.trusted = false;
        self.reasons.push(flag.to_string());
        self.flags.push(flag);
    }

    /// The flags, with a result written before they were typed read as one flag per reason
    /// that may have distorted anything.
    pub fn typed_flags(&self) -> Vec<super::Flag> {
        if !self.flags.is_empty() || self.trusted {
            return self.flags.clone();
        }
        let reasons = self.reasons.iter().cloned();
        let mut flags: Vec<super::Flag> = reasons
            .map(|reason| super::FlagKind::Other { reason }.into())
            .collect();
        if flags.is_empty() {
            flags.push(
                super::FlagKind::Other {
                    reason: "untrusted".into(),
                }
                .into(),
            );
        }
        flags
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
    /// Requests in flight on average during this second (sent, not yet answered): what the
    /// steady-state window is found from. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub in_flight: f64,
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
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
    /// Multi-turn sessions: metrics per turn index (0 first), up to 32 indices. With agentic
    /// tasks, the root sessions' turns only (their subagents' are in `per_depth`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_turn: Vec<super::TurnSummary>,
    /// Agentic tasks with subagents: their turns by depth (1: forked by the root session).
    /// *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_depth: Vec<super::DepthSummary>,
    /// A target with several URLs: one entry per URL that was sent requests (empty
    /// otherwise). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_url: Vec<super::UrlSummary>,
    /// Warm-up with `until="stable"` only: what ended it, and when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_end: Option<WarmupEnd>,
    /// Every latency histogram of the stage, whole (µs; see `StageHistograms`), for
    /// confidence intervals and `compare`. Absent from results written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histograms: Option<super::StageHistograms>,
    /// What is worth knowing about the stage without making its numbers untrusted, e.g. a
    /// data set that repeats its prompts. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Where the TTFT went: the server's own figures (per-request timings, or its Prometheus
    /// histograms over the stage) beside the client's. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<super::Attribution>,
    /// Speculative decoding as the responses reported it (llama.cpp's `timings.draft_n` and
    /// `draft_n_accepted`), summed over the successful requests. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<super::DraftCounts>,
    /// The stage was stopped while it ran by an `abort-on-fail` assertion; the message says
    /// which. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
    /// The latencies a late client can only raise (TTFT, E2E, NTPOT, TTFA), each request's
    /// taken net of what the client may have added to it: lower bounds on what the server
    /// took, which decide failures on a stage whose client is flagged (see `docs/sla.md`).
    /// *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_net: Option<ClientNet>,
    /// A stage run in `rounds`: each round's own summary (without histograms or timeline), in
    /// order. The stage's figures above are then the medians across rounds, its intervals
    /// across rounds, its counts the sums and its histograms the union.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<StageSummary>,
    /// An `until-decided` stage: the rule it ran under and where it stopped sending. Its
    /// verdicts are decided on confidence sequences tuned for `tuned_for` requests. *Added in
    /// schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<super::UntilDecided>,
    /// What the requests carried: the bodies' bytes, images and the vision tokens the server
    /// counted for them. Absent when no body was sent. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<super::Payload>,
    /// The window where the load was steady (see `docs/metrics.md`), with its own requests,
    /// latencies and throughput; the ramp is before `from_s`, the drain after `to_s`. Absent
    /// when the load held near its peak for less than 3 s, for a stage run in rounds, and in
    /// merged distributed results. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyState>,
    /// A stage split by `model` or `class`: each label's requests as a stage of their own, in
    /// the order the scenario lists them (every label, sent or not). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupSummary>,
    /// Classes with different priorities: whether the server served them in that order.
    /// *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<super::PriorityCheck>,
    /// What the answers said, when the data set checks them (`quality { … }`,
    /// docs/quality.md). *Added in 0.3.0.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<super::Quality>,
    /// The server configuration the stage ran on, when the scenario's `server` block has
    /// configurations. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<super::StageServer>,
}

/// One label's requests of a stage, summarised as a stage of their own (latencies with their
/// intervals, counts, throughput over the stage's wall time). *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupSummary {
    pub by: crate::protocol::Grouping,
    pub label: String,
    /// A class's priority as sent to the server (lower is served first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    pub summary: StageSummary,
}

/// The steady-state window of a stage and its figures (`steady` in results.json).
/// *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SteadyState {
    /// Seconds from the stage's start to the window's start: the ramp before it.
    pub from_s: f64,
    /// Seconds from the stage's start to the window's end; from here to `wall_time_s` is the
    /// drain.
    pub to_s: f64,
    /// The share of the peak a second needed (see `docs/metrics.md`).
    pub ratio: f64,
    /// The most requests in flight on average over any full second of the stage, the series
    /// averaged over 5 seconds.
    pub peak_in_flight: f64,
    /// Requests in flight on average over the window.
    pub mean_in_flight: f64,
    /// The requests scheduled and finished inside the window.
    pub requests: RequestCounts,
    /// Their latencies; intervals by batches in send order (`method: "batches"`). ITL is not
    /// kept per request, so it has no sample here.
    pub latency: Latency,
    /// What finished inside the window, over its length.
    pub throughput: Throughput,
}

impl StageSummary {
    /// A pooling API's stage (embeddings, rerank, score): it counts inputs, and has no first
    /// token and no output.
    pub fn pooled(&self) -> bool {
        self.throughput.inputs_per_s.is_some()
    }

    /// Marks a stage whose answers came whole (a pooling API's, or a generation API's asked
    /// `stream #false`: `whole`), and its rounds, so that its distributions are written
    /// without the streamed-only metrics (see `PerMetric`); a streamed stage's are unchanged.
    pub fn mark_answered_whole(&mut self, whole: bool) {
        let whole = whole || self.pooled();
        self.latency = self.latency.answered_whole(whole);
        self.histograms = self.histograms.take().map(|h| h.answered_whole(whole));
        if let Some(net) = &mut self.client_net {
            net.latency = net.latency.answered_whole(whole);
            net.histograms = net.histograms.take().map(|h| h.answered_whole(whole));
        }
        for r in &mut self.rounds {
            r.mark_answered_whole(whole);
        }
    }
}

impl StageSummary {
    /// The stage's histogram of `metric` (µs), decoded; `None` when the summary has none
    /// stored (results from before histograms were kept).
    pub fn histogram(
        &self,
        metric: super::LatencyMetric,
    ) -> Option<Result<hdrhistogram::Histogram<u64>, crate::stats::StatsError>> {
        self.histograms.as_ref()?.decode(metric)
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
