//! SVG plots per stage: the latency distribution (see `distribution.rs`) and latency and
//! throughput over time from the stage timeline. The SVGs are written by hand (`svg/`): no
//! system fonts, the same bytes for the same results on any machine. Plots are drawn in memory
//! first and written last (each atomically), so a plot that fails loses nothing else of the
//! run.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::ReportError;
use super::distribution::distribution_svg;
use super::svg::style::{self, Style};
use super::svg::{Axis, Doc, LegendEntry, Orient, Rect, Scale};
use crate::metrics::{StageSummary, TimelinePoint};
use crate::results::{Results, write_atomic};
use crate::sla::SlaVerdict;

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

/// A named series of (x, y) points, drawn in the `i`-th house style.
pub(crate) type Series<'a> = (&'a str, Vec<(f64, f64)>);

/// When sending stopped, in seconds since the stage start: the achieved send rate's span
/// (sent / rate), kept within the last second that sent anything. `None` when nothing was
/// sent.
pub(crate) fn sending_stopped_s(stage: &StageSummary) -> Option<f64> {
    let last = stage.timeline.iter().rev().find(|p| p.sent > 0)?;
    let rate = stage.throughput.achieved_rate_per_s;
    let span = if rate > 0.0 && stage.requests.sent > 1 {
        stage.requests.sent as f64 / rate
    } else {
        last.t_s + 1.0
    };
    Some(span.clamp(
        last.t_s,
        (last.t_s + 1.0).min(stage.wall_time_s.max(last.t_s)),
    ))
}

/// The most points a timeline series draws: a longer stage's seconds are merged in groups, so
/// the plot's size stays flat in the run's length.
const MAX_TIMELINE_POINTS: usize = 900;

/// The timeline's buckets with their width in seconds: every bucket one second wide except
/// the last, which ends at the stage's wall time. A last bucket narrower than half a second is
/// dropped: a count over a sliver of a second, scaled up, is noise. Beyond
/// [`MAX_TIMELINE_POINTS`] seconds, consecutive buckets are merged (counts summed, TTFT p50
/// as the completion-weighted mean of the seconds' medians, E2E p99 as their maximum).
fn buckets(stage: &StageSummary) -> Vec<(TimelinePoint, f64)> {
    let n = stage.timeline.len();
    let one: Vec<(TimelinePoint, f64)> = stage
        .timeline
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let width = if i + 1 == n && stage.wall_time_s > p.t_s {
                (stage.wall_time_s - p.t_s).min(1.0)
            } else {
                1.0
            };
            (width >= 0.5).then(|| (p.clone(), width))
        })
        .collect();
    if one.len() <= MAX_TIMELINE_POINTS {
        return one;
    }
    let k = one.len().div_ceil(MAX_TIMELINE_POINTS);
    one.chunks(k)
        .map(|group| {
            let mut m = TimelinePoint {
                t_s: group[0].0.t_s,
                ..TimelinePoint::default()
            };
            let mut width = 0.0;
            let mut ttft_weighted = 0.0;
            for (p, w) in group {
                m.sent += p.sent;
                m.completed += p.completed;
                m.failed += p.failed;
                m.output_tokens += p.output_tokens;
                ttft_weighted += p.ttft_p50_ms * p.completed as f64;
                m.e2e_p99_ms = m.e2e_p99_ms.max(p.e2e_p99_ms);
                width += w;
            }
            if m.completed > 0 {
                m.ttft_p50_ms = ttft_weighted / m.completed as f64;
            }
            (m, width)
        })
        .collect()
}

/// Three stacked panels over time: latency, requests/s, output tokens/s, with where sending
/// stopped. Rates are per second of each bucket's real width, so the last, partial second
/// shows no fake drop. `None` when the stage has no timeline.
pub fn timeline_svg(stage: &StageSummary) -> Result<Option<String>, ReportError> {
    if stage.timeline.is_empty() {
        return Ok(None);
    }
    let b = buckets(stage);
    // Each rate is drawn at its bucket's middle.
    let rate = |f: &dyn Fn(&TimelinePoint) -> u64| -> Vec<(f64, f64)> {
        b.iter()
            .map(|(p, w)| (p.t_s + w / 2.0, f(p) as f64 / w))
            .collect()
    };
    let latency = |f: &dyn Fn(&TimelinePoint) -> f64| -> Vec<(f64, f64)> {
        b.iter()
            .filter(|(p, _)| p.completed > 0)
            .map(|(p, w)| (p.t_s + w / 2.0, f(p)))
            .collect()
    };
    let panels: [(&str, Vec<Series>); 3] = [
        (
            "latency (ms)",
            vec![
                ("TTFT p50", latency(&|p| p.ttft_p50_ms)),
                ("E2E p99", latency(&|p| p.e2e_p99_ms)),
            ],
        ),
        (
            "requests/s",
            vec![
                ("sent", rate(&|p| p.sent)),
                ("completed", rate(&|p| p.completed)),
                ("failed", rate(&|p| p.failed)),
            ],
        ),
        (
            "output tokens/s",
            vec![("output tok/s", rate(&|p| p.output_tokens))],
        ),
    ];
    let t_max = stage
        .wall_time_s
        .max(stage.timeline.last().map_or(1.0, |p| p.t_s + 1.0));
    let stopped = sending_stopped_s(stage);
    stacked_time_panels(
        "timeline",
        &format!("{}: over time", stage.name),
        t_max,
        stopped,
        panels,
    )
    .map(Some)
}

/// Three stacked panels sharing a time axis (seconds since the stage start), each with its
/// own y axis; one legend above them all, each series in its own house style. Used by the
/// stage timeline and the telemetry server plot.
pub(crate) fn stacked_time_panels(
    kind: &str,
    title: &str,
    t_max: f64,
    sending_stopped: Option<f64>,
    panels: [(&str, Vec<Series>); 3],
) -> Result<String, ReportError> {
    let w = 900.0;
    let mut styles: Vec<(&str, Style)> = Vec::new();
    for (_, series) in &panels {
        for (name, _) in series {
            styles.push((name, style::series(styles.len())));
        }
    }
    let mut legend: Vec<LegendEntry> = styles
        .iter()
        .map(|(name, s)| LegendEntry {
            label: (*name).to_string(),
            style: *s,
        })
        .collect();
    if sending_stopped.is_some() {
        legend.push(LegendEntry {
            label: "sending stopped".into(),
            style: style::NOTE,
        });
    }
    let mut doc = Doc::new(kind, title, w, 0.0);
    let top = doc.legend(34.0, &legend);
    let panel_h = 220.0;
    doc.set_height(top + 3.0 * panel_h + 6.0);
    let x = Scale::linear(0.0, t_max.max(1.0), true);
    let mut k = 0;
    for (i, (y_title, series)) in panels.iter().enumerate() {
        let y_max = series
            .iter()
            .flat_map(|(_, s)| s.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        let p = doc.panel(
            y_title,
            Rect {
                x: 0.0,
                y: top + i as f64 * panel_h,
                w,
                h: panel_h,
            },
            &Axis::new(x, "time since stage start (s)"),
            &Axis::new(Scale::linear(0.0, y_max.max(1.0) * 1.05, true), *y_title),
        );
        for (name, data) in series {
            let st = styles[k].1;
            k += 1;
            let every = (data.len() / 12).max(1);
            doc.series(&p, name, "", st, data, every);
        }
        if let Some(t) = sending_stopped {
            let label = if i == 0 {
                format!("sending stopped ({t:.1} s)")
            } else {
                String::new()
            };
            doc.reference(
                &p,
                Orient::Vertical,
                "sending-stopped",
                t,
                &label,
                style::NOTE,
            );
        }
        doc.end_panel();
    }
    Ok(doc.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage(wall: f64, buckets: &[(f64, u64)]) -> StageSummary {
        let mut s = StageSummary {
            name: "s".into(),
            wall_time_s: wall,
            ..StageSummary::default()
        };
        s.timeline = buckets
            .iter()
            .map(|&(t, n)| TimelinePoint {
                t_s: t,
                sent: n,
                completed: n,
                output_tokens: n * 10,
                ..TimelinePoint::default()
            })
            .collect();
        s.requests.sent = buckets.iter().map(|b| b.1).sum();
        s.throughput.achieved_rate_per_s = 10.0;
        s
    }

    #[test]
    fn the_last_partial_second_is_scaled_by_its_width_or_dropped() {
        // 10 per second, the last 0.6 s sent 6: still 10/s.
        let s = stage(3.6, &[(0.0, 10), (1.0, 10), (2.0, 10), (3.0, 6)]);
        let b = buckets(&s);
        assert_eq!(b.len(), 4);
        let (last, w) = &b[3];
        assert!((last.sent as f64 / w - 10.0).abs() < 1e-9);
        // A 0.2 s sliver is dropped.
        let s = stage(3.2, &[(0.0, 10), (1.0, 10), (2.0, 10), (3.0, 2)]);
        assert_eq!(buckets(&s).len(), 3);
    }

    #[test]
    fn a_long_timeline_is_merged_into_a_bounded_number_of_points() {
        let secs: Vec<(f64, u64)> = (0..36_000).map(|t| (t as f64, 10)).collect();
        let s = stage(36_000.0, &secs);
        let b = buckets(&s);
        assert!(b.len() <= MAX_TIMELINE_POINTS, "{}", b.len());
        // Still 10 per second.
        assert!(
            b.iter()
                .all(|(p, w)| (p.sent as f64 / w - 10.0).abs() < 1e-9)
        );
        let svg = timeline_svg(&s).unwrap().unwrap();
        assert!(svg.len() < 400_000, "{} bytes", svg.len());
    }

    #[test]
    fn sending_stops_where_the_send_rate_says() {
        let s = stage(3.6, &[(0.0, 10), (1.0, 10), (2.0, 10), (3.0, 6)]);
        // 36 sent at 10/s: 3.6 s.
        assert!((sending_stopped_s(&s).unwrap() - 3.6).abs() < 1e-9);
        assert_eq!(sending_stopped_s(&StageSummary::default()), None);
    }
}
