//! Baseline comparison: per stage and watched metric, the relative change from a baseline run
//! and whether it is better, the same (within tolerance) or worse. Rendered as Markdown through
//! `templates/compare.md.j2` or as plain text.

use minijinja::value::Serde;
use minijinja::{Value, context};
use serde::Serialize;

use super::ReportError;
use super::markdown::{COMPARE_TEMPLATE, environment};
use super::view::{num, short};
use crate::metrics::StageSummary;
use crate::results::Results;
use crate::sla::{Aggregation, Metric, Percentile, latency_dist, observe};

/// An error-rate change smaller than this many percentage points is noise, whatever its
/// relative size (0 → 0.05 % is "infinitely" worse but one request in 2000).
pub const ERROR_RATE_NOISE_PP: f64 = 0.1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Better,
    Same,
    Worse,
    /// One side has no value (no samples, no requests).
    #[serde(rename = "n/a")]
    NotComparable,
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricChange {
    /// `ttft.p95`, `output_throughput`, `error_rate`.
    pub metric: String,
    pub unit: &'static str,
    pub baseline: Option<f64>,
    pub current: Option<f64>,
    /// Relative change in percent (`+12.5`), when both sides exist and the baseline is not 0.
    pub change_pct: Option<f64>,
    pub verdict: Change,
    /// Display strings for templates.
    pub baseline_text: String,
    pub current_text: String,
    pub change_text: String,
    pub icon: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct StageComparison {
    pub name: String,
    /// Both runs' numbers for this stage were trusted.
    pub trusted: bool,
    pub metrics: Vec<MetricChange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub scenario: String,
    pub baseline_plan_hash: String,
    pub current_plan_hash: String,
    pub same_plan: bool,
    pub baseline_started_at: String,
    pub current_started_at: String,
    /// Tolerance in percent.
    pub tolerance_pct: f64,
    pub stages: Vec<StageComparison>,
    /// Stages present in only one of the runs.
    pub only_in_baseline: Vec<String>,
    pub only_in_current: Vec<String>,
    /// `stage: metric (+x %)` for every metric worse beyond tolerance.
    pub regressions: Vec<String>,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        !self.regressions.is_empty()
    }
}

/// The watched metrics: (metric, aggregation, lower is better).
fn watched() -> Vec<(Metric, Option<Aggregation>, bool)> {
    let mut out = Vec::new();
    for m in [
        Metric::Ttft,
        Metric::Itl,
        Metric::Tpot,
        Metric::E2e,
        Metric::Ntpot,
    ] {
        for p in [Percentile::P50, Percentile::P95, Percentile::P99] {
            out.push((m, Some(Aggregation::Percentile(p)), true));
        }
    }
    out.push((Metric::RequestThroughput, None, false));
    out.push((Metric::OutputThroughput, None, false));
    out.push((Metric::InputThroughput, None, false));
    out.push((Metric::ErrorRate, None, true));
    out
}

/// Whether the stage's distribution has enough samples for the percentile to mean
/// something: at least ten beyond it (p50: 20, p95: 200, p99: 1,000). A p99 of 60 requests is
/// their slowest one, and one stall of a shared machine moves it by any amount.
fn enough_samples(metric: Metric, agg: Option<Aggregation>, stage: &StageSummary) -> bool {
    match (agg, latency_dist(metric, stage)) {
        (Some(Aggregation::Percentile(p)), Some(d)) => d.count >= min_samples(p),
        _ => true,
    }
}

/// Samples a percentile needs: ten beyond it.
pub fn min_samples(p: Percentile) -> u64 {
    (10.0 / (1.0 - p.value() / 100.0)).round() as u64
}

fn classify(metric: Metric, base: f64, cur: f64, lower_is_better: bool, tol: f64) -> Change {
    let delta = cur - base;
    if metric == Metric::ErrorRate && delta.abs() <= ERROR_RATE_NOISE_PP {
        return Change::Same;
    }
    let beyond = if base != 0.0 {
        (delta / base).abs() > tol
    } else {
        delta != 0.0
    };
    match (beyond, (delta < 0.0) == lower_is_better) {
        (false, _) => Change::Same,
        (true, true) => Change::Better,
        (true, false) => Change::Worse,
    }
}

fn compare_stage(base: &StageSummary, cur: &StageSummary, tol: f64) -> StageComparison {
    let metrics = watched()
        .into_iter()
        .map(|(metric, agg, lower_is_better)| {
            let name = match agg {
                Some(a) => format!("{metric}.{a}"),
                None => metric.to_string(),
            };
            let unit = metric.kind().unit();
            let b = observe(metric, agg, base).ok();
            let c = observe(metric, agg, cur).ok();
            let enough = enough_samples(metric, agg, base) && enough_samples(metric, agg, cur);
            let (verdict, change_pct) = match (b, c) {
                (Some(b), Some(c)) => (
                    if enough {
                        classify(metric, b, c, lower_is_better, tol)
                    } else {
                        Change::NotComparable
                    },
                    (b != 0.0).then(|| (c - b) / b * 100.0),
                ),
                _ => (Change::NotComparable, None),
            };
            let text =
                |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{} {unit}", num(v)));
            MetricChange {
                metric: name,
                unit,
                baseline: b,
                current: c,
                change_pct,
                verdict,
                baseline_text: text(b),
                current_text: text(c),
                change_text: match (change_pct, agg) {
                    (Some(p), Some(Aggregation::Percentile(q))) if !enough => {
                        format!("{p:+.1} % (under {} samples)", min_samples(q))
                    }
                    (Some(p), _) => format!("{p:+.1} %"),
                    (None, _) => "–".into(),
                },
                icon: match verdict {
                    Change::Better => "🟢",
                    Change::Same => "⚪",
                    Change::Worse => "🔴",
                    Change::NotComparable => "➖",
                },
            }
        })
        .collect();
    StageComparison {
        name: cur.name.clone(),
        trusted: base.validity.trusted && cur.validity.trusted,
        metrics,
    }
}

/// Compares `current` against `baseline`; `tolerance` is a fraction (0.05 = 5 %).
pub fn compare(baseline: &Results, current: &Results, tolerance: f64) -> Comparison {
    let mut stages = Vec::new();
    let mut regressions = Vec::new();
    for cur in &current.stages {
        let Some(base) = baseline.stages.iter().find(|b| b.name == cur.name) else {
            continue;
        };
        let sc = compare_stage(base, cur, tolerance);
        for m in sc.metrics.iter().filter(|m| m.verdict == Change::Worse) {
            regressions.push(format!("{}: {} ({})", sc.name, m.metric, m.change_text));
        }
        stages.push(sc);
    }
    let names = |r: &Results| r.stages.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    let (base_names, cur_names) = (names(baseline), names(current));
    Comparison {
        scenario: current.scenario.clone(),
        baseline_plan_hash: baseline.plan_hash.clone(),
        current_plan_hash: current.plan_hash.clone(),
        same_plan: baseline.plan_hash == current.plan_hash,
        baseline_started_at: baseline.started_at.clone(),
        current_started_at: current.started_at.clone(),
        tolerance_pct: tolerance * 100.0,
        stages,
        only_in_baseline: base_names
            .iter()
            .filter(|n| !cur_names.contains(n))
            .cloned()
            .collect(),
        only_in_current: cur_names
            .iter()
            .filter(|n| !base_names.contains(n))
            .cloned()
            .collect(),
        regressions,
    }
}

/// Renders a comparison through `templates/compare.md.j2` (or `template`).
pub fn render_compare_markdown(
    c: &Comparison,
    template: Option<&str>,
) -> Result<String, ReportError> {
    let mut env = environment();
    env.add_template_owned(
        "compare.md",
        template.unwrap_or(COMPARE_TEMPLATE).to_string(),
    )?;
    Ok(env
        .get_template("compare.md")?
        .render(context! { cmp => Value::from(Serde(c)), tolerance => short(c.tolerance_pct) })?)
}

/// A plain-text table for terminals.
pub fn render_compare_text(c: &Comparison) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let verdict = if c.regressed() { "REGRESSED" } else { "OK" };
    let _ = writeln!(
        out,
        "{}: {verdict} (tolerance {} %)",
        c.scenario,
        short(c.tolerance_pct)
    );
    if !c.same_plan {
        let _ = writeln!(
            out,
            "warning: plan hashes differ ({} vs {}): the workloads are not the same",
            c.baseline_plan_hash, c.current_plan_hash
        );
    }
    for s in &c.stages {
        let _ = writeln!(
            out,
            "\nstage {}{}",
            s.name,
            if s.trusted {
                ""
            } else {
                " (untrusted numbers)"
            }
        );
        let _ = writeln!(
            out,
            "  {:<20} {:>14} {:>14} {:>9}  verdict",
            "metric", "baseline", "current", "change"
        );
        for m in &s.metrics {
            let v = match m.verdict {
                Change::Better => "better",
                Change::Same => "same",
                Change::Worse => "WORSE",
                Change::NotComparable => "n/a",
            };
            let _ = writeln!(
                out,
                "  {:<20} {:>14} {:>14} {:>9}  {v}",
                m.metric, m.baseline_text, m.current_text, m.change_text
            );
        }
    }
    for n in &c.only_in_baseline {
        let _ = writeln!(out, "\nstage {n} is only in the baseline");
    }
    for n in &c.only_in_current {
        let _ = writeln!(out, "\nstage {n} is only in the current run");
    }
    if c.regressed() {
        let _ = writeln!(out, "\nworse beyond tolerance:");
        for r in &c.regressions {
            let _ = writeln!(out, "  {r}");
        }
    }
    out
}
