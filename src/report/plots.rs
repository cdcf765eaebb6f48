//! SVG plots per stage: a latency CDF (TTFT and E2E, as a step CDF through the recorded
//! percentiles) and latency/throughput over time from the stage timeline. SVG text needs no
//! system fonts, so this works on any CI runner. Plots are drawn in memory first and written
//! last (each atomically), so a plot that fails loses nothing else of the run.

use std::path::{Path, PathBuf};

use plotters::prelude::*;
use sha2::{Digest, Sha256};

use super::ReportError;
use crate::metrics::{Dist, StageSummary};
use crate::results::{Results, write_atomic};

/// The longest slug kept whole; longer or lossy ones are cut to [`SLUG_PREFIX`] characters and
/// given a hash.
const SLUG_MAX: usize = 64;
const SLUG_PREFIX: usize = 48;

/// A name made safe for a file name and a Markdown link, bounded and one-to-one: a name that is
/// already a slug (`a`–`z`, `0`–`9`, `-`, `_`, at most 64 characters) is kept as it is; any
/// other gets its first 48 characters lower-cased, other characters replaced by `-`, and the
/// first 8 hex digits of its sha256 (`Load A` → `load-a-5e1c0b1d`), so `Load A` and `load-a`
/// get different files and a 300-character name a file name any file system takes.
pub fn stage_slug(name: &str) -> String {
    let clean = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
    if !name.is_empty() && name.len() <= SLUG_MAX && name.chars().all(clean) {
        return name.to_string();
    }
    let mut slug: String = name
        .chars()
        .take(SLUG_PREFIX)
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if clean(c) { c } else { '-' }
        })
        .collect();
    if slug.is_empty() {
        slug.push_str("stage");
    }
    let digest = Sha256::digest(name.as_bytes());
    for b in &digest[..4] {
        slug.push_str(&format!("{b:02x}"));
    }
    // The hash after a `-`, unless the cut name already ends with one.
    if !slug[..slug.len() - 8].ends_with('-') {
        slug.insert(slug.len() - 8, '-');
    }
    slug
}

pub fn cdf_file_name(stage: &str) -> String {
    format!("stage-{}-latency-cdf.svg", stage_slug(stage))
}

pub fn timeline_file_name(stage: &str) -> String {
    format!("stage-{}-timeline.svg", stage_slug(stage))
}

/// One plot of a run, drawn but not yet written: its file name (in the run's directory), what
/// it shows (for messages) and its SVG.
#[derive(Debug, Clone)]
pub struct PlotFile {
    pub file: String,
    pub what: String,
    pub svg: String,
}

/// Draws every plot of `results` that has data — per stage a latency CDF and a timeline, one
/// per profile group, and the telemetry server plots — without writing anything. A plot that
/// cannot be drawn, or whose file name another plot already has, is a problem, and the
/// others are still drawn.
pub fn draw_plots(results: &Results) -> (Vec<PlotFile>, Vec<ReportError>) {
    let mut plots: Vec<PlotFile> = Vec::new();
    let mut problems = Vec::new();
    let mut add =
        |file: String, what: String, drawn: Result<Option<String>, ReportError>| match drawn {
            Ok(None) => {}
            Err(e) => problems.push(e),
            Ok(Some(svg)) => match plots.iter().find(|p| p.file == file) {
                Some(first) => problems.push(ReportError::PlotCollision {
                    file,
                    first: first.what.clone(),
                    second: what,
                }),
                None => plots.push(PlotFile { file, what, svg }),
            },
        };
    for stage in &results.stages {
        add(
            cdf_file_name(&stage.name),
            format!("{}: latency CDF", stage.name),
            latency_cdf_svg(stage),
        );
        add(
            timeline_file_name(&stage.name),
            format!("{}: timeline", stage.name),
            timeline_svg(stage),
        );
    }
    for g in super::profiles(results) {
        add(
            super::profile_file_name(&g.group),
            format!("profile {}", g.group),
            super::profile_svg(&[("", &g)]).map(Some),
        );
    }
    for (stage, drawn) in super::telemetry::draw_telemetry_plots(results) {
        add(
            super::server_timeline_file_name(&stage),
            format!("{stage}: server"),
            drawn,
        );
    }
    (plots, problems)
}

/// Writes `plots` into `dir`, each atomically; the files written, and a problem per plot that
/// could not be.
pub fn save_plots(plots: &[PlotFile], dir: &Path) -> (Vec<PathBuf>, Vec<ReportError>) {
    let mut written = Vec::new();
    let mut problems = Vec::new();
    for p in plots {
        let path = dir.join(&p.file);
        match write_atomic(&path, p.svg.as_bytes()) {
            Ok(()) => written.push(path),
            Err(e) => problems.push(ReportError::io(&path, e)),
        }
    }
    (written, problems)
}

/// Writes every plot that has data into `dir` (telemetry plots aside: see
/// [`super::write_telemetry_plots`]); returns the files written, or the first problem.
pub fn write_plots(results: &Results, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| ReportError::io(dir, e))?;
    let (mut plots, mut problems) = draw_plots(results);
    let server: Vec<String> = results
        .stages
        .iter()
        .map(|s| super::server_timeline_file_name(&s.name))
        .collect();
    plots.retain(|p| !server.contains(&p.file));
    let (written, saved) = save_plots(&plots, dir);
    problems.extend(saved);
    match problems.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(written),
    }
}

fn plot_err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Plot(e.to_string())
}

/// The (latency, cumulative share) corners of a step CDF through the recorded percentiles.
fn cdf_steps(d: &Dist) -> Vec<(f64, f64)> {
    let corners = [
        (d.min, 0.0),
        (d.p50, 0.5),
        (d.p90, 0.9),
        (d.p95, 0.95),
        (d.p99, 0.99),
        (d.p999, 0.999),
        (d.max, 1.0),
    ];
    let mut steps: Vec<(f64, f64)> = Vec::with_capacity(corners.len() * 2);
    for (x, y) in corners {
        // A positive floor keeps the log axis defined for 0 ms samples.
        let x = x.max(0.001);
        if let Some(&(_, prev_y)) = steps.last() {
            steps.push((x, prev_y));
        }
        steps.push((x, y));
    }
    steps
}

/// TTFT and E2E CDFs on a log latency axis (TTFT is often 100× shorter than E2E); `None` when
/// neither has samples.
pub fn latency_cdf_svg(stage: &StageSummary) -> Result<Option<String>, ReportError> {
    let series: Vec<(&str, &Dist, RGBColor)> = [
        ("TTFT", &stage.latency.ttft_ms, RGBColor(31, 119, 180)),
        ("E2E", &stage.latency.e2e_ms, RGBColor(214, 39, 40)),
    ]
    .into_iter()
    .filter(|(_, d, _)| d.count > 0)
    .collect();
    if series.is_empty() {
        return Ok(None);
    }
    let lo = series
        .iter()
        .map(|(_, d, _)| d.min.max(0.001))
        .fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .map(|(_, d, _)| d.max)
        .fold(lo * 10.0, f64::max);
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (760, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{}: latency CDF", stage.name), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d((lo * 0.9..hi * 1.1).log_scale(), 0.0..1.0)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc("latency (ms, log scale)")
            .y_desc("share of requests")
            .draw()
            .map_err(plot_err)?;
        for (name, dist, color) in series {
            chart
                .draw_series(LineSeries::new(cdf_steps(dist), color.stroke_width(2)))
                .map_err(plot_err)?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(Some(buf))
}

pub(crate) type Series<'a> = (&'a str, Vec<(f64, f64)>, RGBColor);

/// Three stacked panels over time: latency, requests/s, output tokens/s. `None` when the stage
/// has no timeline.
pub fn timeline_svg(stage: &StageSummary) -> Result<Option<String>, ReportError> {
    let tl = &stage.timeline;
    if tl.is_empty() {
        return Ok(None);
    }
    let pts = |f: &dyn Fn(&crate::metrics::TimelinePoint) -> f64| -> Vec<(f64, f64)> {
        tl.iter().map(|p| (p.t_s, f(p))).collect()
    };
    let panels: [(&str, Vec<Series>); 3] = [
        (
            "latency (ms)",
            vec![
                ("TTFT p50", pts(&|p| p.ttft_p50_ms), RGBColor(31, 119, 180)),
                ("E2E p99", pts(&|p| p.e2e_p99_ms), RGBColor(214, 39, 40)),
            ],
        ),
        (
            "requests/s",
            vec![
                ("sent", pts(&|p| p.sent as f64), RGBColor(127, 127, 127)),
                (
                    "completed",
                    pts(&|p| p.completed as f64),
                    RGBColor(44, 160, 44),
                ),
                ("failed", pts(&|p| p.failed as f64), RGBColor(214, 39, 40)),
            ],
        ),
        (
            "output tokens/s",
            vec![(
                "output tok/s",
                pts(&|p| p.output_tokens as f64),
                RGBColor(148, 103, 189),
            )],
        ),
    ];
    let t_max = tl.iter().map(|p| p.t_s).fold(1.0, f64::max) + 1.0;
    stacked_time_panels(&format!("{}: over time", stage.name), t_max, panels).map(Some)
}

/// Three stacked panels sharing a time axis (seconds since the stage start), each with its
/// own y axis and legend. Used by the stage timeline and the telemetry server plot.
pub(crate) fn stacked_time_panels(
    title: &str,
    t_max: f64,
    panels: [(&str, Vec<Series>); 3],
) -> Result<String, ReportError> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (760, 720)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let root = root.titled(title, ("sans-serif", 20)).map_err(plot_err)?;
        let areas = root.split_evenly((3, 1));
        for (area, (y_desc, series)) in areas.iter().zip(panels) {
            let y_max = series
                .iter()
                .flat_map(|(_, s, _)| s.iter().map(|p| p.1))
                .fold(1.0, f64::max)
                * 1.1;
            let mut chart = ChartBuilder::on(area)
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..t_max, 0.0..y_max)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_desc("time since stage start (s)")
                .y_desc(y_desc)
                .draw()
                .map_err(plot_err)?;
            for (name, data, color) in series {
                chart
                    .draw_series(LineSeries::new(data, color.stroke_width(2)))
                    .map_err(plot_err)?
                    .label(name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperRight)
                .draw()
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(buf)
}
