//! A stage's timeline plot (latency and throughput over time, from the per-second timeline)
//! and the stacked time panels it shares with the telemetry server plot.

use super::ReportError;
use super::svg::style::{self, Style};
use super::svg::{Axis, Doc, LegendEntry, Orient, Rect, Scale};
use crate::metrics::{StageSummary, TimelinePoint};

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
    // A stage answered whole has no first token (`stream #false`, a pooling API); a pooling
    // API's has no output either: its E2E and requests only.
    let streamed = !stage.latency.is_whole();
    let generates = !stage.pooled();
    let mut latencies = Vec::with_capacity(2);
    if streamed {
        latencies.push(("TTFT p50", latency(&|p| p.ttft_p50_ms)));
    }
    latencies.push(("E2E p99", latency(&|p| p.e2e_p99_ms)));
    let panels = [
        ("latency (ms)", latencies),
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
    let panels = panels.into_iter().take(if generates { 3 } else { 2 });
    let t_max = stage
        .wall_time_s
        .max(stage.timeline.last().map_or(1.0, |p| p.t_s + 1.0));
    let stopped = sending_stopped_s(stage);
    stacked_time_panels(
        "timeline",
        &format!("{}: over time", stage.name),
        t_max,
        stopped,
        steady_bounds(stage),
        panels,
    )
    .map(Some)
}

/// The steady-state window's bounds, drawn as two guide lines.
pub(crate) fn steady_bounds(stage: &StageSummary) -> Option<(f64, f64)> {
    stage.steady.as_ref().map(|w| (w.from_s, w.to_s))
}

/// The vertical lines of one panel: where sending stopped, the steady-state window's bounds;
/// labelled in the first panel only.
fn time_marks(
    doc: &mut Doc,
    p: &super::svg::canvas::Panel,
    first: bool,
    sending_stopped: Option<f64>,
    steady: Option<(f64, f64)>,
) {
    let label = |text: String| if first { text } else { String::new() };
    if let Some(t) = sending_stopped {
        let text = label(format!("sending stopped ({t:.1} s)"));
        doc.reference(
            p,
            Orient::Vertical,
            "sending-stopped",
            t,
            &text,
            style::NOTE,
        );
    }
    if let Some((from, to)) = steady {
        for (t, edge) in [(from, "from"), (to, "to")] {
            let text = label(format!("steady {edge} {t:.0} s"));
            doc.reference(p, Orient::Vertical, "steady", t, &text, style::GUIDE);
        }
    }
}

/// Stacked panels (three, or two for a pooling API's stage) sharing a time axis (seconds
/// since the stage start), each with its
/// own y axis; one legend above them all, each series in its own house style. Used by the
/// stage timeline and the telemetry server plot.
pub(crate) fn stacked_time_panels<'a>(
    kind: &str,
    title: &str,
    t_max: f64,
    sending_stopped: Option<f64>,
    steady: Option<(f64, f64)>,
    panels: impl IntoIterator<Item = (&'a str, Vec<Series<'a>>)>,
) -> Result<String, ReportError> {
    let panels: Vec<(&str, Vec<Series>)> = panels.into_iter().collect();
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
    if steady.is_some() {
        legend.push(LegendEntry {
            label: "steady-state window".into(),
            style: style::GUIDE,
        });
    }
    let mut doc = Doc::new(kind, title, w, 0.0);
    let top = doc.legend(34.0, &legend);
    let panel_h = 220.0;
    doc.set_height(top + panels.len() as f64 * panel_h + 6.0);
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
        time_marks(&mut doc, &p, i == 0, sending_stopped, steady);
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
