//! Latency profiles: the points of each sweep or search gathered into a table against offered
//! load, with the knee and the SLA-compliant maximum marked, and an SVG of TTFT p50/p99, ITL
//! p99 and output tokens/s against load (several runs can share one plot, for `compare`).
//!
//! Knee rule: walking up the load, a step is "bad" when the point is saturated, when output
//! throughput rose by less than half as much (relatively) as the load did, or when TTFT p99
//! exceeds [`KNEE_TTFT_FACTOR`] × the lowest-load point's. The knee is the last point before
//! the first bad step.

use plotters::prelude::*;
use serde::Serialize;

use super::ReportError;
use crate::metrics::{PointKind, StageSummary};
use crate::results::Results;

/// TTFT p99 above this multiple of the lowest-load value counts as "rising sharply".
pub const KNEE_TTFT_FACTOR: f64 = 5.0;
/// Throughput must grow at least this fraction of the relative load increase.
pub const KNEE_MIN_GAIN: f64 = 0.5;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProfileRow {
    pub stage: String,
    /// Offered rate (req/s) or clients.
    pub load: f64,
    /// What the schedule actually held (sent / planned duration) for open-loop points; the
    /// knee rule compares throughput with this, so a Poisson draw off its mean is not a knee.
    pub scheduled: f64,
    pub ttft_p50_ms: f64,
    pub ttft_p99_ms: f64,
    pub itl_p99_ms: f64,
    pub output_tokens_per_s: f64,
    pub saturated: bool,
    pub client_bound: bool,
    /// Every SLA verdict on this point held (search probes: the probe's verdict).
    pub sla_ok: bool,
    pub knee: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProfileGroup {
    pub group: String,
    /// `req/s` or `clients`.
    pub axis: &'static str,
    pub kind: &'static str,
    /// Sorted by load.
    pub rows: Vec<ProfileRow>,
    pub knee_load: Option<f64>,
    /// Highest load whose SLAs held (a search's answer).
    pub sla_max_load: Option<f64>,
    /// The plot's file name (written beside the report unless plots are off).
    pub plot: String,
}

/// Index of the knee in `(load, ttft_p99, output_tps, saturated)` points sorted by load
/// (`load` as actually scheduled).
pub fn knee(points: &[(f64, f64, f64, bool)]) -> Option<usize> {
    let first = points.first()?;
    let base_ttft = first.1;
    for i in 1..points.len() {
        let (l0, _, t0, _) = points[i - 1];
        let (l1, ttft, t1, sat) = points[i];
        let load_gain = if l0 > 0.0 { l1 / l0 - 1.0 } else { 1.0 };
        let tput_gain = if t0 > 0.0 { t1 / t0 - 1.0 } else { 1.0 };
        let flat = load_gain > 0.0 && tput_gain < KNEE_MIN_GAIN * load_gain;
        let sharp = base_ttft > 0.0 && ttft > KNEE_TTFT_FACTOR * base_ttft;
        if sat || flat || sharp {
            return Some(i - 1);
        }
    }
    None
}

/// Every profile group of a run, in the order its first point appears.
pub fn profiles(results: &Results) -> Vec<ProfileGroup> {
    let mut groups: Vec<ProfileGroup> = Vec::new();
    for s in &results.stages {
        let Some(p) = &s.profile else { continue };
        let sla_ok = match p.passed {
            Some(v) => v,
            None => results
                .sla
                .iter()
                .filter(|v| v.stage.as_deref() == Some(s.name.as_str()))
                .all(|v| v.passed),
        };
        let mut row = row(s, p.load(), p.saturated, p.client_bound, sla_ok);
        if p.offered_rate_per_s.is_some()
            && s.requests.sent > 0
            && let Some(d) = s.planned.duration_s.filter(|d| *d > 0.0)
        {
            row.scheduled = s.requests.sent as f64 / d;
        }
        match groups.iter_mut().find(|g| g.group == p.group) {
            Some(g) => g.rows.push(row),
            None => groups.push(ProfileGroup {
                group: p.group.clone(),
                axis: if p.offered_rate_per_s.is_some() {
                    "req/s"
                } else {
                    "clients"
                },
                kind: match p.kind {
                    PointKind::Sweep => "sweep",
                    PointKind::Probe => "search",
                },
                rows: vec![row],
                knee_load: None,
                sla_max_load: None,
                plot: profile_file_name(&p.group),
            }),
        }
    }
    for g in &mut groups {
        g.rows.sort_by(|a, b| a.load.total_cmp(&b.load));
        let pts: Vec<_> = g
            .rows
            .iter()
            .map(|r| {
                (
                    r.scheduled,
                    r.ttft_p99_ms,
                    r.output_tokens_per_s,
                    r.saturated,
                )
            })
            .collect();
        // A search's probes are too short and too few below its answer for a knee to mean much.
        if let Some(k) = knee(&pts).filter(|_| g.kind == "sweep") {
            g.rows[k].knee = true;
            g.knee_load = Some(g.rows[k].load);
        }
        let search = results.searches.iter().find(|s| s.group == g.group);
        g.sla_max_load = match search {
            Some(s) => s.answer_clients.map(f64::from).or(s.answer_rate_per_s),
            None => g
                .rows
                .iter()
                .filter(|r| r.sla_ok)
                .map(|r| r.load)
                .reduce(f64::max),
        };
    }
    groups
}

fn row(
    s: &StageSummary,
    load: f64,
    saturated: bool,
    client_bound: bool,
    sla_ok: bool,
) -> ProfileRow {
    ProfileRow {
        stage: s.name.clone(),
        load,
        scheduled: load,
        ttft_p50_ms: s.latency.ttft_ms.p50,
        ttft_p99_ms: s.latency.ttft_ms.p99,
        itl_p99_ms: s.latency.itl_ms.p99,
        output_tokens_per_s: s.throughput.output_tokens_per_s,
        saturated,
        client_bound,
        sla_ok,
        knee: false,
    }
}

/// File name of a group's profile plot.
pub fn profile_file_name(group: &str) -> String {
    format!("profile-{}.svg", super::stage_slug(group))
}

fn plot_err<E: std::fmt::Display>(e: E) -> ReportError {
    ReportError::Plot(e.to_string())
}

/// Latency (left, ms) and output tokens/s (right) against load, one line style per series and
/// one colour per run; the knee and SLA maximum of the first run are marked.
pub fn profile_svg(runs: &[(&str, &ProfileGroup)]) -> Result<String, ReportError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let all = || runs.iter().flat_map(|(_, g)| g.rows.iter());
        let max_x = all().map(|r| r.load).fold(1.0, f64::max) * 1.05;
        let max_y = all()
            .map(|r| r.ttft_p99_ms.max(r.itl_p99_ms))
            .fold(1.0, f64::max)
            * 1.1;
        let max_t = all().map(|r| r.output_tokens_per_s).fold(1.0, f64::max) * 1.1;
        let title = runs.first().map_or("profile", |(_, g)| g.group.as_str());
        let axis = runs.first().map_or("load", |(_, g)| g.axis);
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("latency profile: {title}"), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .right_y_label_area_size(56)
            .build_cartesian_2d(0.0..max_x, 0.0..max_y)
            .map_err(plot_err)?
            .set_secondary_coord(0.0..max_x, 0.0..max_t);
        chart
            .configure_mesh()
            .x_desc(format!("offered load ({axis})"))
            .y_desc("latency (ms)")
            .draw()
            .map_err(plot_err)?;
        chart
            .configure_secondary_axes()
            .y_desc("output tokens/s")
            .draw()
            .map_err(plot_err)?;
        let palette = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
        for (i, (label, g)) in runs.iter().enumerate() {
            let c = palette[i % palette.len()];
            let pts = |f: fn(&ProfileRow) -> f64| -> Vec<(f64, f64)> {
                g.rows.iter().map(|r| (r.load, f(r))).collect()
            };
            for (name, f, width) in [
                (
                    "TTFT p50",
                    (|r: &ProfileRow| r.ttft_p50_ms) as fn(&ProfileRow) -> f64,
                    1,
                ),
                ("TTFT p99", |r: &ProfileRow| r.ttft_p99_ms, 3),
                ("ITL p99", |r: &ProfileRow| r.itl_p99_ms, 2),
            ] {
                chart
                    .draw_series(LineSeries::new(pts(f), c.stroke_width(width)))
                    .map_err(plot_err)?
                    .label(format!("{label} {name}"))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(width))
                    });
            }
            chart
                .draw_secondary_series(
                    LineSeries::new(pts(|r| r.output_tokens_per_s), c.mix(0.5).stroke_width(1))
                        .point_size(4),
                )
                .map_err(plot_err)?
                .label(format!("{label} output tok/s (right)"))
                .legend(move |(x, y)| Circle::new((x + 8, y), 4, c.filled()));
            if i == 0 {
                for (at, colour) in [(g.knee_load, BLACK), (g.sla_max_load, GREEN)] {
                    if let Some(x) = at {
                        chart
                            .draw_series(LineSeries::new(
                                vec![(x, 0.0), (x, max_y)],
                                colour.stroke_width(1),
                            ))
                            .map_err(plot_err)?;
                    }
                }
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server of capacity `cap`: throughput follows load then flattens; TTFT climbs past it.
    fn curve(cap: f64, loads: &[f64]) -> Vec<(f64, f64, f64, bool)> {
        loads
            .iter()
            .map(|&l| {
                let rho = (l / cap).min(0.99);
                let ttft = if l < cap {
                    20.0 / (1.0 - rho)
                } else {
                    20.0 * 50.0 * l / cap
                };
                (l, ttft, l.min(cap) * 16.0, l > cap * 1.1)
            })
            .collect()
    }

    #[test]
    fn knee_sits_before_capacity() {
        let loads = [5.0, 10.0, 15.0, 20.0, 35.0, 50.0];
        let k = knee(&curve(25.0, &loads)).unwrap();
        assert_eq!(loads[k], 20.0);
        let k = knee(&curve(12.0, &loads)).unwrap();
        assert_eq!(loads[k], 10.0);
    }

    #[test]
    fn no_knee_below_capacity_and_flat_throughput_alone_is_one() {
        assert_eq!(knee(&curve(100.0, &[5.0, 10.0, 20.0])), None);
        let flat = [
            (1.0, 10.0, 100.0, false),
            (2.0, 10.0, 190.0, false),
            (4.0, 11.0, 200.0, false),
        ];
        assert_eq!(knee(&flat), Some(1));
        assert_eq!(knee(&[]), None);
    }
}
