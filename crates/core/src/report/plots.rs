//! Every SVG plot of a run: per stage the latency distribution (`distribution.rs`) and the
//! timeline (`timeline.rs`), per profile group its curve (`profile.rs`) and, where its points
//! scored answers, their accuracy against load (`profile_quality.rs`), per stage with server
//! telemetry its timeline (`telemetry.rs`); their names are `names.rs`'s. The SVGs are written by hand (`svg/`): no
//! system fonts, the same bytes for the same results on any machine. Plots are drawn in memory
//! first and written last (each atomically), so a plot that fails loses nothing else of the
//! run.

use std::path::{Path, PathBuf};

use super::ReportError;
use super::distribution::distribution_svg;
use super::names::{
    cdf_file_name, profile_file_name, server_timeline_file_name, timeline_file_name,
};
use super::profile::{profile_svg, profiles};
use super::telemetry::draw_telemetry_plots;
use super::timeline::timeline_svg;
use crate::results::{Results, write_atomic};
use crate::sla::SlaVerdict;

/// The SLA verdicts that apply to `stage`: its own and the scenario-level ones.
pub(crate) fn stage_verdicts<'a>(results: &'a Results, stage: &str) -> Vec<&'a SlaVerdict> {
    results
        .sla
        .iter()
        .filter(|v| v.stage.as_deref().is_none_or(|s| s == stage))
        .collect()
}

/// Every plot of a run that has data, as (file name, SVG), in the order [`draw_plots`] draws
/// them; the first problem when one could not be drawn.
pub fn render_plots(results: &Results) -> Result<Vec<(String, String)>, ReportError> {
    let (plots, problems) = draw_plots(results);
    match problems.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(plots.into_iter().map(|p| (p.file, p.svg)).collect()),
    }
}

/// One plot of a run, drawn but not yet written: its file name (in the run's directory), what
/// it shows (for messages) and its SVG.
#[derive(Debug, Clone)]
pub struct PlotFile {
    pub file: String,
    pub what: String,
    pub svg: String,
}

/// Draws every plot of `results` that has data — per stage its latency distribution and a
/// timeline, one per profile group, and the telemetry server plots — without writing anything. A plot that
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
        let verdicts = stage_verdicts(results, &stage.name);
        add(
            cdf_file_name(&stage.name),
            format!("{}: latency distribution", stage.name),
            distribution_svg(
                &format!("{}: latency distribution", stage.name),
                &[("", stage)],
                &verdicts,
            ),
        );
        add(
            timeline_file_name(&stage.name),
            format!("{}: timeline", stage.name),
            timeline_svg(stage),
        );
    }
    for g in profiles(results) {
        add(
            profile_file_name(&g.group),
            format!("profile {}", g.group),
            profile_svg(&[("", &g)]).map(Some),
        );
        if let Some(file) = &g.quality_plot {
            add(
                file.clone(),
                format!("accuracy of {}", g.group),
                Ok(super::profile_quality::quality_svg(
                    &g,
                    &g.accuracy_thresholds,
                )),
            );
        }
    }
    for f in &results.frontiers {
        add(
            super::frontier_file_name(&f.group),
            format!("frontier {}", f.group),
            Ok(super::frontier_svg(f)),
        );
    }
    for (stage, drawn) in draw_telemetry_plots(results) {
        add(
            server_timeline_file_name(&stage),
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
        .map(|s| server_timeline_file_name(&s.name))
        .collect();
    plots.retain(|p| !server.contains(&p.file));
    let (written, saved) = save_plots(&plots, dir);
    problems.extend(saved);
    match problems.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(written),
    }
}
