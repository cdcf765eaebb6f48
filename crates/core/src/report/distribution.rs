//! The latency distribution of a stage: TTFT, ITL, TPOT and E2E, each drawn from its whole
//! histogram as the share of samples slower than x (a CCDF) on a log tail axis labelled in
//! percentiles — p50 near the top, p99.9 near the bottom — so the body and the tail both read,
//! with the stage's SLA thresholds as labelled vertical lines. Several runs (a comparison)
//! overlay in the same panels.

use hdrhistogram::Histogram;

use super::ReportError;
use super::svg::style::{self, Style};
use super::svg::{Axis, Doc, LegendEntry, Orient, Rect, Scale, Tick};
use crate::metrics::{Aggregation, Dist, LatencyMetric, Metric, StageSummary};
use crate::sla::SlaVerdict;

/// Points per curve: enough for one per pixel row of the tail axis.
const LEVELS: usize = 160;
/// The tail axis stops at this share (p99.99) even with more samples.
const FLOOR: f64 = 1e-4;

/// The metrics drawn, in order (each panel titled with the metric's label).
pub const DISTRIBUTION_METRICS: [LatencyMetric; 4] = [
    LatencyMetric::Ttft,
    LatencyMetric::Itl,
    LatencyMetric::Tpot,
    LatencyMetric::E2e,
];

/// One run's curve: (latency ms, share of samples slower) points, and whether it came from
/// the whole histogram (`false`: only the recorded percentiles, for results written before
/// histograms were kept).
struct Curve {
    points: Vec<(f64, f64)>,
    exact: bool,
}

/// The quantile function sampled at shares slower from 1 down to 1/n (or [`FLOOR`]),
/// geometrically, so the points are even along the log axis; the max closes the curve.
fn histogram_curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let n = h.len();
    if n == 0 {
        return Vec::new();
    }
    let low = (1.0 / n as f64).max(FLOOR);
    let mut pts: Vec<(f64, f64)> = Vec::with_capacity(LEVELS + 2);
    for k in 0..=LEVELS {
        let share = (low.ln() * k as f64 / LEVELS as f64).exp();
        let q = (1.0 - share).clamp(0.0, 1.0);
        let x = h.value_at_quantile(q) as f64 / 1000.0;
        if pts.last().is_none_or(|&(px, py)| px != x || py != share) {
            pts.push((x, share));
        }
    }
    pts.push((h.max() as f64 / 1000.0, low));
    pts
}

/// The recorded percentiles only: p0 (min) to the max.
fn percentile_curve(d: &Dist) -> Vec<(f64, f64)> {
    let floor = (1.0 / d.count.max(1) as f64).max(FLOOR);
    [
        (d.min, 1.0),
        (d.p50, 0.5),
        (d.p90, 0.1),
        (d.p95, 0.05),
        (d.p99, 0.01),
        (d.p999, 0.001),
        (d.max, floor),
    ]
    .into_iter()
    .filter(|&(_, share)| share >= floor)
    .collect()
}

fn curve(s: &StageSummary, m: LatencyMetric) -> Option<Curve> {
    let d = s.latency.get(m).filter(|d| d.count > 0)?;
    match s.histogram(m) {
        Some(Ok(h)) if !h.is_empty() => Some(Curve {
            points: histogram_curve(&h),
            exact: true,
        }),
        _ => Some(Curve {
            points: percentile_curve(d),
            exact: false,
        }),
    }
}

/// The latency thresholds of `verdicts` on metric `m`: (threshold ms, label).
fn thresholds(verdicts: &[&SlaVerdict], m: LatencyMetric) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for v in verdicts {
        let a = &v.assertion;
        let drawn = matches!(
            a.aggregation,
            Some(Aggregation::Percentile(_) | Aggregation::Max | Aggregation::Mean)
        );
        if a.metric != Metric::Latency(m) || !drawn || !v.threshold.is_finite() {
            continue;
        }
        let label = format!("{a}: {}", v.outcome.as_str());
        if !out.iter().any(|(t, l)| *t == v.threshold && *l == label) {
            out.push((v.threshold, label));
        }
    }
    out
}

/// The percentile ticks of the tail axis down to `low`.
fn tail_ticks(low: f64) -> Vec<Tick> {
    [
        (1.0, "p0"),
        (0.5, "p50"),
        (0.1, "p90"),
        (0.05, "p95"),
        (0.01, "p99"),
        (0.001, "p99.9"),
        (0.0001, "p99.99"),
    ]
    .into_iter()
    .filter(|(v, _)| *v >= low * 0.999)
    .map(|(value, label)| Tick {
        value,
        label: label.to_string(),
    })
    .collect()
}

/// One panel: a metric and the curves of the runs that have samples of it.
struct Panel {
    metric: LatencyMetric,
    /// (index into the runs, curve).
    curves: Vec<(usize, Curve)>,
}

/// A run's style: the last run solid, earlier ones (baselines) dashed with hollow markers.
fn run_style(runs: usize, i: usize) -> Style {
    if runs > 1 && i + 1 < runs {
        style::series(i + 1).as_baseline()
    } else {
        Style {
            dash: "",
            ..style::series(0)
        }
    }
}

/// The distribution plot of one stage (`runs` has one entry) or of the same stage in several
/// runs (baseline first, drawn dashed with hollow markers). `verdicts` are the SLA verdicts
/// that apply to the stage. `None` when no run has a latency sample.
pub fn distribution_svg(
    title: &str,
    runs: &[(&str, &StageSummary)],
    verdicts: &[&SlaVerdict],
) -> Result<Option<String>, ReportError> {
    let panels: Vec<Panel> = DISTRIBUTION_METRICS
        .iter()
        .map(|&metric| Panel {
            metric,
            curves: runs
                .iter()
                .enumerate()
                .filter_map(|(i, (_, s))| curve(s, metric).map(|c| (i, c)))
                .collect(),
        })
        .filter(|p| !p.curves.is_empty())
        .collect();
    if panels.is_empty() {
        return Ok(None);
    }
    let cols = if panels.len() == 1 { 1 } else { 2 };
    let rows = panels.len().div_ceil(cols);
    let (w, panel_h) = (900.0, 300.0);
    let mut legend: Vec<LegendEntry> = runs
        .iter()
        .enumerate()
        .map(|(i, (label, s))| LegendEntry {
            label: if label.is_empty() {
                s.name.clone()
            } else {
                (*label).to_string()
            },
            style: run_style(runs.len(), i),
        })
        .collect();
    let any_threshold = panels
        .iter()
        .any(|p| !thresholds(verdicts, p.metric).is_empty());
    if any_threshold {
        legend.push(LegendEntry {
            label: "SLA threshold".into(),
            style: style::THRESHOLD,
        });
    }
    let mut doc = Doc::new("latency-distribution", title, w, 0.0);
    let top = doc.legend(34.0, &legend);
    let approx = panels
        .iter()
        .any(|p| p.curves.iter().any(|(_, c)| !c.exact));
    let height = top + rows as f64 * panel_h + if approx { 22.0 } else { 6.0 };
    doc.set_height(height);
    for (k, panel) in panels.iter().enumerate() {
        let (col, row) = (k % cols, k / cols);
        let outer = Rect {
            x: col as f64 * (w / cols as f64),
            y: top + row as f64 * panel_h,
            w: w / cols as f64,
            h: panel_h,
        };
        draw_panel(
            &mut doc,
            outer,
            panel,
            runs,
            &thresholds(verdicts, panel.metric),
        );
    }
    if approx {
        doc.note(
            16.0,
            height - 8.0,
            "start",
            "drawn through the recorded percentiles only: this result stores no histograms",
        );
    }
    Ok(Some(doc.finish()))
}

/// One metric's panel in `outer`: every run's curve, and the SLA thresholds `lines` on it.
fn draw_panel(
    doc: &mut Doc,
    outer: Rect,
    panel: &Panel,
    runs: &[(&str, &StageSummary)],
    lines: &[(f64, String)],
) {
    let (m, curves) = (panel.metric, &panel.curves);
    let name = m.label();
    let xs = curves
        .iter()
        .flat_map(|(_, c)| c.points.iter().map(|p| p.0))
        .chain(lines.iter().map(|l| l.0));
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for x in xs {
        if x > 0.0 {
            lo = lo.min(x);
        }
        hi = hi.max(x);
    }
    if !lo.is_finite() {
        lo = 0.001;
    }
    let x = Scale::auto(lo, hi.max(lo));
    let low = curves
        .iter()
        .flat_map(|(_, c)| c.points.iter().map(|p| p.1))
        .fold(1.0, f64::min);
    let y_lo = 10f64.powf(low.log10().floor()).min(0.1);
    let counts: Vec<String> = curves
        .iter()
        .map(|(i, _)| runs[*i].1.latency[m].count.to_string())
        .collect();
    let panel_title = format!("{name} (n = {})", counts.join(" / "));
    let p = doc.panel(
        &panel_title,
        outer,
        &Axis::new(
            x,
            format!("{name} (ms{})", if x.is_log() { ", log scale" } else { "" }),
        ),
        &Axis::new(Scale::Log { lo: y_lo, hi: 1.0 }, "percentile (log tail)")
            .with_ticks(tail_ticks(y_lo)),
    );
    for (i, c) in curves {
        let st = run_style(runs.len(), *i);
        let every = (c.points.len() / 6).max(1);
        doc.series(&p, name, runs[*i].0, st, &c.points, every);
    }
    for (value, label) in lines {
        doc.reference(
            &p,
            Orient::Vertical,
            "threshold",
            *value,
            label,
            style::THRESHOLD,
        );
    }
    doc.end_panel();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_fall_from_one_to_one_over_n_and_rise_in_latency() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 86_400_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 100).unwrap();
        }
        let c = histogram_curve(&h);
        assert_eq!(c.first().unwrap().1, 1.0);
        assert!((c.last().unwrap().1 - 0.001).abs() < 1e-12);
        assert!(c.windows(2).all(|w| w[1].0 >= w[0].0 && w[1].1 <= w[0].1));
        // Uniform over 0.1..100 ms: the share slower than x is 1 - x / 100 all along.
        for &(x, share) in &c[..c.len() - 1] {
            assert!((x - (1.0 - share) * 100.0).abs() < 0.25, "({x}, {share})");
        }
        assert!(c.len() <= LEVELS + 2);
    }
}
