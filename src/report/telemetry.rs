//! The telemetry part of the report: the Markdown fragment from `telemetry::render_markdown`
//! (energy, tokens per joule, throttling, queue and KV usage per stage) appended to report.md,
//! and one SVG per stage with server queue depth and KV-cache usage over time next to the
//! stage's latency, on the same time axis (seconds since the stage started).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::ReportError;
use super::plots::stage_slug;
use crate::metrics::StageSummary;
use crate::results::{Results, write_atomic};
use crate::telemetry::{StageTelemetry, TelemetryReport, render_markdown};

type Points = Vec<(f64, f64)>;
type Series = (&'static str, Points);

pub fn server_timeline_file_name(stage: &str) -> String {
    format!("stage-{}-server.svg", stage_slug(stage))
}

/// The Markdown to append to report.md; empty when the run had no telemetry. `plot_files`
/// are the server plots written (file names), linked under the section.
pub fn telemetry_markdown(results: &Results, plot_files: &[String]) -> String {
    let Some(report) = &results.telemetry else {
        return String::new();
    };
    let tokens: BTreeMap<String, u64> = results
        .warmup
        .iter()
        .chain(&results.stages)
        .map(|s| (s.name.clone(), s.tokens.output))
        .collect();
    let mut md = render_markdown(report, &tokens);
    for s in &results.stages {
        let file = server_timeline_file_name(&s.name);
        if plot_files.contains(&file) {
            md.push_str(&format!(
                "\n![{}: server queue and KV cache]({file})\n",
                s.name
            ));
        }
    }
    md
}

/// Draws the per-stage server plots (stages with server samples only): the stage's name and
/// its SVG, or why it could not be drawn.
pub(crate) fn draw_telemetry_plots(
    results: &Results,
) -> Vec<(String, Result<Option<String>, ReportError>)> {
    let Some(report) = &results.telemetry else {
        return Vec::new();
    };
    results
        .stages
        .iter()
        .filter_map(|stage| {
            let t = report.stage(&stage.name)?;
            Some((stage.name.clone(), server_timeline_svg(stage, t, report)))
        })
        .collect()
}

/// Writes the per-stage server plots into `dir` (stages with server samples only), each
/// atomically.
pub fn write_telemetry_plots(results: &Results, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let mut written = Vec::new();
    for (stage, drawn) in draw_telemetry_plots(results) {
        if let Some(svg) = drawn? {
            let path = dir.join(server_timeline_file_name(&stage));
            write_atomic(&path, svg.as_bytes()).map_err(|e| ReportError::io(&path, e))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// Server points inside the stage, re-based to the stage start; summed over endpoints would
/// mislead, so the first endpoint with points in the stage is plotted.
fn server_points(t: &StageTelemetry, report: &TelemetryReport) -> Option<(Points, Points, Points)> {
    let end = t.end_s.unwrap_or(f64::INFINITY);
    for series in &report.servers {
        let pts: Vec<_> = series
            .points
            .iter()
            .filter(|p| p.t_s >= t.start_s && p.t_s <= end)
            .collect();
        if pts.is_empty() {
            continue;
        }
        let get = |f: &dyn Fn(&crate::telemetry::ServerReading) -> Option<f64>| {
            pts.iter()
                .filter_map(|p| f(&p.reading).map(|v| (p.t_s - t.start_s, v)))
                .collect::<Vec<_>>()
        };
        return Some((
            get(&|r| r.running),
            get(&|r| r.waiting),
            get(&|r| r.kv_cache_usage.map(|u| u * 100.0)),
        ));
    }
    None
}

/// Latency, queue depth and KV-cache usage over the stage; `None` without server points.
pub fn server_timeline_svg(
    stage: &StageSummary,
    t: &StageTelemetry,
    report: &TelemetryReport,
) -> Result<Option<String>, ReportError> {
    let Some((running, waiting, kv)) = server_points(t, report) else {
        return Ok(None);
    };
    let latency: Vec<(f64, f64)> = stage
        .timeline
        .iter()
        .filter(|p| p.completed > 0)
        .map(|p| (p.t_s, p.ttft_p50_ms))
        .collect();
    let e2e: Vec<(f64, f64)> = stage
        .timeline
        .iter()
        .filter(|p| p.completed > 0)
        .map(|p| (p.t_s, p.e2e_p99_ms))
        .collect();
    let panels: [(&str, Vec<Series>); 3] = [
        (
            "latency (ms)",
            vec![("TTFT p50", latency), ("E2E p99", e2e)],
        ),
        ("requests", vec![("running", running), ("waiting", waiting)]),
        ("KV cache (%)", vec![("KV usage", kv)]),
    ];
    let t_max = panels
        .iter()
        .flat_map(|(_, s)| s.iter().flat_map(|(_, d)| d.iter().map(|p| p.0)))
        .fold(stage.wall_time_s.max(1.0), f64::max);
    super::plots::stacked_time_panels(
        "server-timeline",
        &format!("{}: server load and latency", stage.name),
        t_max,
        super::plots::sending_stopped_s(stage),
        panels,
    )
    .map(Some)
}
