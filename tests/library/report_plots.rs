//! Every plot kind, parsed as XML and checked for content: the series it must show, axis
//! ticks inside the axis and apart, reference lines (SLA thresholds, knee, SLA maximum,
//! where sending stopped) at the pixel their value maps to. Fixtures are results of real
//! simulator runs (`tests/data/results/sim-*.json`) and hand-made summaries.
//!
//! `KEEP_PLOTS=DIR` also writes every plot drawn here into DIR, to look at.

use std::path::Path;

use infermeter_core::metrics::{LatencyMetric, StageSummary, TimelinePoint};
use infermeter_core::report::{
    ProfileGroup, ProfileRow, compare_svgs, profile_svg, profiles, render_plots, timeline_svg,
};
use infermeter_core::results::{Results, read_results};
use roxmltree::{Document, Node};

fn fixture(name: &str) -> Results {
    read_results(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/results")
            .join(name),
    )
    .expect("fixture parses")
}

fn keep(name: &str, svg: &str) {
    if let Ok(dir) = std::env::var("KEEP_PLOTS") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join(name), svg).unwrap();
    }
}

fn class_is(n: &Node, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|w| w == class))
}

fn by_class<'a, 'i>(n: Node<'a, 'i>, class: &str) -> Vec<Node<'a, 'i>> {
    n.descendants().filter(|d| class_is(d, class)).collect()
}

fn attr(n: &Node, name: &str) -> f64 {
    n.attribute(name)
        .unwrap_or_else(|| panic!("no {name} on {n:?}"))
        .parse()
        .unwrap()
}

fn text_of(n: &Node) -> String {
    n.descendants()
        .filter(|d| d.is_text())
        .filter_map(|d| d.text())
        .collect::<String>()
        .trim()
        .to_string()
}

/// An axis as drawn: its scale, bounds, and each tick's (value, pixel, label).
struct AxisDrawn {
    log: bool,
    min: f64,
    max: f64,
    ticks: Vec<(f64, f64, String)>,
}

impl AxisDrawn {
    fn read(panel: Node, which: &str) -> AxisDrawn {
        let axis = panel
            .descendants()
            .find(|d| class_is(d, "axis") && class_is(d, which))
            .expect("axis");
        let ticks = by_class(axis, "tick")
            .iter()
            .map(|t| {
                let line = t.children().find(|c| c.has_tag_name("line")).unwrap();
                let px = if which == "x" {
                    attr(&line, "x1")
                } else {
                    attr(&line, "y1")
                };
                (attr(t, "data-value"), px, text_of(t))
            })
            .collect();
        AxisDrawn {
            log: axis.attribute("data-scale") == Some("log"),
            min: attr(&axis, "data-min"),
            max: attr(&axis, "data-max"),
            ticks,
        }
    }

    /// The pixel `v` maps to, from the first and last ticks.
    fn pixel(&self, v: f64) -> f64 {
        let (a, b) = (self.ticks.first().unwrap(), self.ticks.last().unwrap());
        let f = |x: f64| if self.log { x.ln() } else { x };
        a.1 + (f(v) - f(a.0)) / (f(b.0) - f(a.0)) * (b.1 - a.1)
    }

    /// At least two ticks, all inside the axis, in order, distinct labels far enough apart
    /// not to touch (about 6.4 px per character at 11 px).
    fn check(&self, what: &str) {
        assert!(self.ticks.len() >= 2, "{what}: {} ticks", self.ticks.len());
        for (v, _, label) in &self.ticks {
            assert!(
                *v >= self.min * 0.999 && *v <= self.max * 1.001 + 1e-9,
                "{what}: tick {label} outside [{}, {}]",
                self.min,
                self.max
            );
        }
        let up = self.ticks.windows(2).all(|w| w[0].0 < w[1].0);
        let down = self.ticks.windows(2).all(|w| w[0].0 > w[1].0);
        assert!(up || down, "{what}: ticks out of order");
        for w in self.ticks.windows(2) {
            assert_ne!(w[0].2, w[1].2, "{what}: repeated label");
        }
    }

    fn check_labels_apart(&self, what: &str) {
        for w in self.ticks.windows(2) {
            let room = (w[1].1 - w[0].1).abs();
            let need = (w[0].2.len() + w[1].2.len()) as f64 / 2.0 * 6.4;
            assert!(
                room >= need,
                "{what}: labels {} and {} overlap ({room:.1} px apart, {need:.1} needed)",
                w[0].2,
                w[1].2
            );
        }
    }
}

fn series<'a, 'i>(panel: Node<'a, 'i>, name: &str) -> Vec<Node<'a, 'i>> {
    by_class(panel, "series")
        .into_iter()
        .filter(|s| s.attribute("data-name") == Some(name))
        .collect()
}

/// The (x, y) pixels of a series' path.
fn path_points(series: &Node) -> Vec<(f64, f64)> {
    let d = series
        .children()
        .find(|c| c.has_tag_name("path") && c.attribute("fill") == Some("none"))
        .and_then(|p| p.attribute("d"))
        .expect("a line");
    d.split(['M', 'L'])
        .filter(|s| !s.trim().is_empty())
        .map(|p| {
            let (x, y) = p.trim().split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

fn stroke(series: &Node) -> (String, String) {
    let p = series
        .children()
        .find(|c| c.has_tag_name("path"))
        .expect("a line");
    (
        p.attribute("stroke").unwrap_or_default().to_string(),
        p.attribute("stroke-dasharray")
            .unwrap_or_default()
            .to_string(),
    )
}

fn marker_kind(series: &Node) -> String {
    series
        .children()
        .find(|c| class_is(c, "marker"))
        .map(|m| {
            format!(
                "{}{}",
                m.tag_name().name(),
                m.attribute("d").map_or(0, |d| d.matches('L').count())
            )
        })
        .unwrap_or_default()
}

fn refs<'a, 'i>(panel: Node<'a, 'i>, kind: &str) -> Vec<Node<'a, 'i>> {
    by_class(panel, "ref")
        .into_iter()
        .filter(|r| r.attribute("data-kind") == Some(kind))
        .collect()
}

fn ref_x(r: &Node) -> f64 {
    let line = r.children().find(|c| c.has_tag_name("line")).unwrap();
    assert_eq!(attr(&line, "x1"), attr(&line, "x2"), "vertical");
    attr(&line, "x1")
}

#[test]
fn distribution_plots_show_every_metric_from_its_histogram_with_the_sla_threshold() {
    let results = fixture("sim-quickstart.json");
    let plots = render_plots(&results).unwrap();
    let (name, svg) = plots
        .iter()
        .find(|(n, _)| n == "stage-poisson-latency-cdf.svg")
        .expect("the poisson stage's distribution");
    keep(name, svg);
    let doc = Document::parse(svg).expect("well-formed SVG");
    let root = doc.root_element();
    assert_eq!(root.attribute("data-kind"), Some("latency-distribution"));
    let stage = &results.stages[0];
    let panels = by_class(root, "panel");
    let titles: Vec<&str> = panels
        .iter()
        .map(|p| p.attribute("data-title").unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            format!("TTFT (n = {})", stage.latency[LatencyMetric::Ttft].count),
            format!("ITL (n = {})", stage.latency[LatencyMetric::Itl].count),
            format!("TPOT (n = {})", stage.latency[LatencyMetric::Tpot].count),
            format!("E2E (n = {})", stage.latency[LatencyMetric::E2e].count),
        ]
    );
    for (p, metric) in panels.iter().zip(["TTFT", "ITL", "TPOT", "E2E"]) {
        let s = series(*p, metric);
        assert_eq!(s.len(), 1, "{metric}: one curve");
        // A real curve from the histogram, not six percentiles.
        assert!(attr(&s[0], "data-points") > 20.0, "{metric}");
        let x = AxisDrawn::read(*p, "x");
        x.check(metric);
        x.check_labels_apart(metric);
        let y = AxisDrawn::read(*p, "y");
        y.check(metric);
        assert!(y.log, "{metric}: the tail axis is log");
        let labels: Vec<&str> = y.ticks.iter().map(|t| t.2.as_str()).collect();
        assert!(
            labels.contains(&"p50") && labels.contains(&"p99"),
            "{labels:?}"
        );
        // The curve falls from the top (p0) towards the tail as latency grows.
        let pts = path_points(&s[0]);
        assert!(
            pts.windows(2)
                .all(|w| w[1].0 >= w[0].0 - 0.05 && w[1].1 >= w[0].1 - 0.05)
        );
    }
    // The median drawn where the stage's p50 is: the curve crosses the p50 row at x(p50).
    let ttft = panels[0];
    let (x, y) = (AxisDrawn::read(ttft, "x"), AxisDrawn::read(ttft, "y"));
    let row = y.ticks.iter().find(|t| t.2 == "p50").unwrap().1;
    let crossing = path_points(&series(ttft, "TTFT")[0])
        .into_iter()
        .find(|p| p.1 >= row - 0.05)
        .unwrap();
    let want = x.pixel(stage.latency[LatencyMetric::Ttft].p50);
    assert!(
        (crossing.0 - want).abs() < 3.0,
        "p50 drawn at {} px, expected {want:.1}",
        crossing.0
    );
    // `ttft.p95 < 500ms` drawn at 500 ms, labelled with its outcome.
    let thresholds = refs(ttft, "threshold");
    assert_eq!(thresholds.len(), 1);
    assert_eq!(attr(&thresholds[0], "data-value"), 500.0);
    assert!((ref_x(&thresholds[0]) - x.pixel(500.0)).abs() < 0.6);
    assert!(text_of(&thresholds[0]).starts_with("ttft.p95 < 500ms: "));
    assert!(refs(panels[1], "threshold").is_empty(), "no ITL assertion");
}

#[test]
fn old_results_without_histograms_say_their_curves_are_percentiles_only() {
    let plots = render_plots(&fixture("current.json")).unwrap();
    let (_, svg) = plots
        .iter()
        .find(|(n, _)| n.ends_with("latency-cdf.svg"))
        .unwrap();
    let doc = Document::parse(svg).unwrap();
    let note = by_class(doc.root_element(), "note");
    assert!(text_of(&note[0]).contains("recorded percentiles only"));
}

fn row(load: f64, achieved: f64, ttft50: f64, ttft99: f64, knee: bool) -> ProfileRow {
    ProfileRow {
        stage: format!("p@{load}"),
        load,
        scheduled: load,
        ttft_p50_ms: ttft50,
        ttft_p99_ms: ttft99,
        itl_p99_ms: 12.0,
        e2e_p99_ms: ttft99 + 400.0,
        achieved_per_s: achieved,
        output_tokens_per_s: achieved * 16.0,
        saturated: load > 25.0,
        client_bound: false,
        outcome: if load <= 15.0 { "pass" } else { "fail" },
        icon: if load <= 15.0 { "✅" } else { "❌" },
        sla_ok: load <= 15.0,
        gates: load <= 20.0,
        knee,
        accuracy: None,
    }
}

fn group() -> ProfileGroup {
    ProfileGroup {
        group: "profile".into(),
        axis: "req/s",
        kind: "sweep",
        rows: vec![
            row(5.0, 5.0, 15.0, 20.0, false),
            row(10.0, 10.0, 16.0, 24.0, false),
            row(15.0, 14.8, 18.0, 40.0, false),
            row(20.0, 19.5, 25.0, 90.0, true),
            row(35.0, 24.0, 400.0, 900.0, false),
            row(50.0, 24.2, 1500.0, 2600.0, false),
        ],
        knee_load: Some(20.0),
        sla_max_load: Some(15.0),
        sla_max_upper: None,
        undecided: 0,
        answer: String::new(),
        plot: "profile-profile.svg".into(),
        thresholds: vec![(500.0, "ttft.p99 < 500ms".into())],
        answer_kind: infermeter_core::protocol::Answer::Stream,
        streamed: true,
        generates: true,
        quality_plot: None,
        accuracy_thresholds: Vec::new(),
    }
}

/// Each latency series drawn once, a point per load, in a colour and marker of its own.
fn series_apart(top: Node, names: &[&str]) {
    let mut looks = Vec::new();
    for name in names {
        let s = series(top, name);
        assert_eq!(s.len(), 1, "{name}");
        assert_eq!(
            attr(&s[0], "data-points"),
            6.0,
            "{name}: one point per load"
        );
        looks.push((stroke(&s[0]), marker_kind(&s[0])));
    }
    // One colour, one dash and one marker per metric: apart in colour and in grey.
    for i in 0..looks.len() {
        for j in i + 1..looks.len() {
            assert_ne!(
                looks[i].0.0, looks[j].0.0,
                "colours of {} {}",
                names[i], names[j]
            );
            assert_ne!(
                looks[i].1, looks[j].1,
                "markers of {} {}",
                names[i], names[j]
            );
        }
    }
}

/// The knee and the SLA maximum at their points' achieved throughput, labelled with their
/// offered load, and the latency SLA as a horizontal line.
fn first_run_references(top: Node, x: &AxisDrawn, y: &AxisDrawn) {
    // The knee at the knee point's achieved throughput, labelled with its offered load.
    let knee = refs(top, "knee");
    assert_eq!(knee.len(), 1);
    assert_eq!(attr(&knee[0], "data-value"), 19.5);
    assert!((ref_x(&knee[0]) - x.pixel(19.5)).abs() < 0.6);
    assert_eq!(text_of(&knee[0]), "knee 20 req/s");
    let max = refs(top, "sla-max");
    assert_eq!(text_of(&max[0]), "SLA max 15 req/s");
    assert!((ref_x(&max[0]) - x.pixel(14.8)).abs() < 0.6);
    // The latency SLA as a horizontal line at 500 ms.
    let limit = refs(top, "threshold");
    assert_eq!(limit.len(), 1);
    assert_eq!(limit[0].attribute("data-axis"), Some("y"));
    let line = limit[0]
        .children()
        .find(|c| c.has_tag_name("line"))
        .unwrap();
    assert_eq!(attr(&line, "y1"), attr(&line, "y2"), "horizontal");
    assert!((attr(&line, "y1") - y.pixel(500.0)).abs() < 0.6);
    assert_eq!(text_of(&limit[0]), "ttft.p99 < 500ms");
}

#[test]
fn the_profile_plots_latency_against_achieved_throughput_with_labelled_knee_and_sla_max() {
    let g = group();
    let svg = profile_svg(&[("", &g)]).unwrap();
    keep("profile.svg", &svg);
    let doc = Document::parse(&svg).unwrap();
    let root = doc.root_element();
    assert_eq!(root.attribute("data-kind"), Some("profile"));
    let panels = by_class(root, "panel");
    assert_eq!(panels.len(), 2);
    let top = panels[0];
    let names = ["TTFT p50", "TTFT p99", "ITL p99", "E2E p99"];
    series_apart(top, &names);
    let legend: Vec<String> = by_class(root, "legend-entry")
        .iter()
        .map(|e| e.attribute("data-name").unwrap().to_string())
        .collect();
    for name in names
        .iter()
        .chain(&["knee", "SLA-compliant max", "SLA threshold"])
    {
        assert!(
            legend.iter().any(|l| l == name),
            "legend lacks {name}: {legend:?}"
        );
    }
    let (x, y) = (AxisDrawn::read(top, "x"), AxisDrawn::read(top, "y"));
    x.check("throughput");
    x.check_labels_apart("throughput");
    y.check("latency");
    assert!(y.log, "ITL and E2E are orders apart: log latency");
    let title = |p: Node, which: &str| {
        let axis = p
            .descendants()
            .find(|d| class_is(d, "axis") && class_is(d, which))
            .unwrap();
        text_of(&by_class(axis, "axis-title")[0])
    };
    assert!(title(top, "x").starts_with("achieved throughput"));
    first_run_references(top, &x, &y);
    // Offered load shown: beside the points, and as the axis of the panel below.
    let labels: Vec<String> = by_class(top, "point-label").iter().map(text_of).collect();
    assert!(labels.contains(&"50 req/s".to_string()), "{labels:?}");
    let below = panels[1];
    assert!(title(below, "x").starts_with("offered load"));
    let x2 = AxisDrawn::read(below, "x");
    x2.check("offered");
    let knee2 = refs(below, "knee");
    assert!((ref_x(&knee2[0]) - x2.pixel(20.0)).abs() < 0.6);
    assert_eq!(series(below, "achieved = offered").len(), 1);
}

#[test]
fn a_profile_from_a_real_sweep_has_every_point() {
    let results = fixture("sim-profile.json");
    let groups = profiles(&results);
    assert_eq!(groups.len(), 1);
    let svg = profile_svg(&[("", &groups[0])]).unwrap();
    let doc = Document::parse(&svg).unwrap();
    let top = by_class(doc.root_element(), "panel")[0];
    let s = series(top, "TTFT p99");
    assert_eq!(attr(&s[0], "data-points"), groups[0].rows.len() as f64);

    // A latency assertion on the sweep's points becomes the group's threshold line; the
    // error-rate ones do not.
    let mut r = results.clone();
    let mut v = r.sla[0].clone();
    v.assertion = "ttft.p99 < 300ms".parse().unwrap();
    v.threshold = 300.0;
    v.stage = Some(groups[0].rows[2].stage.clone());
    r.sla.push(v);
    let g = &profiles(&r)[0];
    assert_eq!(g.thresholds, [(300.0, "ttft.p99 < 300ms".to_string())]);
}

fn timeline_stage() -> StageSummary {
    let mut s = StageSummary {
        name: "steady".into(),
        wall_time_s: 4.5,
        ..StageSummary::default()
    };
    // 10 requests a second; the last half second sends 5 and completes 5.
    for (t, n) in [(0.0, 10), (1.0, 10), (2.0, 10), (3.0, 10), (4.0, 5)] {
        s.timeline.push(TimelinePoint {
            t_s: t,
            sent: n,
            completed: n,
            failed: 0,
            output_tokens: n * 20,
            ttft_p50_ms: 30.0,
            e2e_p99_ms: 300.0,
            in_flight: 0.0,
        });
    }
    s.requests.sent = 45;
    s.throughput.achieved_rate_per_s = 10.0;
    s
}

#[test]
fn the_timeline_has_no_fake_drop_at_the_end_and_marks_where_sending_stopped() {
    let svg = timeline_svg(&timeline_stage()).unwrap().unwrap();
    keep("timeline.svg", &svg);
    let doc = Document::parse(&svg).unwrap();
    let panels = by_class(doc.root_element(), "panel");
    assert_eq!(panels.len(), 3);
    let rates = panels[1];
    let y = AxisDrawn::read(rates, "y");
    y.check("requests/s");
    let sent = path_points(&series(rates, "sent")[0]);
    assert_eq!(sent.len(), 5);
    let ten = y.pixel(10.0);
    for (i, p) in sent.iter().enumerate() {
        assert!(
            (p.1 - ten).abs() < 0.6,
            "point {i} at {} px, 10/s is {ten:.1}",
            p.1
        );
    }
    for p in &panels {
        let stop = refs(*p, "sending-stopped");
        assert_eq!(stop.len(), 1);
        assert_eq!(attr(&stop[0], "data-value"), 4.5);
    }
    assert!(text_of(&refs(panels[0], "sending-stopped")[0]).contains("sending stopped"));
}

#[test]
fn compare_plots_overlay_both_runs() {
    let results = fixture("sim-quickstart.json");
    let svgs = compare_svgs(&results, &results).unwrap();
    let names: Vec<&str> = svgs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["stage-poisson-latency", "stage-closed-loop-latency"]
    );
    let doc = Document::parse(&svgs[0].1).unwrap();
    for p in by_class(doc.root_element(), "panel") {
        let runs: Vec<&str> = by_class(p, "series")
            .iter()
            .map(|s| s.attribute("data-run").unwrap())
            .collect();
        assert_eq!(runs, ["baseline", "current"]);
        let looks: Vec<_> = by_class(p, "series").iter().map(stroke).collect();
        assert_ne!(looks[0], looks[1], "baseline and current drawn apart");
    }
    let profile = fixture("sim-profile.json");
    let svgs = compare_svgs(&profile, &profile).unwrap();
    assert_eq!(svgs[0].0, "profile");
    let doc = Document::parse(&svgs[0].1).unwrap();
    let top = by_class(doc.root_element(), "panel")[0];
    let runs: Vec<&str> = series(top, "TTFT p99")
        .iter()
        .map(|s| s.attribute("data-run").unwrap())
        .collect();
    assert_eq!(runs, ["baseline", "current"]);
}

#[test]
fn plots_are_byte_for_byte_deterministic() {
    let r = fixture("sim-profile.json");
    assert_eq!(render_plots(&r).unwrap(), render_plots(&r).unwrap());
}

#[test]
fn the_server_plot_shows_queue_and_kv_cache_beside_latency() {
    let results = fixture("sim-telemetry.json");
    let plots = render_plots(&results).unwrap();
    let (name, svg) = plots
        .iter()
        .find(|(n, _)| n == "stage-light-server.svg")
        .expect("the light stage's server plot");
    keep(name, svg);
    let doc = Document::parse(svg).unwrap();
    let root = doc.root_element();
    assert_eq!(root.attribute("data-kind"), Some("server-timeline"));
    let panels = by_class(root, "panel");
    let titles: Vec<&str> = panels
        .iter()
        .map(|p| p.attribute("data-title").unwrap())
        .collect();
    assert_eq!(titles, ["latency (ms)", "requests", "KV cache (%)"]);
    for (p, names) in panels.iter().zip([
        &["TTFT p50", "E2E p99"][..],
        &["running", "waiting"][..],
        &["KV usage"][..],
    ]) {
        for n in names {
            let s = series(*p, n);
            assert_eq!(s.len(), 1, "{n}");
            assert!(attr(&s[0], "data-points") >= 2.0, "{n}");
        }
        let (x, y) = (AxisDrawn::read(*p, "x"), AxisDrawn::read(*p, "y"));
        x.check("time");
        x.check_labels_apart("time");
        y.check("y");
        assert_eq!(refs(*p, "sending-stopped").len(), 1);
    }
    // KV usage is drawn in percent: every point inside 0..=100.
    let kv = AxisDrawn::read(panels[2], "y");
    assert!(kv.min >= 0.0 && kv.max <= 105.0, "{}..{}", kv.min, kv.max);
}
