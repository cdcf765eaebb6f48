//! The model of `results.json`: the public contract other tools parse (see
//! `docs/results.md`). Field names change only with a migration note and a `schema_version`
//! bump.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::metrics::{SearchSummary, StageSummary};
use crate::protocol::Api;
use crate::sla::{Baseline, InconclusiveAs, SlaOutcome, SlaVerdict, Untrusted};
use crate::telemetry::TelemetryReport;

/// 2: whole histograms, percentile intervals, SLA outcomes (pass, fail, inconclusive), the
/// gate's `outcome` and `sla_policy`, rounds. 3: the error kind `protocol` in
/// `requests.errors`; typed validity flags (`validity.flags`), each verdict's `basis`, the net
/// latencies (`client_net`) and the client's loop delay and host load (`client.loop_delay_ms`,
/// …); `until_decided` stages, sequential intervals, capped hints; `sla[].gates` (a sweep's
/// points past its knee do not gate); a stage's `groups` and `priority` (models and classes)
/// (additions only). Version-1 and version-2 files still
/// load (see `file.rs`).
pub const RESULTS_SCHEMA_VERSION: u32 = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Results {
    pub schema_version: u32,
    pub scenario: String,
    pub description: Option<String>,
    /// Identifies the workload: equal hashes mean equal plans.
    pub plan_hash: String,
    pub seed: u64,
    /// The gate passed and the run completed.
    pub passed: bool,
    /// The gate's outcome over every SLA verdict, under `sla_policy`: `fail` when one failed,
    /// else `inconclusive` when one could not be decided (unless the policy counts those as
    /// pass or fail), else `pass`.
    #[serde(default)]
    pub outcome: SlaOutcome,
    /// How the verdicts were reached.
    #[serde(default)]
    pub sla_policy: SlaPolicy,
    /// The scenario's `report { tolerance … }`: what `compare` uses unless told otherwise.
    #[serde(default, skip_serializing_if = "CompareTolerances::is_empty")]
    pub compare_tolerances: CompareTolerances,
    /// The run was stopped early (Ctrl-C or an `abort-on-fail` assertion).
    pub interrupted: bool,
    /// Why the run stopped early or could not complete, if it did.
    pub error: Option<String>,
    /// `false` in the `results.json` a run writes before its first request (and keeps when it
    /// could not be carried out: `error` says why): this run has not finished, so nothing in
    /// the directory is its verdict yet; `true` in a finished run's file. Files written before
    /// the field existed were only ever written at the end, hence the default.
    #[serde(default = "finished")]
    pub complete: bool,
    pub infermeter_version: String,
    /// UTC start time, RFC 3339.
    pub started_at: String,
    pub target: TargetInfo,
    /// Warm-up load, excluded from every metric and SLA.
    pub warmup: Option<StageSummary>,
    pub stages: Vec<StageSummary>,
    pub sla: Vec<SlaVerdict>,
    /// GPU and server telemetry, when the scenario asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetryReport>,
    /// One per rate-search stage: answer, bracket, stop reason and every probe (whose full
    /// summaries are in `stages`, marked with `profile`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<SearchSummary>,
    /// One per sweep whose points measured TPOT: tokens/s per user against tokens/s per GPU,
    /// the Pareto front and the knee (docs/metrics.md, "Interactivity"). *Added in 0.3.0.*
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frontiers: Vec<crate::metrics::Frontier>,
    /// Where the result came from: build, command line, params, host, server. Absent in
    /// results written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<super::Provenance>,
    /// A shard of a distributed run, or their merge: which shards, how their steps started,
    /// which are missing. *Added in schema 2*; absent for a single-process run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<super::Sharding>,
    /// With a `server` block's configurations: each one's figure and verdict, and which is
    /// best (docs/server.md, "Which configuration is best"). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configs: Option<crate::sla::ConfigRanking>,
    /// With an `mlperf` preset: whether the run qualifies under MLPerf's Server rules, and
    /// why not (docs/sla.md, "MLPerf presets"). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mlperf: Option<crate::sla::mlperf::Qualification>,
}

/// How much `compare` lets each metric move: a default (a fraction) and per metric
/// (`ttft.p95`, or `ttft` for all of its aggregations).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct CompareTolerances {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<f64>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metrics: std::collections::BTreeMap<String, f64>,
}

impl CompareTolerances {
    pub fn is_empty(&self) -> bool {
        self.default.is_none() && self.metrics.is_empty()
    }
}

/// The settings the SLA verdicts were reached under.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SlaPolicy {
    /// Confidence of the intervals (0.95).
    pub confidence: f64,
    pub inconclusive: InconclusiveAs,
    pub untrusted: Untrusted,
}

impl Default for SlaPolicy {
    fn default() -> Self {
        SlaPolicy {
            confidence: 0.95,
            inconclusive: InconclusiveAs::default(),
            untrusted: Untrusted::default(),
        }
    }
}

fn finished() -> bool {
    true
}

impl Results {
    /// This run as the baseline of another's `baseline` assertions.
    pub fn baseline(&self) -> Baseline<'_> {
        Baseline {
            stages: &self.stages,
            telemetry: self.telemetry.as_ref(),
        }
    }
}

impl TargetInfo {
    /// How the target's requests were answered, which decides the metrics it has.
    pub fn answer(&self) -> crate::protocol::Answer {
        crate::protocol::answer_of(self.api, self.stream)
    }
}

fn streamed() -> bool {
    true
}

fn is_streamed(stream: &bool) -> bool {
    *stream
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TargetInfo {
    /// `sim` for the embedded simulator, else the base URL.
    pub endpoint: String,
    pub api: Api,
    /// `stream #false`: the target asked for whole answers, so its stages have no first
    /// token. Absent when streamed. *Added in schema 3.*
    #[serde(default = "streamed", skip_serializing_if = "is_streamed")]
    pub stream: bool,
    pub model: String,
    /// The tokenizer used for synthetic prompts and fallback token counts.
    pub tokenizer: String,
    /// `cache-salt`: the run's salt seed (hex), from which each stage round's prompt salt was
    /// drawn. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_salt: Option<String>,
    /// A target with several URLs: each (credentials masked), its weight, and the route over
    /// them; the stages' `per_url[].url` index `routes.urls`. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routes: Option<crate::protocol::Routes>,
    /// `affinity-header`: the header that carried each session's id. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity_header: Option<String>,
    /// `priority-as "header"|"both"`: the header (lowercase) that told the server each
    /// request's class priority. Absent when priorities went in the body only. *Added in
    /// schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_header: Option<String>,
    /// `network { … }`: the link the shaping proxy emulated between the client and the
    /// target, what it carried and its own overshoot (docs/network.md). Absent without
    /// one. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::metrics::NetworkSummary>,
}

impl TargetInfo {
    /// The target's routes as a result keeps them: every URL masked.
    pub fn masked_routes(routes: &crate::protocol::Routes) -> crate::protocol::Routes {
        let mut r = routes.clone();
        for u in &mut r.urls {
            u.url = crate::redact::secrets(&u.url).into_owned();
        }
        r
    }
}
