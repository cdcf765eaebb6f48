//! The telemetry part of the report: the section of report.md (energy, tokens per joule,
//! throttling, queue and KV usage per stage), as display-ready data ([`TelemetryView`],
//! the view's `telemetry`) that `templates/telemetry.md.j2` lays out, and one SVG per stage
//! with server queue depth and KV-cache usage over time next to the stage's latency, on the
//! same time axis (seconds since the stage started).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::value::Serde;
use minijinja::{Value, context};
use serde::Serialize;

use super::ReportError;
use super::names::{Plot, server_timeline_file_name};
use super::templates::{TELEMETRY_TEMPLATE_NAME, environment};
use super::timeline::{sending_stopped_s, stacked_time_panels, steady_bounds};
use crate::metrics::StageSummary;
use crate::results::{Results, write_atomic};
use crate::telemetry::{StageTelemetry, TelemetryReport, tokens_per_joule};

type Points = Vec<(f64, f64)>;
type Series = (&'static str, Points);

/// The telemetry section, display-ready: numbers formatted, `–` where there is none.
#[derive(Debug, Serialize)]
pub struct TelemetryView {
    /// No stage, GPU or server was recorded.
    pub empty: bool,
    /// One row per stage with GPU samples.
    pub gpus: Vec<GpuRow>,
    /// GPUs that throttled during a stage: its numbers are suspect.
    pub throttled: Vec<ThrottledRow>,
    /// One row per stage and server endpoint.
    pub servers: Vec<ServerRow>,
    pub warnings: Vec<String>,
    /// The server plots written beside the report.
    pub plots: Vec<Plot>,
}

#[derive(Debug, Serialize)]
pub struct GpuRow {
    pub stage: String,
    pub energy_j: String,
    pub tokens_per_j: String,
    pub power_w: String,
    pub temp_max_c: String,
    pub clock_ratio_min: String,
    /// `⚠ yes` or `no`.
    pub throttled: &'static str,
}

#[derive(Debug, Serialize)]
pub struct ThrottledRow {
    pub stage: String,
    pub device: String,
    /// Share of samples throttled, `100%`.
    pub share: String,
    pub reasons: String,
}

#[derive(Debug, Serialize)]
pub struct ServerRow {
    pub stage: String,
    pub running_mean: String,
    pub running_max: String,
    pub waiting_mean: String,
    pub waiting_max: String,
    pub kv_cache_mean: String,
    pub kv_cache_max: String,
    pub prefix_cache_hits: String,
}

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.decimals$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{:.0}%", v * 100.0))
}

/// The section's data for `results`; `None` when the run had no telemetry. `plot_files` are
/// the plots beside the report: the server plots among them are linked.
pub(crate) fn results_view(results: &Results, plot_files: &[String]) -> Option<TelemetryView> {
    let report = results.telemetry.as_ref()?;
    let tokens: BTreeMap<String, u64> = results
        .warmup
        .iter()
        .chain(&results.stages)
        .map(|s| (s.name.clone(), s.tokens.output))
        .collect();
    let mut view = telemetry_view(report, &tokens);
    view.plots = results
        .stages
        .iter()
        .map(|s| Plot {
            alt: format!("{}: server queue and KV cache", s.name),
            file: server_timeline_file_name(&s.name),
        })
        .filter(|p| plot_files.contains(&p.file))
        .collect();
    Some(view)
}

/// The section's data for `report`; `output_tokens` maps stage names to their output tokens
/// (stages absent from it get no tokens/J). No plots.
pub fn telemetry_view(
    report: &TelemetryReport,
    output_tokens: &BTreeMap<String, u64>,
) -> TelemetryView {
    let mut view = TelemetryView {
        empty: report.stages.is_empty() && report.gpus.is_empty() && report.servers.is_empty(),
        gpus: Vec::new(),
        throttled: Vec::new(),
        servers: Vec::new(),
        warnings: report.warnings.clone(),
        plots: Vec::new(),
    };
    for s in &report.stages {
        view.gpus
            .extend(gpu_row(s, output_tokens.get(&s.name).copied()));
        view.servers.extend(s.servers.iter().map(|v| ServerRow {
            stage: s.name.clone(),
            running_mean: num(v.running_mean, 1),
            running_max: num(v.running_max, 0),
            waiting_mean: num(v.waiting_mean, 1),
            waiting_max: num(v.waiting_max, 0),
            kv_cache_mean: pct(v.kv_cache_mean),
            kv_cache_max: pct(v.kv_cache_max),
            prefix_cache_hits: pct(v.prefix_cache_hit_rate),
        }));
    }
    // Listed after every stage's row, as the section shows them.
    for s in &report.stages {
        for g in s.primary_gpus().into_iter().filter(|g| g.throttled()) {
            view.throttled.push(ThrottledRow {
                stage: s.name.clone(),
                device: g.device.clone(),
                share: format!("{:.0}%", g.throttled_share * 100.0),
                reasons: if g.throttle_reasons.is_empty() {
                    "clock below 90% of max".to_string()
                } else {
                    g.throttle_reasons.join(", ")
                },
            });
        }
    }
    view
}

fn gpu_row(s: &StageTelemetry, tokens: Option<u64>) -> Option<GpuRow> {
    let gpus = s.primary_gpus();
    if gpus.is_empty() {
        return None;
    }
    let power: Option<f64> = gpus.iter().map(|g| g.power_mean_w).sum();
    let temp = gpus.iter().filter_map(|g| g.temp_max_c).reduce(f64::max);
    let ratio = gpus
        .iter()
        .filter_map(|g| g.clock_ratio_min)
        .reduce(f64::min);
    Some(GpuRow {
        stage: s.name.clone(),
        energy_j: num(s.energy_j(), 0),
        tokens_per_j: num(tokens.and_then(|t| tokens_per_joule(s, t)), 2),
        power_w: num(power, 0),
        temp_max_c: num(temp, 0),
        clock_ratio_min: num(ratio, 2),
        throttled: if gpus.iter().any(|g| g.throttled()) {
            "⚠ yes"
        } else {
            "no"
        },
    })
}

/// The telemetry section of `report` alone, as report.md shows it (without plots).
pub fn render_telemetry(
    report: &TelemetryReport,
    output_tokens: &BTreeMap<String, u64>,
) -> Result<String, ReportError> {
    let env = environment();
    let view = context! { telemetry => Value::from(Serde(&telemetry_view(report, output_tokens))) };
    Ok(env
        .get_template(TELEMETRY_TEMPLATE_NAME)?
        .render(context! { view => view })?)
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
    stacked_time_panels(
        "server-timeline",
        &format!("{}: server load and latency", stage.name),
        t_max,
        sending_stopped_s(stage),
        steady_bounds(stage),
        panels,
    )
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::{GpuStageSummary, ServerStageSummary};

    fn rich() -> TelemetryReport {
        let gpu = |dev: &str, share: f64, reasons: Vec<String>| GpuStageSummary {
            source: "nvml".into(),
            device: dev.into(),
            samples: 4,
            temp_max_c: Some(71.4),
            clock_ratio_min: Some(0.83),
            throttled_share: share,
            throttle_reasons: reasons,
            energy_j: Some(1234.5),
            power_mean_w: Some(300.2),
            ..Default::default()
        };
        let server = ServerStageSummary {
            source: "http://x/metrics".into(),
            samples: 3,
            running_mean: Some(3.25),
            running_max: Some(7.0),
            waiting_mean: None,
            waiting_max: Some(2.0),
            kv_cache_mean: Some(0.456),
            kv_cache_max: Some(0.9),
            prefix_cache_hit_rate: None,
            ..Default::default()
        };
        TelemetryReport {
            stages: vec![
                StageTelemetry {
                    name: "a".into(),
                    gpus: vec![gpu("0", 0.5, vec![]), gpu("1", 0.0, vec![])],
                    servers: vec![server.clone()],
                    ..Default::default()
                },
                StageTelemetry {
                    name: "b b".into(),
                    gpus: vec![gpu("0", 1.0, vec!["hw_slowdown".into(), "sw_power".into()])],
                    ..Default::default()
                },
                StageTelemetry {
                    name: "c".into(),
                    servers: vec![server.clone(), server],
                    ..Default::default()
                },
            ],
            warnings: vec!["w1".into(), "w | 2".into()],
            ..Default::default()
        }
    }

    #[test]
    fn the_section_shows_energy_throttling_queues_and_warnings() {
        let tokens = BTreeMap::from([("a".to_string(), 5000u64)]);
        let md = render_telemetry(&rich(), &tokens).unwrap();
        let expected = "## Telemetry

| stage | energy (J) | tokens/J | mean power (W) | max temp (°C) | min clock ratio | throttled |
| --- | ---: | ---: | ---: | ---: | ---: | --- |
| a | 2469 | 2.03 | 600 | 71 | 0.83 | ⚠ yes |
| b b | 1234 | – | 300 | 71 | 0.83 | ⚠ yes |

- ⚠ stage `a`: GPU 0 throttled in 50% of samples (clock below 90% of max); its latency and throughput numbers are suspect.
- ⚠ stage `b b`: GPU 0 throttled in 100% of samples (hw\\_slowdown, sw\\_power); its latency and throughput numbers are suspect.

| stage | running mean / max | waiting mean / max | KV cache mean / max | prefix-cache hits |
| --- | ---: | ---: | ---: | ---: |
| a | 3.2 / 7 | – / 2 | 46% / 90% | – |
| c | 3.2 / 7 | – / 2 | 46% / 90% | – |
| c | 3.2 / 7 | – / 2 | 46% / 90% | – |

Telemetry warnings:

- w1
- w \\| 2
";
        assert_eq!(md, expected);
        let empty = render_telemetry(&TelemetryReport::default(), &tokens).unwrap();
        assert_eq!(empty, "## Telemetry\n\nNo telemetry was recorded.\n");
    }

    #[test]
    fn a_custom_template_places_or_drops_the_section() {
        let text = include_str!("../../../../tests/data/results/sim-telemetry.json");
        let mut r: Results = serde_json::from_str(text).unwrap();
        r.telemetry = Some(rich());
        let render = |text: &str| {
            let t = super::super::ReportTemplate {
                name: "custom".into(),
                text: text.into(),
            };
            super::super::render_report(&r, Some(&t), &[]).unwrap()
        };
        assert_eq!(
            render("# {{ results.scenario }}\n"),
            format!("# {}\n", r.scenario)
        );
        let placed = render("{% include \"telemetry.md.j2\" %}\n# end\n");
        assert!(placed.starts_with("## Telemetry\n"), "{placed}");
        // What came from outside is escaped (a `|` would end a table cell).
        assert!(placed.ends_with("- w \\| 2\n# end\n"), "{placed}");
        let own =
            render("{% for g in view.telemetry.gpus %}{{ g.stage }}={{ g.energy_j }} {% endfor %}");
        assert_eq!(own, "a=2469 b b=1234 ");
        let built_in = super::super::render_report(&r, None, &[]).unwrap();
        assert!(built_in.contains("\n\n## Telemetry\n"), "{built_in}");
    }
}
