//! The typed scenario: what a KDL file says, with params already substituted and every value
//! checked, plus the source spans that later stages need to point diagnostics at (SLA
//! assertions are re-checked against metric kinds, dataset files are opened at compile time).
//!
//! This is the "raw model" of the pipeline: it mirrors the file. Defaults that need no file
//! context are applied here; everything else (expanding arrivals, drawing lengths) is the
//! plan compiler's job.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::session::SessionSpec;
use super::workload_model::{AgenticSpec, JsonlSpec, ShareGptSpec, TraceSpec};
use super::written::{ParamValue, Spanned};
use crate::arrival::{ArrivalSpec, SearchSpec};
use crate::dataset::{AgenticShape, ContextSpec, ImageSpec, LengthDist, TokenizerSpec};
use crate::protocol::{RequestSettings, RunSettings};
use crate::sim::SimConfig;
use crate::sla::{Assertion, InconclusiveAs, Untrusted};
use crate::units::{Duration, Rate};

/// The scenario file itself: its path (as the user gave it) and text, for diagnostics.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: PathBuf,
    pub text: Arc<str>,
}

impl Source {
    /// The directory relative paths in the scenario (datasets, hooks, templates) resolve against.
    pub fn base_dir(&self) -> PathBuf {
        self.path
            .parent()
            .map(|p| p.to_path_buf())
            .unwrap_or_else(|| PathBuf::from("."))
    }

    pub fn named(&self) -> miette::NamedSource<super::error::Snippets> {
        miette::NamedSource::new(
            self.path.display().to_string(),
            super::error::Snippets(self.text.clone()),
        )
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Scenario {
    #[serde(skip)]
    pub source: Source,
    /// `scenario "name"`.
    pub name: String,
    pub description: Option<String>,
    /// Seed of every random choice in the plan. Default 0.
    pub seed: u64,
    pub tags: Vec<String>,
    /// Every declared param with its effective value (default or `--param` override).
    pub params: BTreeMap<String, ParamValue>,
    pub target: Target,
    pub tokenizer: TokenizerSpec,
    /// In file order; names are unique.
    pub datasets: Vec<Dataset>,
    pub warmup: Option<Warmup>,
    /// In file order; at least one; names are unique.
    pub stages: Vec<StageSpec>,
    /// Scenario-level `sla { assert … }`; stage-scoped ones carry `stage`.
    pub sla: Vec<AssertionSpec>,
    /// How assertions are decided: `sla { confidence "95%"; inconclusive "fail"; untrusted
    /// "judge" }` (each optional; the command line may override them).
    #[serde(default)]
    pub sla_policy: SlaPolicySpec,
    /// `rounds N`: every stage runs N times on the same plan (a stage's own `rounds` wins).
    /// Default 1.
    pub rounds: u32,
    /// Per-request SLOs that define goodput (`goodput ttft="200ms" tpot="50ms"`).
    pub goodput: Option<GoodputSpec>,
    pub report: ReportSpec,
    /// `telemetry { … }`: GPU and server sources sampled during the run.
    pub telemetry: Option<crate::telemetry::TelemetryConfig>,
    /// `server { … }`: the server infermeter starts before the run and stops after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::server::ServerSpec>,
    /// `infra { … }`: facts declared about the infrastructure (results.json names, values
    /// as written, secrets masked), in file order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub infra: Vec<(String, String)>,
    /// `mlperf "llama3.1-8b" scenario="server"`: the MLPerf preset the run is judged under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mlperf: Option<MlperfSpec>,
}

/// `mlperf "NAME" scenario="server"|"interactive" stage="…" require=#true smoke=#true`: the
/// preset's bounds (added to `sla` as assertions on `stage`) and how its qualification counts.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MlperfSpec {
    /// The benchmark, as `sla::mlperf::PRESETS` names it.
    pub benchmark: Spanned<String>,
    pub scenario: crate::sla::mlperf::MlperfScenario,
    /// The stage judged: `stage=`, else the scenario's only stage.
    pub stage: Option<Spanned<String>>,
    /// A run that does not qualify fails the gate.
    pub require: bool,
    /// A short run not meant to qualify, said so in the verdict.
    pub smoke: bool,
    /// The preset's p99 bounds, ms.
    pub ttft_ms: f64,
    pub tpot_ms: f64,
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Target {
    pub endpoint: Endpoint,
    #[serde(flatten)]
    pub request: RequestSettings,
    #[serde(flatten)]
    pub run: RunSettings,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// The embedded simulator, started in-process on an ephemeral loopback port.
    // Boxed: its settings are large beside a URL.
    Sim(Box<SimConfig>),
    /// An OpenAI-compatible base URL such as `http://127.0.0.1:8000/v1`.
    Url(Spanned<String>),
    /// Several base URLs (`target { url "…"; url "…" }`) and how requests are spread over
    /// them.
    Urls(crate::protocol::Routes),
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Dataset {
    pub name: Spanned<String>,
    pub kind: DatasetKind,
    /// Shared prefixes and retrieved chunks added to every prompt.
    #[serde(default)]
    pub context: ContextSpec,
    /// `hooks "file.rhai"`: a rhai script, relative to the scenario.
    #[serde(default)]
    pub hooks: Option<Spanned<PathBuf>>,
    /// `session turns=… think-time=… history=…`: multi-turn chat sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionSpec>,
    /// `images N { size …; format … }`: synthetic images with every request (chat only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImageSpec>,
    /// `quality { score …; repetition …; refusal …; tokens-band … }`: how answers are
    /// scored and checked (docs/quality.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<crate::dataset::QualitySpec>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DatasetKind {
    Synthetic(SyntheticSpec),
    #[serde(rename = "sharegpt")]
    ShareGpt(ShareGptSpec),
    Jsonl(JsonlSpec),
    Agentic(AgenticSpec),
    /// `agentic tasks=N { … }`: generated agentic tasks.
    AgenticSynthetic(AgenticShape),
    Trace(TraceSpec),
}

/// Synthetic prompts of exact token lengths.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SyntheticSpec {
    pub input_tokens: Spanned<LengthDist>,
    pub output_tokens: Spanned<LengthDist>,
}

/// Warm-up load sent before the first stage and excluded from every metric.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Warmup {
    pub limit: StageLimit,
    /// Default: the first stage's dataset.
    pub dataset: Option<Spanned<String>>,
    /// Closed-loop clients used for warm-up. Default 4.
    pub clients: u32,
    /// `until="stable"`: send until the stability rule holds; `limit` is then its `max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<crate::telemetry::WarmupUntil>,
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct StageSpec {
    pub name: Spanned<String>,
    /// Refers to a `dataset` by name (checked by the parser).
    pub dataset: Spanned<String>,
    pub arrival: Spanned<ArrivalSpec>,
    pub limit: StageLimit,
    /// How long to wait for in-flight requests after the stage ends. Default: the target timeout.
    pub drain_timeout: Option<Duration>,
    /// `sweep { … }` or `search { … }`: the stage is a family of loads (see `profile.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileSpec>,
    /// `rounds N` inside the stage: how many times it runs (the scenario's `rounds` if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<u32>,
    /// `requests 200 until-decided max=5000`: `limit` is then the least the stage sends, and
    /// it goes on until every assertion on it is decided, or this maximum (spanned at
    /// `until-decided`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_decided: Option<Spanned<StageLimit>>,
    /// `model "…" weight=N` and `class "…" weight=N priority=P { … }`: how the stage's
    /// requests split between models (or adapters) and traffic classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupSpec>,
    /// `priority-inversion "fail"`: a class told to go first that was served slower than one
    /// told to go later fails the gate (`"report"`, the default: shown only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub priority_gate: bool,
    /// A sweep's `shapes "128/32" "1024/128"`: the sweep's ladder runs once per shape, each
    /// with synthetic prompts of that input length answered with that output length, each
    /// shape its own profile group (`stage@128/32`). Empty for a sweep over one workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shapes: Vec<Spanned<Shape>>,
}

/// One (input, output) length pair of a sweep's `shapes`, in tokens: written and labelled
/// `"128/32"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Shape {
    pub input_tokens: u32,
    pub output_tokens: u32,
}

impl Shape {
    /// `128/32`: how the file writes it, and the label of its points and profile group.
    pub fn label(&self) -> String {
        format!("{}/{}", self.input_tokens, self.output_tokens)
    }
}

/// One grouping of a stage's requests, its labels in file order (see `protocol::Grouping`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct GroupSpec {
    pub by: crate::protocol::Grouping,
    pub labels: Vec<LabelSpec>,
}

/// One `model` or `class` of a stage.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LabelSpec {
    pub name: Spanned<String>,
    /// Share of the stage's requests, relative to the others' (default 1).
    pub weight: u32,
    /// A class's `priority=`: sent as vLLM's `priority` body field (lower is served first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// A class's own `dataset`, else the stage's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<Spanned<String>>,
}

/// A stage that is not one load but a family of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProfileSpec {
    /// One sub-stage per point, each with the stage's limit and dataset.
    Sweep(SweepSpec),
    /// Probes chosen adaptively to find the highest rate where the stage's SLAs hold.
    Search(SearchSpec),
}

/// The load points of a sweep, in the order they run (`from/to/steps` already expanded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SweepSpec {
    /// Open-loop request rates (the stage's arrival kind, Poisson when it names none).
    Rates(Vec<Rate>),
    /// Closed-loop client counts.
    Concurrency(Vec<u32>),
}

/// When a stage stops sending. Exactly one of the two is given in the file.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StageLimit {
    Requests(u64),
    Duration(Duration),
}

/// One `assert "…"` line, parsed by the `sla` grammar when the scenario is read; the span is
/// where the expression is written, so that later errors can point inside the string.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct AssertionSpec {
    pub expr: Spanned<Assertion>,
    /// `Some(stage)` when written inside a stage or with `stage="…"`.
    pub stage: Option<Spanned<String>>,
    pub abort_on_fail: bool,
    /// `every-point=#true`: on a sweep, every point's verdict gates the run, past the knee
    /// too.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub every_point: bool,
}

/// The `sla` block's settings, as written (absent ones take the defaults or the command line's).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, JsonSchema)]
pub struct SlaPolicySpec {
    /// Confidence of the intervals assertions are decided on, a fraction (0.95).
    pub confidence: Option<f64>,
    /// What an inconclusive assertion does to the gate.
    pub inconclusive: Option<InconclusiveAs>,
    /// What an assertion on an untrusted stage comes to.
    pub untrusted: Option<Untrusted>,
    /// `abort-min-samples N`: requests a running stage must have completed before its
    /// `abort-on-fail` assertions are judged (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_min_samples: Option<u64>,
    /// `abort-grace "10s"`: how long a stage runs before its `abort-on-fail` assertions are
    /// judged (default 0s), like k6's `delayAbortEval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_grace: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct GoodputSpec {
    pub ttft: Option<Duration>,
    pub tpot: Option<Duration>,
    pub itl: Option<Duration>,
    pub e2e: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct ReportSpec {
    /// A user template for `report.md`, relative to the scenario.
    pub template: Option<PathBuf>,
    /// Write `requests.jsonl` (one row per request) beside the results.
    pub requests_jsonl: bool,
    /// `llm-d #true`: write the llm-d Benchmark Report (v0.2.1) beside the results.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub llm_d: bool,
    /// `parquet #true`: write `requests.parquet` (the per-request rows as Parquet; implies
    /// `requests.jsonl`, which it is converted from).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parquet: bool,
    /// A baseline `results.json` for relative assertions.
    pub baseline: Option<PathBuf>,
    /// `tolerance "5%"`: how much every metric may move in `compare` (recorded in results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
    /// `tolerance "ttft.p95" "10%"`: one metric's (or `"itl"`: all of its aggregations').
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tolerances: BTreeMap<String, f64>,
}
