//! The report's view model: [`Results`] turned into display-ready strings (units, rounding,
//! icons) so templates only lay things out. Custom templates get both this (`view`) and the
//! raw results (`results`).

use serde::Serialize;

use super::names::{Plot, cdf_file_name, timeline_file_name};
use super::numbers::{num, short};
use super::view_rows::{
    KeyValue, LatencyRow, TurnRow, client_rows, kv, latency_row, latency_rows, load_rows,
    throughput_rows, turn_rows,
};

use crate::metrics::{LatencyMetric, Metric, StageSummary};
use crate::protocol::Answer;
use crate::results::Results;
use crate::sla::{SlaOutcome, SlaVerdict};

#[derive(Debug, Serialize)]
pub struct ReportView {
    pub passed: bool,
    pub icon: &'static str,
    /// `PASSED`, `FAILED`, `INCONCLUSIVE` or `INTERRUPTED`.
    pub outcome: &'static str,
    /// What the outcome rests on: `1 of 4 SLA assertions undecided, 1 stage untrusted`.
    pub verdict: String,
    pub sla_total: usize,
    pub sla_failed: usize,
    pub sla_undecided: usize,
    /// `95 %`: the confidence of every interval shown.
    pub confidence: String,
    /// The target's answers stream (they have a TTFT and ITL): false for a pooling API and
    /// `stream #false`, whose tables show no such column.
    pub streamed: bool,
    /// Every verdict, failed ones first.
    pub verdicts: Vec<VerdictRow>,
    pub stages: Vec<StageView>,
    pub repro: Vec<KeyValue>,
    /// The telemetry section (`templates/telemetry.md.j2`); `None` without telemetry.
    pub telemetry: Option<super::TelemetryView>,
    /// The server's configurations side by side (`configs.rs`); `None` without them.
    pub configs: Option<super::ConfigsView>,
    /// `network { … }`: the shaping proxy's account (`network.rs`); `None` without one.
    pub network: Option<Vec<KeyValue>>,
    /// The MLPerf preset's verdict (`mlperf.rs`); `None` without a preset.
    pub mlperf: Option<super::MlperfView>,
}

#[derive(Debug, Serialize)]
pub struct VerdictRow {
    pub icon: &'static str,
    pub passed: bool,
    /// `pass`, `fail` or `inconclusive`.
    pub outcome: &'static str,
    pub expr: String,
    pub stage: String,
    pub observed: String,
    /// `[38.2, 47.9]` in the observed's unit, empty without one.
    pub interval: String,
    /// For an undecided one: `about 300 more requests would likely decide it`.
    pub more: String,
    pub threshold: String,
    /// `+15.7 % over` / `12.0 % under`, empty when the threshold is 0.
    pub margin: String,
    pub note: String,
}

#[derive(Debug, Serialize)]
pub struct StageView {
    pub name: String,
    pub trusted: bool,
    pub reasons: Vec<String>,
    pub sla_failed: usize,
    /// Verdicts on the stage that are undecided (none failed: then its heading says so).
    pub sla_undecided: usize,
    pub load: Vec<KeyValue>,
    pub latency: Vec<LatencyRow>,
    pub throughput: Vec<KeyValue>,
    /// The answers' quality (docs/quality.md); empty when the data set checks none.
    pub quality: Vec<KeyValue>,
    pub errors: Vec<ErrorRow>,
    pub client: Vec<KeyValue>,
    pub plots: Vec<Plot>,
    /// Multi-turn sessions: one row per turn index (empty otherwise).
    pub per_turn: Vec<TurnRow>,
    /// A target with several URLs: one row per URL (empty otherwise).
    pub per_url: Vec<super::urls::UrlRow>,
    /// The latency figures carry confidence intervals.
    pub intervals: bool,
    /// Rounds the stage ran (0 or 1: once).
    pub rounds: usize,
    /// Where the TTFT went, by the server's account (empty when it gave none).
    pub attribution: Vec<super::AttributionRow>,
    /// Where those figures come from.
    pub attribution_source: String,
    /// Notes on the stage that do not make it untrusted.
    pub notes: Vec<String>,
    /// Requests sent again on a fresh connection (the server closed a reused one).
    pub retried: u64,
    /// The steady-state window's figures beside the whole stage's, when it has one.
    pub steady: Option<SteadyView>,
    /// A stage split by `model` or `class`: a row per label, the first-token column's label,
    /// and the priority check's sentence.
    pub groups: Vec<super::groups::GroupRow>,
    pub group_first: &'static str,
    /// Whether the labels' rows show an accuracy, and a judge's score.
    pub group_accuracy: bool,
    pub group_judge: bool,
    pub priority: Option<String>,
}

/// A stage's steady-state window: where it lay, and its figures.
#[derive(Debug, Serialize)]
pub struct SteadyView {
    /// "4–10 s of 11.3 (ramp 4 s, drain 1.3 s) · 212 requests · 6.1 in flight (peak 7.0)".
    pub window: String,
    pub latency: Vec<LatencyRow>,
    pub throughput: Vec<KeyValue>,
}

fn steady_view(s: &StageSummary) -> Option<SteadyView> {
    let w = s.steady.as_ref()?;
    let t = &w.throughput;
    Some(SteadyView {
        window: format!(
            "{}–{} s of {} (ramp {} s, drain {} s) · {} requests · {} in flight on average (peak {}, \
             a second counts at {} % of it)",
            short(w.from_s),
            short(w.to_s),
            num(s.wall_time_s),
            short(w.from_s),
            num((s.wall_time_s - w.to_s).max(0.0)),
            w.requests.sent,
            num(w.mean_in_flight),
            num(w.peak_in_flight),
            short(w.ratio * 100.0)
        ),
        latency: w
            .latency
            .iter()
            .filter(|(_, d)| d.count > 0)
            .map(|(m, d)| latency_row(m.label().to_string(), d))
            .collect(),
        throughput: vec![
            kv("requests", format!("{} req/s", num(t.requests_per_s))),
            kv(
                "output tokens",
                format!("{} tok/s", num(t.output_tokens_per_s)),
            ),
            kv("goodput", format!("{} req/s", num(t.goodput_per_s))),
        ],
    })
}

#[derive(Debug, Serialize)]
pub struct ErrorRow {
    pub kind: String,
    pub count: u64,
    pub share: String,
}

fn with_unit(v: f64, unit: &str) -> String {
    match unit {
        "%" => format!("{} %", short(v)),
        "" => short(v),
        u => format!("{} {u}", short(v)),
    }
}

/// How many verdicts on stage `name` came out `outcome`.
fn on_stage(verdicts: &[SlaVerdict], name: &str, outcome: SlaOutcome) -> usize {
    verdicts
        .iter()
        .filter(|v| v.outcome == outcome && v.stage.as_deref() == Some(name))
        .count()
}

fn verdict_row(r: &Results, v: &SlaVerdict) -> VerdictRow {
    let margin = match v.relative_margin() {
        Some(m) if m >= 0.0 => format!("{:+.1} % over", m * 100.0),
        Some(m) => format!("{:.1} % under", -m * 100.0),
        None => String::new(),
    };
    VerdictRow {
        icon: match v.outcome {
            SlaOutcome::Pass => "✅",
            SlaOutcome::Fail => "❌",
            SlaOutcome::Inconclusive => "❔",
        },
        passed: v.passed,
        outcome: v.outcome.as_str(),
        expr: v.assertion.to_string(),
        stage: v.stage.clone().unwrap_or_else(|| "all".into()),
        observed: super::absence(r, v)
            .map_or_else(|| with_unit(v.observed, v.unit()), str::to_string),
        interval: v.interval.map_or_else(String::new, |i| {
            format!("[{}, {}]", num(i.low), num(i.high))
        }),
        more: v.more.map_or_else(String::new, |m| m.to_string()),
        threshold: with_unit(v.threshold, v.unit()),
        margin,
        note: match (&v.note, v.gates) {
            (Some(n), true) => n.clone(),
            (None, true) => String::new(),
            (Some(n), false) => format!("{}; {n}", crate::sla::NOT_GATING),
            (None, false) => crate::sla::NOT_GATING.to_string(),
        },
    }
}

/// The header the classes' priorities went in, when they went in one: as code (a header name
/// may hold a backtick; the template escapes what lies inside the span).
fn priority_header_row(t: &crate::results::TargetInfo) -> Option<KeyValue> {
    let h = t.priority_header.as_ref()?;
    Some(kv("priority header", format!("`{h}`")))
}

/// `warm-up | latency_stable after 4.0 s (57 requests): TTFT coefficient of variation …`, for
/// a warm-up that ran until stable.
fn warmup_row(w: Option<&StageSummary>) -> Option<KeyValue> {
    let w = w?;
    let end = w.warmup_end.as_ref()?;
    Some(kv(
        "warm-up",
        format!(
            "until stable: {} after {:.1} s ({} requests, {} checks): {}",
            end.reason.as_str(),
            end.at_s,
            w.requests.sent,
            end.checks,
            end.detail
        ),
    ))
}

fn stage_view(
    s: &StageSummary,
    answer: Answer,
    verdicts: &[SlaVerdict],
    plot_files: &[String],
) -> StageView {
    let r = &s.requests;
    let share = |n: u64| {
        if r.sent == 0 {
            "–".to_string()
        } else {
            format!("{} %", num(n as f64 / r.sent as f64 * 100.0))
        }
    };
    let groups = super::groups::group_rows(s);
    let (group_accuracy, group_judge) = super::groups::quality_columns(&groups);
    StageView {
        intervals: s.latency[LatencyMetric::E2e].intervals.is_some(),
        attribution: s
            .attribution
            .as_ref()
            .map(super::attribution::rows)
            .unwrap_or_default(),
        attribution_source: s
            .attribution
            .as_ref()
            .map(super::attribution::source_text)
            .unwrap_or_default(),
        notes: s
            .until_decided
            .iter()
            .map(super::summary::until_sentence)
            .chain(s.notes.iter().cloned())
            .collect(),
        retried: s.requests.retried,
        steady: steady_view(s),
        groups,
        group_first: super::groups::first_label(s),
        group_accuracy,
        group_judge,
        priority: super::groups::priority_sentence(s),
        rounds: if s.rounds.len() > 1 {
            s.rounds.len()
        } else {
            0
        },
        name: s.name.clone(),
        trusted: s.validity.trusted,
        reasons: s.validity.reasons.clone(),
        sla_failed: on_stage(verdicts, &s.name, SlaOutcome::Fail),
        sla_undecided: on_stage(verdicts, &s.name, SlaOutcome::Inconclusive),
        load: load_rows(s),
        latency: latency_rows(s, answer),
        throughput: throughput_rows(s, answer),
        quality: super::quality::rows(s),
        errors: r
            .errors
            .iter()
            .map(|(kind, &count)| ErrorRow {
                kind: kind.clone(),
                count,
                share: share(count),
            })
            .collect(),
        client: client_rows(&s.client),
        plots: stage_plots(s, answer, plot_files),
        per_turn: turn_rows(s),
        per_url: Vec::new(),
    }
}

/// The stage's plots that were drawn beside the report.
fn stage_plots(s: &StageSummary, answer: Answer, plot_files: &[String]) -> Vec<Plot> {
    let mut plots = Vec::new();
    let drawn: Vec<&str> = super::DISTRIBUTION_METRICS
        .iter()
        .filter(|m| Metric::Latency(**m).applies_to(answer))
        .map(|m| m.label())
        .collect();
    let cdf = format!("latency distribution ({})", drawn.join(", "));
    for (file, alt) in [
        (cdf_file_name(&s.name), cdf.as_str()),
        (
            timeline_file_name(&s.name),
            "latency and throughput over time",
        ),
    ] {
        if plot_files.contains(&file) {
            plots.push(Plot {
                alt: format!("{}: {alt}", s.name),
                file,
            });
        }
    }
    plots
}

/// Builds the view; `plot_files` are the plot file names that exist next to the report.
pub fn build_view(results: &Results, plot_files: &[String]) -> ReportView {
    let count = |o: SlaOutcome| {
        results
            .sla
            .iter()
            .filter(|v| v.gates && v.outcome == o)
            .count()
    };
    let mut verdicts: Vec<&SlaVerdict> = results.sla.iter().collect();
    // Those that gate first, each part failed first, then undecided, then passed.
    verdicts.sort_by_key(|v| {
        let rank = match v.outcome {
            SlaOutcome::Fail => 0,
            SlaOutcome::Inconclusive => 1,
            SlaOutcome::Pass => 2,
        };
        (!v.gates, rank)
    });
    let h = super::headline(results);
    let t = &results.target;
    ReportView {
        passed: results.passed,
        icon: h.icon,
        outcome: h.word,
        verdict: h.detail,
        sla_total: results.sla.iter().filter(|v| v.gates).count(),
        sla_failed: count(SlaOutcome::Fail),
        sla_undecided: count(SlaOutcome::Inconclusive),
        confidence: format!("{} %", short(results.sla_policy.confidence * 100.0)),
        streamed: Metric::Latency(LatencyMetric::Ttft).applies_to(t.answer()),
        verdicts: verdicts
            .into_iter()
            .map(|v| verdict_row(results, v))
            .collect(),
        stages: results
            .stages
            .iter()
            .map(|s| {
                let mut v = StageView {
                    per_url: super::urls::rows(t.routes.as_ref(), s),
                    ..stage_view(s, t.answer(), &results.sla, plot_files)
                };
                let spec = super::spec::rows(s, results.telemetry.as_ref());
                v.throughput
                    .extend(spec.into_iter().map(|(k, val)| kv(k, val)));
                v
            })
            .collect(),
        repro: vec![
            kv("scenario", results.scenario.clone()),
            kv("plan hash", format!("`{}`", results.plan_hash)),
            kv("seed", results.seed.to_string()),
            kv("infermeter", results.infermeter_version.clone()),
            // As code: a URL shown as text would be an autolink (which escaping breaks).
            kv("target", format!("`{}` ({})", t.endpoint, t.api)),
            kv("model", t.model.clone()),
            kv("tokenizer", format!("`{}`", t.tokenizer)),
        ]
        .into_iter()
        .chain(priority_header_row(t))
        .chain([
            kv("started", results.started_at.clone()),
            kv("schema version", results.schema_version.to_string()),
        ])
        .chain(provenance_rows(results))
        .chain(warmup_row(results.warmup.as_ref()))
        .collect(),
        telemetry: super::telemetry::results_view(results, plot_files),
        configs: super::configs_view(results),
        network: t.network.as_ref().map(super::network::rows),
        mlperf: super::mlperf_view(results),
    }
}

/// The provenance as display rows (none for results written before it was kept).
fn provenance_rows(results: &Results) -> Vec<KeyValue> {
    let Some(p) = &results.provenance else {
        return Vec::new();
    };
    let h = &p.host;
    let mut rows = vec![
        kv(
            "build",
            format!(
                "{} (commit `{}`)",
                p.build.version,
                short_commit(&p.build.commit)
            ),
        ),
        kv("ended", p.ended_at.clone()),
        kv(
            "scenario file",
            format!(
                "`{}` (sha256 `{}`)",
                p.scenario_file,
                short_commit(&p.scenario_sha256)
            ),
        ),
    ];
    if !p.command_line.is_empty() {
        rows.push(kv(
            "command line",
            format!("`{}`", p.command_line.join(" ")),
        ));
    }
    if !p.params.is_empty() {
        let params: Vec<String> = p.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        rows.push(kv("params", format!("`{}`", params.join(" "))));
    }
    if !p.tags.is_empty() {
        rows.push(kv("tags", p.tags.join(", ")));
    }
    let host = match &h.hostname {
        Some(n) => format!("{n} · "),
        None => String::new(),
    };
    rows.push(kv(
        "host",
        format!(
            "{host}{} × {} · {} · {} · {}",
            h.cpus, h.cpu_model, h.kernel, h.os, h.arch
        ),
    ));
    if let Some(server) = &p.server {
        let answered: Vec<&str> = server.endpoints.keys().map(String::as_str).collect();
        let summary = server.summary().unwrap_or_else(|| "unidentified".into());
        rows.push(kv(
            "server",
            if answered.is_empty() {
                summary
            } else {
                format!("{summary} (answered: {})", answered.join(", "))
            },
        ));
    }
    if !p.infra.is_empty() {
        rows.push(kv("infrastructure", infra_text(&p.infra)));
    }
    if let Some(s) = &p.started_server {
        let stopped = if s.stopped.is_empty() {
            "running"
        } else {
            &s.stopped
        };
        rows.push(kv(
            "started server",
            format!(
                "`{}` (ready in {:.1} s, {stopped})",
                s.command.join(" "),
                s.startup_ms / 1000.0
            ),
        ));
    }
    rows
}

/// `engine vLLM (/version) · gpu_count 8 (declared)`, a contradicted declaration said.
fn infra_text(infra: &crate::results::Infra) -> String {
    infra
        .iter()
        .map(|(name, f)| match &f.declared {
            Some(d) => format!("{name} {} ({}; declared {d})", f.value, f.source),
            None => format!("{name} {} ({})", f.value, f.source),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The first 12 characters of a commit or hash.
fn short_commit(c: &str) -> &str {
    c.get(..12).unwrap_or(c)
}
