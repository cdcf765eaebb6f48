//! Answer quality against load, per sweep or search whose points scored answers: each point's
//! accuracy with its Wilson interval (results.json's `quality`, judged once per whole answer)
//! in the profile table's column and in a plot of its own, accuracy against offered load with
//! the interval as a bar, the `accuracy` thresholds asserted on the points and the knee. A
//! server that answers worse under load shows here as the curve falling as the load rises.

use super::names::stage_slug;
use super::numbers::short;
use super::profile_group::{ProfileGroup, RowAccuracy};
use super::svg::canvas::{Axis, Doc, LegendEntry, Rect};
use super::svg::style::{self, Marker, Style};
use super::svg::{Orient, Scale};
use crate::metrics::{CountMetric, Metric, StageSummary};
use crate::results::Results;

/// File name of a group's accuracy-against-load plot.
pub fn quality_file_name(group: &str) -> String {
    format!("quality-{}.svg", stage_slug(group))
}

/// The point's accuracy, when its answers were scored.
pub(crate) fn row_accuracy(s: &StageSummary) -> Option<RowAccuracy> {
    let q = s.quality.as_ref()?;
    let value = q.accuracy? * 100.0;
    let [low, high] = q
        .accuracy_interval
        .map_or([value, value], |[l, h]| [l * 100.0, h * 100.0]);
    Some(RowAccuracy {
        value,
        low,
        high,
        text: format!("{value:.1} % [{low:.1}, {high:.1}]"),
    })
}

/// "accuracy against load: 2: 93.3 % [88.2, 96.3] · 8: …", for the terminal; `None` when no
/// point scored answers.
pub(crate) fn accuracy_line(g: &ProfileGroup) -> Option<String> {
    let points: Vec<String> = g
        .rows
        .iter()
        .filter_map(|r| {
            let a = r.accuracy.as_ref()?;
            Some(format!("{}: {}", short(r.load), a.text))
        })
        .collect();
    (!points.is_empty()).then(|| format!("accuracy against load: {}", points.join(" · ")))
}

/// Names `g`'s accuracy plot and gathers its thresholds, when a point scored answers.
pub(crate) fn settle(results: &Results, g: &mut ProfileGroup) {
    if g.rows.iter().any(|r| r.accuracy.is_some()) {
        g.quality_plot = Some(quality_file_name(&g.group));
        g.accuracy_thresholds = accuracy_thresholds(results, g);
    }
}

/// The `accuracy` thresholds (percent) of the assertions judged on `g`'s points, one per
/// assertion text.
fn accuracy_thresholds(results: &Results, g: &ProfileGroup) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for v in &results.sla {
        let on_group = v
            .stage
            .as_deref()
            .is_some_and(|s| s == g.group || g.rows.iter().any(|r| r.stage == s));
        let expr = v.assertion.to_string();
        if on_group
            && v.threshold.is_finite()
            && v.metric() == Metric::Count(CountMetric::Accuracy)
            && v.assertion.label.is_none()
            && !out.iter().any(|(_, e)| *e == expr)
        {
            out.push((v.threshold, expr));
        }
    }
    out
}

/// The accuracy bar of a point: its interval, drawn as a short vertical line.
const INTERVAL: Style = Style {
    color: "#0072B2",
    dash: "",
    marker: Marker::None,
    width: 1.5,
    filled: true,
};

/// The accuracy, its interval, and the reference lines the plot has.
fn legend(g: &ProfileGroup, thresholds: &[(f64, String)]) -> Vec<LegendEntry> {
    let entry = |label: &str, style: Style| LegendEntry {
        label: label.into(),
        style,
    };
    let mut legend = vec![
        entry("accuracy", style::series(0)),
        entry("its interval", INTERVAL),
    ];
    if !thresholds.is_empty() {
        legend.push(entry("SLA threshold", style::THRESHOLD));
    }
    if g.knee_load.is_some() {
        legend.push(entry("knee", style::NOTE));
    }
    legend
}

/// Accuracy against offered load: a line through the points' accuracies, each point's Wilson
/// interval a bar, the `accuracy` thresholds and the knee as reference lines. `None` when no
/// point scored answers.
pub fn quality_svg(g: &ProfileGroup, thresholds: &[(f64, String)]) -> Option<String> {
    let points: Vec<(f64, &RowAccuracy)> = g
        .rows
        .iter()
        .filter_map(|r| r.accuracy.as_ref().map(|a| (r.load, a)))
        .collect();
    if points.is_empty() {
        return None;
    }
    let w = 900.0;
    let mut doc = Doc::new(
        "quality",
        &format!("answer accuracy against load: {}", g.group),
        w,
        0.0,
    );
    let line = style::series(0);
    let top = doc.legend(34.0, &legend(g, thresholds));
    let h = 320.0;
    doc.set_height(top + h + 6.0);
    let lowest = points
        .iter()
        .map(|(_, a)| a.low)
        .chain(thresholds.iter().map(|t| t.0))
        .fold(100.0, f64::min);
    // Whole tens below the lowest figure: a drop of a few points is not drawn as a cliff.
    let y = Scale::linear(
        ((lowest - 5.0) / 10.0).floor().max(0.0) * 10.0,
        100.0,
        false,
    );
    let max_load = g.rows.iter().map(|r| r.load).fold(0.0, f64::max);
    let x = Scale::linear(0.0, max_load.max(1e-3) * 1.05, true);
    let p = doc.panel(
        "accuracy of the scored answers at each load",
        Rect {
            x: 0.0,
            y: top,
            w,
            h,
        },
        &Axis::new(x, format!("offered load ({})", g.axis)),
        &Axis::new(y, "accuracy (%)"),
    );
    for (load, a) in &points {
        doc.series(
            &p,
            "accuracy interval",
            "",
            INTERVAL,
            &[(*load, a.low), (*load, a.high)],
            0,
        );
    }
    let pts: Vec<(f64, f64)> = points.iter().map(|(l, a)| (*l, a.value)).collect();
    doc.series(&p, "accuracy", "", line, &pts, 1);
    for (value, expr) in thresholds {
        doc.reference(
            &p,
            Orient::Horizontal,
            "threshold",
            *value,
            expr,
            style::THRESHOLD,
        );
    }
    if let Some(k) = g.knee_load {
        let text = format!("knee {} {}", short(k), g.axis);
        doc.reference(&p, Orient::Vertical, "knee", k, &text, style::NOTE);
    }
    doc.end_panel();
    Some(doc.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Quality;
    use crate::report::ProfileRow;

    fn scored(correct: u64, scored: u64) -> StageSummary {
        StageSummary {
            quality: Some(
                Quality {
                    scored,
                    correct,
                    checked: scored,
                    ..Quality::default()
                }
                .finish(0.95),
            ),
            ..StageSummary::default()
        }
    }

    fn group(accuracies: &[Option<u64>]) -> ProfileGroup {
        let rows = accuracies
            .iter()
            .enumerate()
            .map(|(i, a)| ProfileRow {
                stage: format!("p@{i}"),
                load: (i + 1) as f64 * 10.0,
                scheduled: 0.0,
                ttft_p50_ms: 0.0,
                ttft_p99_ms: 0.0,
                itl_p99_ms: 0.0,
                e2e_p99_ms: 0.0,
                achieved_per_s: 0.0,
                output_tokens_per_s: 0.0,
                saturated: false,
                client_bound: false,
                outcome: "pass",
                icon: "✅",
                sla_ok: true,
                gates: true,
                knee: false,
                accuracy: a.and_then(|k| row_accuracy(&scored(k, 100))),
            })
            .collect();
        ProfileGroup {
            group: "p".into(),
            axis: "clients",
            kind: "sweep",
            rows,
            knee_load: Some(20.0),
            sla_max_load: None,
            sla_max_upper: None,
            undecided: 0,
            answer: String::new(),
            plot: String::new(),
            thresholds: Vec::new(),
            answer_kind: crate::protocol::Answer::Stream,
            streamed: true,
            generates: true,
            quality_plot: None,
            accuracy_thresholds: Vec::new(),
        }
    }

    #[test]
    fn accuracy_falling_with_load_is_drawn_with_its_bars_threshold_and_knee() {
        let g = group(&[Some(95), Some(90), Some(60)]);
        let svg = quality_svg(&g, &[(80.0, "accuracy > 80%".into())]).unwrap();
        assert!(
            svg.contains(r#"data-name="accuracy" data-points="3""#),
            "{svg}"
        );
        assert_eq!(svg.matches(r#"data-name="accuracy interval""#).count(), 3);
        assert!(svg.contains(r#"data-kind="threshold" data-axis="y" data-value="80""#));
        assert!(svg.contains(r#"data-kind="knee" data-axis="x" data-value="20""#));
        // The axis reaches below the lowest interval: 60 % of 100 is about [50, 69].
        assert!(svg.contains(r#"<g class="tick" data-value="40">"#), "{svg}");
        // A point that scored nothing is left out; a group that scored nothing has no plot.
        let some = quality_svg(&group(&[Some(90), None]), &[]).unwrap();
        assert!(
            some.contains(r#"data-name="accuracy" data-points="1""#),
            "{some}"
        );
        assert_eq!(quality_svg(&group(&[None, None]), &[]), None);
    }

    #[test]
    fn a_point_shows_its_accuracy_with_its_interval() {
        let a = row_accuracy(&scored(90, 100)).unwrap();
        assert_eq!(a.value, 90.0);
        assert!(a.low < 90.0 && a.high > 90.0, "{a:?}");
        assert!(a.text.starts_with("90.0 % ["), "{}", a.text);
        assert_eq!(row_accuracy(&StageSummary::default()), None);
        // Checked but none scored: no accuracy to plot.
        assert_eq!(row_accuracy(&scored(0, 0)), None);
    }
}
