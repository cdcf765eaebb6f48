//! The configurations of a run with a `server` block's `config` lines, side by side
//! (docs/reports.md, "Configurations"): a table (each configuration's figure with its
//! interval, its verdict, its server's start-up time, whether it is on the Pareto front) with
//! the winner and why, and a plot of throughput against E2E latency, the front marked. The
//! rows come from results.json's `configs` (`sla::rank_configs`); nothing is recomputed here.

use serde::Serialize;

use super::numbers::num;
use super::svg::Scale;
use super::svg::canvas::{Axis, Doc, LegendEntry, Rect};
use super::svg::style::series;
use crate::metrics::Metric;
use crate::results::Results;
use crate::sla::{ConfigRanking, ConfigRow, SlaOutcome};

/// The configurations' table, every value a display string (the templates escape them).
#[derive(Debug, Clone, Serialize)]
pub struct ConfigsView {
    /// The figure's name and unit: `goodput_rate (req/s)`.
    pub by: String,
    /// The scenario stage it is read from.
    pub stage: String,
    /// The winner, empty when there is none.
    pub best: String,
    /// Its intervals overlap the runner-up's.
    pub not_separated: bool,
    pub why: String,
    pub rows: Vec<ConfigViewRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConfigViewRow {
    pub config: String,
    pub best: bool,
    /// `12.3 [11.9, 12.8]`, or `—`.
    pub figure: String,
    /// `✅ pass`, `❌ fail`, `❔ undecided`.
    pub verdict: String,
    pub outcome: &'static str,
    /// `41.2 s`, or empty.
    pub startup: String,
    pub throughput: String,
    pub e2e_p50: String,
    pub e2e_p95: String,
    pub pareto: bool,
    pub note: String,
}

/// The view of `results.configs`; `None` without configurations.
pub fn configs_view(results: &Results) -> Option<ConfigsView> {
    let c = results.configs.as_ref()?;
    let unit = Metric::from_name(&c.by).map_or("", |m| m.kind().unit());
    Some(ConfigsView {
        by: if unit.is_empty() {
            c.by.clone()
        } else {
            format!("{} ({unit})", c.by)
        },
        stage: c.stage.clone(),
        best: c.best.clone().unwrap_or_default(),
        not_separated: c.separated == Some(false),
        why: c.why.clone(),
        rows: c.rows.iter().map(|r| view_row(c, r)).collect(),
    })
}

fn view_row(c: &ConfigRanking, r: &ConfigRow) -> ConfigViewRow {
    let figure = match (r.figure, r.interval) {
        (Some(f), Some(i)) => format!("{} [{}, {}]", num(f), num(i.low), num(i.high)),
        (Some(f), None) => num(f),
        (None, _) => "—".into(),
    };
    let (verdict, outcome) = match r.verdict {
        SlaOutcome::Pass => ("✅ pass", "pass"),
        SlaOutcome::Fail => ("❌ fail", "fail"),
        SlaOutcome::Inconclusive => ("❔ undecided", "inconclusive"),
    };
    let ms = |v: Option<f64>| v.map(num).unwrap_or_default();
    ConfigViewRow {
        config: r.config.clone(),
        best: c.best.as_deref() == Some(r.config.as_str()),
        figure,
        verdict: verdict.into(),
        outcome,
        startup: r
            .startup_ms
            .map(|v| format!("{} s", num(v / 1000.0)))
            .unwrap_or_default(),
        throughput: ms(r.throughput),
        e2e_p50: ms(r.e2e_p50_ms),
        e2e_p95: ms(r.e2e_p95_ms),
        pareto: r.pareto,
        note: r.note.clone().unwrap_or_default(),
    }
}

/// The terminal summary's lines: one per configuration, then the winner and why.
pub(super) fn summary_lines(out: &mut String, results: &Results) {
    use std::fmt::Write as _;
    let t = crate::escape::terminal;
    let Some(v) = configs_view(results) else {
        return;
    };
    let _ = writeln!(
        out,
        "\nConfigurations (by {} of `{}`)",
        t(&v.by),
        t(&v.stage)
    );
    for r in &v.rows {
        let startup = if r.startup.is_empty() {
            String::new()
        } else {
            format!("  start-up {}", r.startup)
        };
        let _ = writeln!(
            out,
            "  {:<16} {:>24}  {}{startup}{}{}",
            t(&r.config),
            r.figure,
            r.verdict,
            if r.pareto { "  pareto" } else { "" },
            if r.best { "  ← best" } else { "" }
        );
    }
    let _ = writeln!(out, "  {}", t(&v.why));
}

/// The file name the configurations' plot has among a run's plots.
pub const CONFIGS_PLOT: &str = "configs.svg";

/// Throughput against E2E p50 and p95, one labelled point per configuration, a line through
/// the Pareto front; `None` without two configurations that have both figures.
pub fn configs_svg(results: &Results) -> Option<String> {
    let c = results.configs.as_ref()?;
    let rows: Vec<(&ConfigRow, f64, f64, f64)> = c
        .rows
        .iter()
        .filter_map(|r| Some((r, r.throughput?, r.e2e_p50_ms?, r.e2e_p95_ms?)))
        .collect();
    if rows.len() < 2 {
        return None;
    }
    let (p95, p50, front) = (series(0), series(1), series(2));
    let w = 760.0;
    let mut doc = Doc::new(
        "configs",
        "configurations: throughput against E2E latency",
        w,
        0.0,
    );
    let legend = [
        LegendEntry {
            label: "E2E p95".into(),
            style: p95,
        },
        LegendEntry {
            label: "E2E p50".into(),
            style: p50,
        },
        LegendEntry {
            label: "Pareto front (p95)".into(),
            style: front,
        },
    ];
    let top = doc.legend(34.0, &legend);
    doc.set_height(top + 360.0);
    let t_hi = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    let l_lo = rows.iter().map(|r| r.2).fold(f64::INFINITY, f64::min);
    let l_hi = rows.iter().map(|r| r.3).fold(0.0, f64::max);
    let x = Axis::new(Scale::linear(0.0, t_hi * 1.1, true), "throughput (req/s)");
    let y = Axis::new(Scale::auto(l_lo * 0.8, l_hi * 1.25), "E2E latency (ms)");
    let outer = Rect {
        x: 0.0,
        y: top,
        w,
        h: 360.0,
    };
    let panel = doc.panel("", outer, &x, &y);
    let mut on_front: Vec<(f64, f64)> = rows
        .iter()
        .filter(|r| r.0.pareto)
        .map(|r| (r.1, r.3))
        .collect();
    on_front.sort_by(|a, b| a.0.total_cmp(&b.0));
    doc.series(&panel, "Pareto front", "", front, &on_front, 0);
    for (r, t, l50, l95) in &rows {
        doc.series(
            &panel,
            &format!("{} p95", r.config),
            "",
            p95,
            &[(*t, *l95)],
            1,
        );
        doc.series(
            &panel,
            &format!("{} p50", r.config),
            "",
            p50,
            &[(*t, *l50)],
            1,
        );
        let mark = if r.pareto { " ◆" } else { "" };
        doc.point_label(&panel, *t, *l95, &format!("{}{mark}", r.config), p95.color);
    }
    doc.end_panel();
    Some(doc.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_plot_escapes_names_and_marks_the_front() {
        let row = |name: &str, t: f64, l: f64, pareto: bool| ConfigRow {
            config: name.into(),
            figure: Some(t),
            interval: None,
            verdict: SlaOutcome::Pass,
            decided: true,
            startup_ms: Some(1500.0),
            throughput: Some(t),
            e2e_p50_ms: Some(l / 2.0),
            e2e_p95_ms: Some(l),
            pareto,
            note: None,
        };
        let mut r: Results =
            serde_json::from_str(include_str!("../../../../tests/data/results/current.json"))
                .unwrap();
        r.configs = Some(ConfigRanking {
            by: "goodput_rate".into(),
            stage: "chat".into(),
            best: Some("<b>".into()),
            separated: Some(false),
            why: "w".into(),
            rows: vec![row("<b>", 10.0, 100.0, true), row("a&b", 4.0, 400.0, false)],
        });
        let svg = configs_svg(&r).unwrap();
        assert!(svg.contains("&lt;b&gt;") && !svg.contains("<b>"), "{svg}");
        assert!(svg.contains("data-name=\"Pareto front\""), "{svg}");
        let v = configs_view(&r).unwrap();
        assert!(v.not_separated && v.rows[0].best, "{v:?}");
        assert!(v.rows[0].startup.starts_with("1.5") && v.rows[0].startup.ends_with(" s"));
        assert_eq!(v.by, "goodput_rate (req/s)");
        // A name from a results file is escaped for each output.
        let md = crate::report::render_markdown(&r, None).unwrap();
        assert!(
            md.contains("### Configurations") && !md.contains("<b>"),
            "{md}"
        );
        let html = crate::report::render_html(&r, None).unwrap();
        assert!(html.contains("<h2>Configurations</h2>"), "{html}");
        assert!(html.contains("&lt;b&gt;") && !html.contains("<b>"));
        assert!(html.contains("data-kind=\"configs\"") || html.contains("Pareto front"));
    }
}
