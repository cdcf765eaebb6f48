//! Latency profiles: the points of each sweep or search gathered into a table against offered
//! load, with the knee and the SLA-compliant maximum marked, and an SVG of latency against
//! achieved throughput over achieved against offered load (several runs can share one plot,
//! for `compare`). The knee is `metrics::knee_load`'s and each point's verdict
//! `sla::point_outcome`'s, the same ones the gate judged.

use super::ReportError;
use super::names::profile_file_name;
use super::numbers::short;
use super::profile_group::{ProfileGroup, ProfileRow, points};
use super::svg::canvas::Panel;
use super::svg::style::{self, Style};
use super::svg::{Axis, Doc, LegendEntry, Orient, Rect, Scale};
use crate::metrics::{
    CountMetric, LatencyMetric as L, Metric, PointKind, StageSummary, knee_load, scheduled_load,
    sweep_points,
};
use crate::results::Results;
use crate::sla::{SlaMax, SlaOutcome, SlaVerdict, point_outcome};

/// Every profile group of a run, in the order its first point appears.
pub fn profiles(results: &Results) -> Vec<ProfileGroup> {
    let mut groups: Vec<ProfileGroup> = Vec::new();
    for s in &results.stages {
        let Some(p) = &s.profile else { continue };
        let outcome = match p.passed {
            Some(true) => Some(SlaOutcome::Pass),
            Some(false) => Some(SlaOutcome::Fail),
            None => point_outcome(&results.sla, &s.name),
        };
        let mut row = row(s, p.load(), p.saturated, p.client_bound, outcome);
        row.gates = results
            .sla
            .iter()
            .filter(|v| v.stage.as_deref() == Some(s.name.as_str()))
            .all(|v| v.gates);
        match groups.iter_mut().find(|g| g.group == p.point.group) {
            Some(g) => g.rows.push(row),
            None => groups.push(ProfileGroup {
                group: p.point.group.clone(),
                axis: if p.point.offered_rate_per_s.is_some() {
                    "req/s"
                } else {
                    "clients"
                },
                kind: match p.point.kind {
                    PointKind::Sweep => "sweep",
                    PointKind::Probe => "search",
                },
                rows: vec![row],
                knee_load: None,
                sla_max_load: None,
                sla_max_upper: None,
                undecided: 0,
                answer: String::new(),
                plot: profile_file_name(&p.point.group),
                thresholds: Vec::new(),
                answer_kind: results.target.answer(),
                streamed: Metric::Latency(L::Ttft).applies_to(results.target.answer()),
                generates: Metric::Count(CountMetric::OutputThroughput)
                    .applies_to(results.target.answer()),
                quality_plot: None,
                accuracy_thresholds: Vec::new(),
            }),
        }
    }
    for g in &mut groups {
        g.rows.sort_by(|a, b| a.load.total_cmp(&b.load));
        // A search's probes are too short and too few below its answer for a knee to mean much.
        if g.kind == "sweep" {
            g.knee_load = knee_load(&sweep_points(&results.stages, &g.group));
        }
        for r in &mut g.rows {
            r.knee = g.knee_load == Some(r.load);
        }
        g.undecided = g
            .rows
            .iter()
            .filter(|r| r.outcome == "inconclusive")
            .count();
        g.thresholds = latency_thresholds(results, g);
        super::profile_quality::settle(results, g);
        match results.searches.iter().find(|s| s.group == g.group) {
            Some(s) => {
                let answer = s.answer_clients.map(f64::from).or(s.answer_rate_per_s);
                search_answer(g, answer, &results.sla);
            }
            None => {
                let outcomes: Vec<(f64, Option<SlaOutcome>)> = g
                    .rows
                    .iter()
                    .map(|r| (r.load, outcome_of(r.outcome)))
                    .collect();
                let max = SlaMax::of(&outcomes);
                g.sla_max_load = max.low;
                g.sla_max_upper = max.is_range().then_some(max.high).flatten();
            }
        }
        g.answer = g.answer();
    }
    groups
}

/// A search's answer as the gate judged it. Its probes are judged on their values while it
/// runs (that steers the search), but the gate judges the answer again, on its intervals,
/// as the search's stage: the answer's probe is marked with that verdict, and the answer is
/// the SLA-compliant maximum only when the gate passed it (undecided: a range up to it;
/// failed: none), so the table never calls a pass what the gate left undecided.
fn search_answer(g: &mut ProfileGroup, answer: Option<f64>, verdicts: &[SlaVerdict]) {
    g.sla_max_load = answer;
    let Some(load) = answer else { return };
    // The curve's own figures (`sla_max_rate`) are read off the answer, not judged on it.
    let on_answer: Vec<SlaVerdict> = verdicts
        .iter()
        .filter(|v| v.assertion.metric.curve().is_none())
        .cloned()
        .collect();
    let Some(gate) = point_outcome(&on_answer, &g.group) else {
        return;
    };
    let row = g
        .rows
        .iter_mut()
        .find(|r| r.load == load && r.outcome == SlaOutcome::Pass.as_str());
    if let Some(row) = row {
        row.outcome = gate.as_str();
        row.icon = icon(gate);
        row.sla_ok = gate == SlaOutcome::Pass;
    }
    match gate {
        SlaOutcome::Pass => {}
        SlaOutcome::Inconclusive => {
            g.sla_max_load = None;
            g.sla_max_upper = Some(load);
            g.undecided = g.undecided.max(1);
        }
        SlaOutcome::Fail => g.sla_max_load = None,
    }
}

fn icon(outcome: SlaOutcome) -> &'static str {
    match outcome {
        SlaOutcome::Pass => "✅",
        SlaOutcome::Fail => "❌",
        SlaOutcome::Inconclusive => "❔",
    }
}

fn outcome_of(word: &str) -> Option<SlaOutcome> {
    [SlaOutcome::Pass, SlaOutcome::Fail, SlaOutcome::Inconclusive]
        .into_iter()
        .find(|o| o.as_str() == word)
}

fn row(
    s: &StageSummary,
    load: f64,
    saturated: bool,
    client_bound: bool,
    outcome: Option<SlaOutcome>,
) -> ProfileRow {
    let shown = outcome.unwrap_or(SlaOutcome::Pass);
    ProfileRow {
        stage: s.name.clone(),
        load,
        scheduled: scheduled_load(s),
        ttft_p50_ms: s.latency[L::Ttft].p50,
        ttft_p99_ms: s.latency[L::Ttft].p99,
        itl_p99_ms: s.latency[L::Itl].p99,
        e2e_p99_ms: s.latency[L::E2e].p99,
        achieved_per_s: s.throughput.requests_per_s,
        output_tokens_per_s: s.throughput.output_tokens_per_s,
        saturated,
        client_bound,
        outcome: shown.as_str(),
        icon: icon(shown),
        sla_ok: shown == SlaOutcome::Pass,
        gates: true,
        knee: false,
        accuracy: super::profile_quality::row_accuracy(s),
    }
}

/// A latency figure of a profile row.
type RowFigure = fn(&ProfileRow) -> f64;

/// The latency thresholds of the assertions judged on `g`'s points (TTFT, ITL, TPOT, E2E in
/// ms, one per assertion text).
fn latency_thresholds(results: &Results, g: &ProfileGroup) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for v in &results.sla {
        let on_group = v
            .stage
            .as_deref()
            .is_some_and(|s| s == g.group || g.rows.iter().any(|r| r.stage == s));
        if !on_group || !v.threshold.is_finite() {
            continue;
        }
        let expr = v.assertion.to_string();
        let drawn = [L::Ttft, L::Itl, L::Tpot, L::E2e].map(Metric::Latency);
        if drawn.contains(&v.metric()) && !out.iter().any(|(_, e)| *e == expr) {
            out.push((v.threshold, expr));
        }
    }
    out
}

/// The latency series of the profile plot, in the order of their house styles.
const PROFILE_SERIES: [(&str, L, RowFigure); 4] = [
    ("TTFT p50", L::Ttft, |r| r.ttft_p50_ms),
    ("TTFT p99", L::Ttft, |r| r.ttft_p99_ms),
    ("ITL p99", L::Itl, |r| r.itl_p99_ms),
    ("E2E p99", L::E2e, |r| r.e2e_p99_ms),
];

/// The load as written on a point: `12 req/s`, `8 clients`.
fn load_label(v: f64, axis: &str) -> String {
    format!("{} {axis}", short(v))
}

/// Two panels. Above: latency (log axis: ITL and E2E are orders of magnitude apart) against
/// the achieved throughput, one colour, marker and dash per metric, each point labelled with
/// its offered load. Below: achieved against offered load, with the ideal line (open loop),
/// so saturation shows as the curve leaving it. The knee and the SLA-compliant maximum of the
/// first run are labelled lines in both. Several runs (a comparison, baseline first) share the
/// plot; the baseline is dashed with hollow markers.
pub fn profile_svg(runs: &[(&str, &ProfileGroup)]) -> Result<String, ReportError> {
    let plot = ProfilePlot::new(runs);
    let title = runs.first().map_or("profile", |(_, g)| g.group.as_str());
    let w = 900.0;
    let mut doc = Doc::new("profile", &format!("latency profile: {title}"), w, 0.0);
    let top = doc.legend(34.0, &plot.legend());
    let (h1, h2) = (340.0, 240.0);
    doc.set_height(top + h1 + h2 + 6.0);
    plot.latency_panel(
        &mut doc,
        Rect {
            x: 0.0,
            y: top,
            w,
            h: h1,
        },
    );
    plot.load_panel(
        &mut doc,
        Rect {
            x: 0.0,
            y: top + h1,
            w,
            h: h2,
        },
    );
    Ok(doc.finish())
}

/// The runs of one profile plot (baseline first) and the styles they are drawn in.
struct ProfilePlot<'a> {
    runs: &'a [(&'a str, &'a ProfileGroup)],
    /// One per latency series ([`PROFILE_SERIES`]).
    styles: Vec<Style>,
    /// Achieved throughput's, apart from the latency series'.
    achieved: Style,
    /// `req/s` or `clients`: the first run's load axis.
    axis: &'static str,
}

impl<'a> ProfilePlot<'a> {
    fn new(runs: &'a [(&'a str, &'a ProfileGroup)]) -> Self {
        ProfilePlot {
            runs,
            styles: (0..PROFILE_SERIES.len()).map(style::series).collect(),
            achieved: style::series(4),
            axis: runs.first().map_or("req/s", |(_, g)| g.axis),
        }
    }

    fn all(&self) -> impl Iterator<Item = &'a ProfileRow> + 'a {
        self.runs.iter().flat_map(|(_, g)| g.rows.iter())
    }

    fn first(&self) -> Option<&'a ProfileGroup> {
        self.runs.first().map(|(_, g)| *g)
    }

    /// Of a comparison's runs, all but the last (the current one) are drawn as baselines.
    fn is_baseline(&self, run: usize) -> bool {
        self.runs.len() > 1 && run + 1 < self.runs.len()
    }

    fn run_style(&self, run: usize, k: usize) -> Style {
        if self.is_baseline(run) {
            self.styles[k].as_baseline()
        } else {
            self.styles[k]
        }
    }

    fn achieved_style(&self, run: usize) -> Style {
        if self.is_baseline(run) {
            self.achieved.as_baseline()
        } else {
            self.achieved
        }
    }

    /// Whether the first run's target has `m` (the series of one it lacks are not drawn).
    fn drawn(&self, m: L) -> bool {
        self.first()
            .is_none_or(|g| Metric::Latency(m).applies_to(g.answer_kind))
    }

    fn max_achieved(&self) -> f64 {
        self.all().map(|r| r.achieved_per_s).fold(0.0, f64::max)
    }

    /// The latency series, achieved throughput (per run in a comparison), and the first
    /// run's reference lines that it has.
    fn legend(&self) -> Vec<LegendEntry> {
        let entry = |label: String, style: Style| LegendEntry { label, style };
        let mut legend: Vec<LegendEntry> = PROFILE_SERIES
            .iter()
            .enumerate()
            .filter(|(_, (_, m, _))| self.drawn(*m))
            .map(|(k, (name, _, _))| entry((*name).to_string(), self.styles[k]))
            .collect();
        if self.runs.len() > 1 {
            for (i, (label, _)) in self.runs.iter().enumerate() {
                let text = format!("{label} (achieved req/s)");
                legend.push(entry(text, self.achieved_style(i)));
            }
        } else {
            legend.push(entry("achieved req/s".into(), self.achieved));
        }
        let first = self.first();
        if first.is_some_and(|g| g.knee_load.is_some()) {
            legend.push(entry("knee".into(), style::NOTE));
        }
        if first.is_some_and(|g| !g.thresholds.is_empty()) {
            legend.push(entry("SLA threshold".into(), style::THRESHOLD));
        }
        if first.is_some_and(|g| g.sla_max_load.is_some()) {
            legend.push(entry("SLA-compliant max".into(), style::SLA_MAX));
        }
        legend
    }

    /// Latency against achieved throughput, its y axis spanning every latency drawn and the
    /// first run's thresholds.
    fn latency_panel(&self, doc: &mut Doc, outer: Rect) {
        let lat = || {
            self.all()
                .flat_map(|r| {
                    PROFILE_SERIES
                        .iter()
                        .filter(|(_, m, _)| self.drawn(*m))
                        .map(move |(_, _, f)| f(r))
                })
                .filter(|v| *v > 0.0)
        };
        let limits = || {
            self.first()
                .into_iter()
                .flat_map(|g| g.thresholds.iter().map(|t| t.0))
        };
        let lo = lat().chain(limits()).fold(f64::INFINITY, f64::min);
        let hi = lat().chain(limits()).fold(0.0, f64::max);
        let y = if lo.is_finite() {
            Scale::auto(lo, hi)
        } else {
            Scale::linear(0.0, 1.0, true)
        };
        let x = Scale::linear(0.0, self.max_achieved().max(1e-3) * 1.05, true);
        let p = doc.panel(
            "latency against achieved throughput",
            outer,
            &Axis::new(x, "achieved throughput (completed req/s)"),
            &Axis::new(
                y,
                format!(
                    "latency (ms{})",
                    if y.is_log() { ", log scale" } else { "" }
                ),
            ),
        );
        for (i, (label, g)) in self.runs.iter().enumerate() {
            for (k, (name, m, f)) in PROFILE_SERIES.iter().enumerate() {
                if !self.drawn(*m) {
                    continue;
                }
                let pts: Vec<(f64, f64)> = g
                    .rows
                    .iter()
                    .filter(|r| f(r) > 0.0)
                    .map(|r| (r.achieved_per_s, f(r)))
                    .collect();
                doc.series(&p, name, label, self.run_style(i, k), &pts, 1);
            }
        }
        self.label_loads(doc, &p);
        if let Some(g) = self.first() {
            mark_latency_references(doc, &p, g);
        }
        doc.end_panel();
    }

    /// The offered load beside each TTFT p99 point of the last run (E2E p99 where it has no
    /// TTFT), skipping one too close to the previous label.
    fn label_loads(&self, doc: &mut Doc, p: &Panel) {
        let Some((_, g)) = self.runs.last() else {
            return;
        };
        let (k, figure): (usize, RowFigure) = if self.drawn(L::Ttft) {
            (1, |r| r.ttft_p99_ms)
        } else {
            (3, |r| r.e2e_p99_ms)
        };
        let mut last: Option<(f64, f64)> = None;
        for r in &g.rows {
            let (px, py) = (p.px(r.achieved_per_s), p.py(figure(r)));
            if last.is_some_and(|(lx, ly)| (px - lx).abs() < 52.0 && (py - ly).abs() < 12.0) {
                continue;
            }
            last = Some((px, py));
            doc.point_label(
                p,
                r.achieved_per_s,
                figure(r),
                &load_label(r.load, g.axis),
                self.styles[k].color,
            );
        }
    }

    /// Achieved against offered load, with the ideal line (open loop) that saturation leaves.
    fn load_panel(&self, doc: &mut Doc, outer: Rect) {
        let axis = self.axis;
        let max_load = self.all().map(|r| r.load).fold(0.0, f64::max);
        let x2 = Scale::linear(0.0, max_load.max(1e-3) * 1.05, true);
        let y2 = Scale::linear(
            0.0,
            self.max_achieved()
                .max(if axis == "req/s" { max_load } else { 0.0 })
                .max(1e-3)
                * 1.05,
            true,
        );
        let p2 = doc.panel(
            "achieved against offered load",
            outer,
            &Axis::new(x2, format!("offered load ({axis})")),
            &Axis::new(y2, "achieved (req/s)"),
        );
        if axis == "req/s" {
            let (_, top_load) = x2.bounds();
            doc.series(
                &p2,
                "achieved = offered",
                "",
                style::GUIDE,
                &[(0.0, 0.0), (top_load, top_load)],
                0,
            );
        }
        for (i, (label, g)) in self.runs.iter().enumerate() {
            let pts: Vec<(f64, f64)> = g.rows.iter().map(|r| (r.load, r.achieved_per_s)).collect();
            doc.series(
                &p2,
                "achieved req/s",
                label,
                self.achieved_style(i),
                &pts,
                1,
            );
        }
        if let Some(g) = self.first() {
            for (kind, at, label, st) in marks(g) {
                if let Some((load, _)) = at {
                    let text = format!("{label} {}", load_label(load, g.axis));
                    doc.reference(&p2, Orient::Vertical, kind, load, &text, st);
                }
            }
        }
        doc.end_panel();
    }
}

/// A vertical reference line: (class, load and achieved throughput where the group has the
/// point, label, style).
type Mark = (&'static str, Option<(f64, f64)>, &'static str, Style);

/// The knee and the SLA-compliant maximum of `g`, each at its load and achieved throughput
/// where the group has that point.
fn marks(g: &ProfileGroup) -> [Mark; 2] {
    let at = |load: Option<f64>| {
        load.and_then(|l| g.rows.iter().find(|r| r.load == l))
            .map(|r| (r.load, r.achieved_per_s))
    };
    [
        ("knee", at(g.knee_load), "knee", style::NOTE),
        ("sla-max", at(g.sla_max_load), "SLA max", style::SLA_MAX),
    ]
}

/// The first run's knee, SLA maximum and thresholds on the latency panel, and a note for
/// what it lacks (no knee, no compliant point), so an empty spot is not read as an omission.
fn mark_latency_references(doc: &mut Doc, p: &Panel, g: &ProfileGroup) {
    for (kind, at, label, st) in marks(g) {
        if let Some((load, achieved)) = at {
            let text = format!("{label} {}", load_label(load, g.axis));
            doc.reference(p, Orient::Vertical, kind, achieved, &text, st);
        }
    }
    for (value, expr) in &g.thresholds {
        doc.reference(
            p,
            Orient::Horizontal,
            "threshold",
            *value,
            expr,
            style::THRESHOLD,
        );
    }
    let undecided = format!(
        "no point shown to meet every SLA ({} undecided)",
        points(g.undecided)
    );
    let missing: Vec<&str> = [
        g.knee_load.is_none().then_some("knee not reached"),
        (g.sla_max_load.is_none() && g.undecided == 0).then_some("no point met every SLA"),
        (g.sla_max_load.is_none() && g.undecided > 0).then_some(undecided.as_str()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !missing.is_empty() {
        doc.note(
            p.area.x + 6.0,
            p.area.y + 14.0,
            "start",
            &missing.join(" · "),
        );
    }
}
