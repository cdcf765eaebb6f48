//! The llm-d Benchmark Report (version 0.2.1, `schemas/llm-d/`): the format llm-d-benchmark
//! keeps every harness's results in, so that runs of aiperf, guidellm, inference-perf and
//! infermeter sit side by side. One report per stage (the schema describes one workload
//! stage: a sweep's points, say, are one report each), one a line; a one-stage run's file is a
//! single JSON document.
//!
//! Mapped: the serving engine as the scenario's stack (from `provenance.infra`), the plan hash as the workload's `cfg_id` (the recipe that reruns it), the stage's
//! planned load, request counts, every latency distribution the stage measured (percentiles
//! in ms), throughput, the mean prompt and output lengths. Left out, because infermeter does
//! not measure it: the serving stack's other components, the server's own observability series,
//! per-session figures, and percentiles of sequence lengths (results keep their sums).

use serde::Serialize;

use crate::metrics::{Dist, LatencyMetric, StageSummary};
use crate::results::Results;

/// The schema version written.
pub const LLMD_REPORT_VERSION: &str = "0.2.1";

/// Every stage of `results` as an llm-d Benchmark Report v0.2.1, one JSON document a line
/// (none for a result without stages).
pub fn llmd_report(results: &Results) -> String {
    let mut out = String::new();
    for (i, stage) in results.stages.iter().enumerate() {
        let report = stage_report(results, i, stage);
        // Plain data of our own: serialising it cannot fail.
        if let Ok(line) = serde_json::to_string(&report) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

fn stage_report<'a>(r: &'a Results, index: usize, s: &'a StageSummary) -> Report<'a> {
    let provenance = r.provenance.as_ref();
    let experiment = format!("{}@{}", r.plan_hash, r.started_at);
    Report {
        version: LLMD_REPORT_VERSION,
        run: Run {
            uid: format!("{experiment}#{index}"),
            eid: experiment,
            time: RunTime {
                start: &r.started_at,
                end: provenance.map(|p| p.ended_at.as_str()),
                duration: format!("PT{:.3}S", s.wall_time_s),
            },
            description: r.description.as_deref(),
            keywords: provenance
                .map(|p| p.tags.as_slice())
                .filter(|t| !t.is_empty()),
        },
        scenario: Scenario {
            stack: stack(r),
            load: load(r, index, s),
        },
        results: ResultsBlock {
            request_performance: RequestPerformance {
                aggregate: Aggregate {
                    requests: requests(s),
                    latency: latency(s),
                    throughput: throughput(s),
                },
            },
        },
    }
}

fn load<'a>(r: &'a Results, index: usize, s: &'a StageSummary) -> Load<'a> {
    let ok = s.requests.ok;
    let mean = |total: u64| {
        if ok == 0 {
            0.0
        } else {
            total as f64 / ok as f64
        }
    };
    let provenance = r.provenance.as_ref();
    Load {
        metadata: LoadMetadata {
            schema_version: "0.0.1",
            cfg_id: &r.plan_hash,
            description: format!("{}: stage {}", r.scenario, s.name),
        },
        standardized: Standardized {
            tool: "infermeter",
            tool_version: &r.infermeter_version,
            parallelism: r.shards.as_ref().map_or(1, |sh| sh.count.max(1)),
            source: "unknown",
            stage: index,
            input_seq_len: SeqLen {
                distribution: "other",
                value: mean(s.tokens.input),
            },
            output_seq_len: (ok > 0).then(|| SeqLen {
                distribution: "other",
                value: mean(s.tokens.output),
            }),
            multi_turn: (!s.per_turn.is_empty()).then_some(MultiTurn { enabled: true }),
            rate_qps: s.planned.rate_per_s.filter(|q| q.is_finite() && *q > 0.0),
            concurrency: s.planned.clients.filter(|c| *c >= 1),
        },
        native: Native {
            config: NativeConfig {
                scenario: &r.scenario,
                stage: &s.name,
                plan_hash: &r.plan_hash,
                seed: r.seed,
                api: r.target.api.as_str(),
                model: &r.target.model,
                scenario_file: provenance.map(|p| p.scenario_file.as_str()),
                scenario_sha256: provenance.map(|p| p.scenario_sha256.as_str()),
            },
            args: provenance
                .filter(|p| !p.command_line.is_empty())
                .map(|p| NativeArgs {
                    command_line: &p.command_line,
                }),
        },
    }
}

fn requests(s: &StageSummary) -> Requests {
    let ok = s.requests.ok;
    let mean = |total: u64| Statistics::mean_only("count", total as f64 / ok as f64);
    Requests {
        total: s.requests.sent,
        failures: s.requests.failed,
        input_length: (ok > 0).then(|| mean(s.tokens.input)),
        output_length: (ok > 0).then(|| mean(s.tokens.output)),
    }
}

fn latency(s: &StageSummary) -> LatencyBlock {
    let dist = |m: LatencyMetric, units: &'static str| {
        s.latency
            .get(m)
            .filter(|d| d.count > 0)
            .map(|d| Statistics::of(units, d))
    };
    LatencyBlock {
        time_to_first_token: dist(LatencyMetric::Ttft, "ms"),
        normalized_time_per_output_token: dist(LatencyMetric::Ntpot, "ms/token"),
        time_per_output_token: dist(LatencyMetric::Tpot, "ms/token"),
        inter_token_latency: dist(LatencyMetric::Itl, "ms/token"),
        request_latency: dist(LatencyMetric::E2e, "ms"),
    }
}

fn throughput(s: &StageSummary) -> ThroughputBlock {
    let t = &s.throughput;
    let rate = |units, v: f64| Statistics::mean_only(units, v);
    ThroughputBlock {
        input_token_rate: rate("tokens/s", t.input_tokens_per_s),
        output_token_rate: rate("tokens/s", t.output_tokens_per_s),
        total_token_rate: rate("tokens/s", t.input_tokens_per_s + t.output_tokens_per_s),
        request_rate: rate("queries/s", t.requests_per_s),
    }
}

#[derive(Serialize)]
struct Report<'a> {
    version: &'static str,
    run: Run<'a>,
    scenario: Scenario<'a>,
    results: ResultsBlock,
}

#[derive(Serialize)]
struct Run<'a> {
    /// This report: the run and the stage's index.
    uid: String,
    /// The run (every stage's report shares it): plan hash and start time.
    eid: String,
    time: RunTime<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    keywords: Option<&'a [String]>,
}

#[derive(Serialize)]
struct RunTime<'a> {
    /// The run's start and end (UTC, RFC 3339, which is ISO 8601)…
    start: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    end: Option<&'a str>,
    /// … and the stage's measured wall time.
    duration: String,
}

#[derive(Serialize)]
struct Scenario<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    stack: Option<Vec<Component>>,
    load: Load<'a>,
}

/// The serving engine, from `provenance.infra`: an `inference_engine` component when the GPU
/// model is known (the schema requires its accelerator), else a `generic` one.
#[derive(Serialize)]
struct Component {
    metadata: ComponentMetadata,
    standardized: serde_json::Value,
    native: serde_json::Map<String, serde_json::Value>,
}

#[derive(Serialize)]
struct ComponentMetadata {
    schema_version: &'static str,
    label: String,
    cfg_id: String,
}

/// The engine component, when the run knows the engine and its version.
fn stack(r: &Results) -> Option<Vec<Component>> {
    let infra = &r.provenance.as_ref()?.infra;
    let get = |k: &str| infra.get(k).map(|f| f.value.clone());
    let (tool, version) = (get("engine")?, get("engine_version")?);
    let count = |k: &str| get(k).and_then(|v| v.parse::<u64>().ok());
    let standardized = match get("gpu_model") {
        Some(model) => serde_json::json!({
            "kind": "inference_engine",
            "tool": tool,
            "tool_version": version,
            "role": "replica",
            "replicas": count("replicas").unwrap_or(1).max(1),
            "model": { "name": r.target.model },
            "accelerator": {
                "model": model,
                "count": count("gpu_count").unwrap_or(0),
                "parallelism": {},
            },
        }),
        None => serde_json::json!({ "kind": "generic", "tool": tool, "tool_version": version }),
    };
    let cfg_id = {
        use sha2::{Digest, Sha256};
        let d = Sha256::digest(standardized.to_string().as_bytes());
        d.iter().take(8).map(|b| format!("{b:02x}")).collect()
    };
    Some(vec![Component {
        metadata: ComponentMetadata {
            schema_version: "0.0.1",
            label: "engine".into(),
            cfg_id,
        },
        standardized,
        native: serde_json::Map::new(),
    }])
}

#[derive(Serialize)]
struct Load<'a> {
    metadata: LoadMetadata<'a>,
    standardized: Standardized<'a>,
    native: Native<'a>,
}

#[derive(Serialize)]
struct LoadMetadata<'a> {
    schema_version: &'static str,
    cfg_id: &'a str,
    description: String,
}

#[derive(Serialize)]
struct Standardized<'a> {
    tool: &'static str,
    tool_version: &'a str,
    parallelism: u32,
    /// The results do not say how prompts were made (a data set, generated text).
    source: &'static str,
    stage: usize,
    input_seq_len: SeqLen,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_seq_len: Option<SeqLen>,
    #[serde(skip_serializing_if = "Option::is_none")]
    multi_turn: Option<MultiTurn>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rate_qps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    concurrency: Option<u32>,
}

/// A sequence length: the mean measured over the successful requests (results keep sums,
/// not the distribution), hence `other`.
#[derive(Serialize)]
struct SeqLen {
    distribution: &'static str,
    value: f64,
}

#[derive(Serialize)]
struct MultiTurn {
    enabled: bool,
}

#[derive(Serialize)]
struct Native<'a> {
    config: NativeConfig<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<NativeArgs<'a>>,
}

/// What reruns the stage: the scenario file (by name and hash) and the plan it compiled to.
#[derive(Serialize)]
struct NativeConfig<'a> {
    scenario: &'a str,
    stage: &'a str,
    plan_hash: &'a str,
    seed: u64,
    api: &'static str,
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    scenario_file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scenario_sha256: Option<&'a str>,
}

/// The command line as results keep it (secrets already masked there).
#[derive(Serialize)]
struct NativeArgs<'a> {
    command_line: &'a [String],
}

#[derive(Serialize)]
struct ResultsBlock {
    request_performance: RequestPerformance,
}

#[derive(Serialize)]
struct RequestPerformance {
    aggregate: Aggregate,
}

#[derive(Serialize)]
struct Aggregate {
    requests: Requests,
    latency: LatencyBlock,
    throughput: ThroughputBlock,
}

#[derive(Serialize)]
struct Requests {
    total: u64,
    failures: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_length: Option<Statistics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_length: Option<Statistics>,
}

#[derive(Serialize)]
struct LatencyBlock {
    #[serde(skip_serializing_if = "Option::is_none")]
    time_to_first_token: Option<Statistics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    normalized_time_per_output_token: Option<Statistics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    time_per_output_token: Option<Statistics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inter_token_latency: Option<Statistics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_latency: Option<Statistics>,
}

#[derive(Serialize)]
struct ThroughputBlock {
    input_token_rate: Statistics,
    output_token_rate: Statistics,
    total_token_rate: Statistics,
    request_rate: Statistics,
}

/// The schema's `Statistics`: the percentiles infermeter keeps (no p0.1…p25, no mode or
/// standard deviation: histograms would give them, results do not carry them).
#[derive(Serialize)]
struct Statistics {
    units: &'static str,
    mean: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p90: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p95: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p99: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p99p9: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max: Option<f64>,
}

impl Statistics {
    fn mean_only(units: &'static str, mean: f64) -> Statistics {
        Statistics {
            units,
            mean,
            min: None,
            p50: None,
            p90: None,
            p95: None,
            p99: None,
            p99p9: None,
            max: None,
        }
    }

    fn of(units: &'static str, d: &Dist) -> Statistics {
        Statistics {
            units,
            mean: d.mean,
            min: Some(d.min),
            p50: Some(d.p50),
            p90: Some(d.p90),
            p95: Some(d.p95),
            p99: Some(d.p99),
            p99p9: Some(d.p999),
            max: Some(d.max),
        }
    }
}
