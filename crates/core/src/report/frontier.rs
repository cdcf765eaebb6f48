//! The interactivity frontier of each sweep (`results.frontiers`): tokens/s per user against
//! tokens/s per GPU, the front joined by a line with filled markers, each dominated point a
//! hollow marker of another colour, every point labelled with its load. The figures are
//! `metrics::interactivity`'s; this only draws them.

use serde::Serialize;

use super::names::stage_slug;
use super::svg::axis::Scale;
use super::svg::canvas::{Axis, Doc, LegendEntry, Rect};
use super::svg::style;
use crate::metrics::{Frontier, FrontierPoint};
use crate::results::Results;

/// File name of a sweep's frontier plot.
pub fn frontier_file_name(group: &str) -> String {
    format!("frontier-{}.svg", stage_slug(group))
}

/// A frontier as the HTML report shows it: the figures and its plot's file name.
#[derive(Debug, Serialize)]
pub struct FrontierView<'a> {
    #[serde(flatten)]
    pub frontier: &'a Frontier,
    pub plot: String,
    /// The y axis's unit in words.
    pub y_label: &'static str,
}

/// The frontiers of `results`, for the report templates.
pub fn frontier_views(results: &Results) -> Vec<FrontierView<'_>> {
    results
        .frontiers
        .iter()
        .map(|f| FrontierView {
            frontier: f,
            plot: frontier_file_name(&f.group),
            y_label: y_label(f),
        })
        .collect()
}

fn y_label(f: &Frontier) -> &'static str {
    if f.gpus.is_some() {
        "output tok/s per GPU"
    } else {
        "output tok/s (whole target)"
    }
}

/// The frontier in one line for the terminal: each point's load and tokens/s per user, the
/// dominated ones said so.
pub fn frontier_line(f: &Frontier) -> String {
    let points: Vec<String> = f
        .points
        .iter()
        .map(|q| {
            let load = super::numbers::short(q.load);
            let mark = if q.on_front { "" } else { " dominated" };
            format!("{load}: {:.0}{mark}", q.tokens_per_s_user)
        })
        .collect();
    format!("frontier, tok/s per user: {}", points.join(" · "))
}

/// The frontier plot of `f`; `None` when it has no point.
pub fn frontier_svg(f: &Frontier) -> Option<String> {
    if f.points.is_empty() {
        return None;
    }
    let (front_style, dominated_style) = (style::series(0), style::series(1).as_baseline());
    let w = 720.0;
    let mut doc = Doc::new(
        "frontier",
        &format!("interactivity frontier: {}", f.group),
        w,
        0.0,
    );
    let top = doc.legend(
        34.0,
        &[
            LegendEntry {
                label: "Pareto front".into(),
                style: front_style,
            },
            LegendEntry {
                label: "dominated".into(),
                style: dominated_style,
            },
        ],
    );
    let h = 380.0;
    doc.set_height(top + h + 6.0);
    let max = |g: fn(&FrontierPoint) -> f64| f.points.iter().map(g).fold(0.0, f64::max);
    let x = Scale::linear(0.0, max(|p| p.tokens_per_s_user).max(1e-3) * 1.08, true);
    let y = Scale::linear(0.0, max(FrontierPoint::y).max(1e-3) * 1.08, true);
    let p = doc.panel(
        "throughput against interactivity",
        Rect {
            x: 0.0,
            y: top,
            w,
            h,
        },
        &Axis::new(x, "tokens/s per user (1 / TPOT p90)"),
        &Axis::new(y, y_label(f)),
    );
    // The front left to right: a line a deployment can move along.
    let mut front: Vec<(f64, f64)> = f
        .points
        .iter()
        .filter(|q| q.on_front)
        .map(|q| (q.tokens_per_s_user, q.y()))
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    doc.series(&p, "Pareto front", "", front_style, &front, 1);
    for q in f.points.iter().filter(|q| !q.on_front) {
        let pt = [(q.tokens_per_s_user, q.y())];
        doc.series(&p, "dominated", "", dominated_style, &pt, 1);
    }
    for q in &f.points {
        let color = if q.on_front {
            front_style.color
        } else {
            dominated_style.color
        };
        let knee = if f.knee == Some(q.load) {
            " (knee)"
        } else {
            ""
        };
        let load = if q.load.fract() == 0.0 {
            format!("{:.0}", q.load)
        } else {
            super::num(q.load)
        };
        let label = format!("{load}{knee}");
        doc.point_label(&p, q.tokens_per_s_user, q.y(), &label, color);
    }
    doc.end_panel();
    Some(doc.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(stage: &str, x: f64, y: f64, on_front: bool) -> FrontierPoint {
        FrontierPoint {
            stage: stage.into(),
            load: x,
            tokens_per_s_user: x,
            output_tokens_per_s: y,
            on_front,
            ..FrontierPoint::default()
        }
    }

    #[test]
    fn the_front_is_one_line_and_each_dominated_point_a_hollow_marker() {
        let f = Frontier {
            group: "ladder".into(),
            gpus: None,
            shape: None,
            points: vec![
                point("a", 50.0, 100.0, true),
                point("b", 30.0, 300.0, true),
                point("c", 10.0, 200.0, false),
            ],
            knee: Some(30.0),
        };
        let svg = frontier_svg(&f).unwrap();
        assert_eq!(
            svg.matches("class=\"series\" data-name=\"Pareto front\"")
                .count(),
            1
        );
        assert_eq!(
            svg.matches("class=\"series\" data-name=\"dominated\"")
                .count(),
            1
        );
        assert!(svg.contains("30 (knee)"), "{svg}");
        assert!(svg.contains("output tok/s (whole target)"));
        assert_eq!(frontier_svg(&Frontier::default()), None);
        assert_eq!(
            frontier_line(&f),
            "frontier, tok/s per user: 50: 50 · 30: 30 · 10: 10 dominated"
        );
    }
}
