//! The Plan: the fully resolved, deterministic workload. No `Option`s left to interpret, no
//! reference back to the KDL. The runner follows it; `infermeter plan` prints it; its hash
//! identifies the workload in every result.
//!
//! Memory does not grow with prompt text × requests: a request is a [`RequestRecipe`] computed
//! on demand from `(stage seed, index)`, and its text is materialised by the dataset module at
//! send time. Open-loop schedules are stored as how to draw them ([`Schedule`]), so a plan's size
//! does not grow with the run's length either; only a trace replay lists its send times.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::hooks::HookPlan;
use super::slice::Slice;
use crate::arrival::{ArrivalSpec, SearchSpec};
use crate::dataset::{ContextSpec, DatasetSource, History, ImageSpec, TokenizerSpec};
use crate::protocol::{Group, Labels, RequestSettings, RunSettings};
use crate::sim::SimConfig;
use crate::sla::ScopedAssertion;
use crate::telemetry::{TelemetryConfig, WarmupUntil};
use crate::units::Duration;

/// Bumped whenever the meaning of a plan changes (e.g. how recipes are drawn), so that equal
/// hashes keep meaning equal workloads across infermeter versions.
pub const PLAN_FORMAT: u32 = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub format: u32,
    pub scenario: String,
    pub description: Option<String>,
    pub seed: u64,
    /// Hex digest over everything below (see `plan::hash`). Identifies the workload.
    pub hash: String,
    pub params: BTreeMap<String, serde_json::Value>,
    pub target: TargetPlan,
    pub tokenizer: TokenizerSpec,
    pub datasets: Vec<DatasetPlan>,
    pub warmup: Option<StagePlan>,
    pub stages: Vec<StagePlan>,
    /// The SLA assertions, parsed (serialised as written, so the hash covers the text).
    pub sla: Vec<ScopedAssertion>,
    pub goodput: GoodputPlan,
    /// Telemetry sources sampled during the run. Absent from the JSON (and so from the hash)
    /// when the scenario has none, so older plans keep their hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetryConfig>,
    /// `warmup until="stable"`: the warm-up (whose `duration` is then the `max`) ends early once
    /// this rule holds. Absent (and out of the hash) otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_until: Option<WarmupUntil>,
    /// The `server` block's configurations, in the order the stages run on them; empty
    /// without any. Not in the JSON or hash (see [`ServerConfigPlan`]).
    #[serde(skip)]
    pub server_configs: Vec<ServerConfigPlan>,
    /// The scenario's MLPerf preset: how the run's qualification is judged. Not workload: out
    /// of the JSON and hash (the bounds it adds are in `sla`, and so in both).
    #[serde(skip)]
    pub mlperf: Option<crate::sla::mlperf::MlperfRule>,
}

/// The scenario's target with its endpoint resolved: the same request and run settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetPlan {
    pub endpoint: EndpointPlan,
    #[serde(flatten)]
    pub request: RequestSettings,
    /// How the run measures, not what it sends: out of the plan's JSON and hash.
    #[serde(skip)]
    pub run: RunSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndpointPlan {
    /// Boxed: the simulator's settings are large beside a URL.
    Sim(Box<SimConfig>),
    /// Serialised with its credentials masked (see [`crate::redact`]): the plan's JSON is
    /// printed, and the hash leaves the URL out anyway.
    Url(#[serde(serialize_with = "redacted")] String),
    /// Several URLs and their route (each URL masked the same way).
    Urls(crate::protocol::Routes),
}

fn redacted<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::redact::secrets(url))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetPlan {
    pub name: String,
    pub source: DatasetSource,
    /// Shared prefixes and retrieved chunks added to every prompt.
    #[serde(default)]
    pub context: ContextSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<HookPlan>,
    /// Multi-turn sessions. Absent from the JSON (and the hash) when the dataset has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionPlan>,
    /// Synthetic images with every request: the spec (in the hash), never the bytes, which
    /// each request's draw and the generator fix. Absent when the dataset has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImageSpec>,
    /// How answers are scored and checked (docs/quality.md). Absent when the dataset has no
    /// `quality` block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<crate::dataset::QualitySpec>,
}

/// A dataset's sessions: every arrival is a conversation of up to `turns` requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPlan {
    /// Synthetic: the turns of every session; ShareGPT: the most turns kept per conversation.
    pub turns: u32,
    pub think_time: Duration,
    pub history: History,
    /// The tool's time before a turn that answers tool calls (instead of the think time):
    /// fixed, or uniform up to `tool_time_max`. Absent: the think time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_time: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_time_max: Option<Duration>,
    /// How later turns carry the conversation; left out of the plan (and its hash) at the
    /// default, `resend`.
    #[serde(
        default,
        skip_serializing_if = "crate::dataset::SessionState::is_resend"
    )]
    pub state: crate::dataset::SessionState,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StagePlan {
    pub name: String,
    /// Index into `Plan::datasets`.
    pub dataset: usize,
    /// Seed of this stage's recipes, derived from the scenario seed and the stage's position.
    pub seed: u64,
    pub load: Load,
    /// Stop sending after this many requests (open loop: `offsets_ns.len()`).
    pub max_requests: Option<u64>,
    /// Stop sending after this long.
    pub duration: Option<Duration>,
    /// How long to wait for in-flight requests once sending stops.
    pub drain_timeout: Duration,
    /// Set on the stages a sweep expands into (and on search probes).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "planned_point"
    )]
    pub profile: Option<crate::arrival::LoadPoint>,
    /// Request `i` uses dataset item `first_item + i` (a trace replay's window start).
    #[serde(default)]
    pub first_item: u64,
    /// How many times the stage runs, each round the same requests. Not part of the plan's
    /// JSON or hash: rounds measure one workload more often, they do not change it, so a
    /// 5-round run compares with a 1-round baseline of the same plan.
    #[serde(skip, default = "one_round")]
    pub rounds: u32,
    /// The share of the stage this process sends (see [`super::Slice`]): the whole stage,
    /// unless `shard::slice` made the plan one shard of a distributed run. Not part of the
    /// JSON or hash, so every shard's plan hash is the plan's.
    #[serde(skip)]
    pub slice: Slice,
    /// `until-decided`: the stage may stop once every assertion on it is decided, after this
    /// minimum; its limits above are then its maximum. In the JSON (and so the hash) only for
    /// such stages, so other plans keep their hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<UntilDecided>,
    /// `model` and `class` splits of the stage's requests, each request's labels drawn from
    /// the stage's seed and its index (see [`StagePlan::labels`]). In the JSON (and so the hash)
    /// only for stages that have them, so other plans keep their hashes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Group>,
    /// `priority-inversion "fail"`: a class told to go first served slower than one told to
    /// go later fails the gate. In the JSON (and the hash) only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub priority_gate: bool,
    /// The server configuration (a `server` block's `config`) the stage runs on; the run
    /// restarts the server before it when the previous stage ran on another. In the JSON (and
    /// the hash) only when the scenario has configurations, so other plans keep their hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// A server configuration as the plan shows it: its name and the command it starts (secrets
/// masked). Out of the plan's JSON and hash: the stages name their configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerConfigPlan {
    pub name: String,
    pub command: Vec<String>,
}

/// An `until-decided` stage's minimum: what it sends before it may stop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UntilDecided {
    /// At least this many requests; for a `duration` minimum of an open-loop stage, the
    /// requests its schedule sends in that time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_requests: Option<u64>,
    /// At least this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_duration: Option<Duration>,
}

fn one_round() -> u32 {
    1
}

/// A load point as plans have always written it: with the outcome fields its result gets
/// (`saturated`, `client_bound`), false before it runs, so that a plan's hash stays what
/// earlier versions computed for it.
fn planned_point<S: serde::Serializer>(
    point: &Option<crate::arrival::LoadPoint>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Planned<'a> {
        #[serde(flatten)]
        point: &'a crate::arrival::LoadPoint,
        saturated: bool,
        client_bound: bool,
    }
    point
        .as_ref()
        .map(|point| Planned {
            point,
            saturated: false,
            client_bound: false,
        })
        .serialize(s)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Load {
    /// Requests leave at these offsets from the stage start, whatever earlier ones are doing.
    Open {
        arrival: ArrivalSpec,
        schedule: Schedule,
    },
    /// `clients` workers, each sending its next request when its previous one finishes; with
    /// a `ramp`, worker k waits for its start offset before its first request.
    Closed {
        clients: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ramp: Option<crate::arrival::ClientRamp>,
    },
    /// A rate search: probes are planned at run time (see `runner::search`) from these bounds
    /// and rules, each an open-loop Poisson stage of `probe` length.
    Search(SearchSpec),
}

/// An open-loop stage's send offsets (nanoseconds from the stage start, non-decreasing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "from")]
pub enum Schedule {
    /// Drawn from the stage's `arrival` with its arrival seed, again each time it is read
    /// ([`StagePlan::offsets`]); `count` and `last_ns` were counted when the plan was compiled.
    Drawn {
        horizon: crate::arrival::Horizon,
        count: u64,
        last_ns: u64,
    },
    /// A trace replay's send times, taken from its data set (which is in memory anyway).
    Listed { offsets_ns: Vec<u64> },
}

impl Schedule {
    /// How many requests the schedule sends.
    pub fn count(&self) -> u64 {
        match self {
            Schedule::Drawn { count, .. } => *count,
            Schedule::Listed { offsets_ns } => offsets_ns.len() as u64,
        }
    }

    /// When the last request leaves.
    pub fn last_ns(&self) -> u64 {
        match self {
            Schedule::Drawn { last_ns, .. } => *last_ns,
            Schedule::Listed { offsets_ns } => offsets_ns.last().copied().unwrap_or(0),
        }
    }
}

/// The send offsets of an open-loop stage, in order, drawn as they are read.
pub enum StageOffsets<'a> {
    /// Boxed: the generator's state is a few hundred bytes, and there is one per stage.
    Drawn(Box<crate::arrival::Offsets<rand::rngs::ChaCha8Rng>>),
    Listed(std::slice::Iter<'a, u64>),
}

impl Iterator for StageOffsets<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        match self {
            StageOffsets::Drawn(it) => it.next(),
            StageOffsets::Listed(it) => it.next().copied(),
        }
    }
}

impl StagePlan {
    /// An open-loop stage's send offsets; `None` for a closed loop or a search. The same plan
    /// always yields the same offsets.
    pub fn offsets(&self) -> Option<StageOffsets<'_>> {
        let Load::Open { arrival, schedule } = &self.load else {
            return None;
        };
        match schedule {
            Schedule::Listed { offsets_ns } => Some(StageOffsets::Listed(offsets_ns.iter())),
            // The compiler drew this schedule once already, so the spec is valid.
            Schedule::Drawn { horizon, .. } => {
                crate::arrival::offsets(arrival, *horizon, super::seed::arrival_rng(self.seed))
                    .ok()
                    .flatten()
                    .map(|o| StageOffsets::Drawn(Box::new(o)))
            }
        }
    }

    /// The open-loop requests this process sends, as `(index, offset_ns)` in schedule order:
    /// every one for the whole plan, a shard's own (see [`Slice`]) otherwise. `None` for a
    /// closed loop or a search.
    pub fn sends(&self) -> Option<impl Iterator<Item = (u64, u64)> + '_> {
        let slice = self.slice;
        Some(
            self.offsets()?
                .enumerate()
                .map(|(i, t)| (i as u64, t))
                .filter(move |(i, _)| slice.owns(*i)),
        )
    }
}

/// One request, computed on demand from the plan: `Plan::request(stage, index)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecipe {
    pub index: u64,
    pub input_tokens: u32,
    /// Sent as `max_tokens` (and, with `ignore_eos`, the exact output length).
    pub output_tokens: u32,
    /// Seed of the prompt text (synthetic) or the item index (file data sets).
    pub item: u64,
    /// The request's label in each of its stage's groups (model, class).
    #[serde(skip)]
    pub labels: Labels,
    /// The data set its prompt comes from: its class's own, else the stage's.
    #[serde(skip)]
    pub dataset: usize,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GoodputPlan {
    pub ttft: Option<Duration>,
    pub tpot: Option<Duration>,
    pub itl: Option<Duration>,
    pub e2e: Option<Duration>,
}
