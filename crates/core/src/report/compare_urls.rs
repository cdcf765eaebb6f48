//! `compare` per URL: when both runs spread a stage over several URLs (`per_url`), a row per
//! URL the two share — its share of the requests, failures, prefix-cache share, TTFT and E2E
//! p50/p99, baseline and current, and the change. URLs are matched by the URL itself (masked
//! as the results keep it), else by their index when a result lists no routes. These rows
//! are descriptive and never gate: a URL's requests are what the route sent it, which is not
//! the same sample in two runs (a by-session route moves whole sessions); a URL's change says
//! where to look, and the stage's and its labels' verdicts judge the run.

use serde::Serialize;

use super::numbers::num;
use crate::metrics::{Dist, LatencyMetric, StageSummary, UrlSummary};
use crate::results::Results;

/// One URL of a stage both runs have, in both.
#[derive(Debug, Clone, Serialize)]
pub struct UrlComparison {
    pub stage: String,
    /// The URL (masked), or `URL n` when a result lists no routes.
    pub url: String,
    pub figures: Vec<UrlFigure>,
}

/// One figure of a URL in both runs, as text.
#[derive(Debug, Clone, Serialize)]
pub struct UrlFigure {
    pub metric: String,
    pub baseline: String,
    pub current: String,
    /// Relative change, `–` where either side has none.
    pub change: String,
}

/// The URL rows of every stage both runs have and both spread over several URLs.
pub fn compare_urls(baseline: &Results, current: &Results) -> Vec<UrlComparison> {
    let mut out = Vec::new();
    for cur in &current.stages {
        let Some(base) = baseline.stages.iter().find(|b| b.name == cur.name) else {
            continue;
        };
        if base.per_url.is_empty() || cur.per_url.is_empty() {
            continue;
        }
        for cu in &cur.per_url {
            let url = super::urls::label(current.target.routes.as_ref(), cu.url);
            let by_url = |bu: &&UrlSummary| {
                let name = super::urls::label(baseline.target.routes.as_ref(), bu.url);
                match (&baseline.target.routes, &current.target.routes) {
                    (Some(_), Some(_)) => name == url,
                    _ => bu.url == cu.url,
                }
            };
            let Some(bu) = base.per_url.iter().find(by_url) else {
                continue;
            };
            out.push(UrlComparison {
                stage: cur.name.clone(),
                url,
                figures: figures((bu, base), (cu, cur)),
            });
        }
    }
    out
}

/// The figures of one URL: shares as percentages, latencies in ms.
fn figures(
    (bu, bs): (&UrlSummary, &StageSummary),
    (cu, cs): (&UrlSummary, &StageSummary),
) -> Vec<UrlFigure> {
    let share = |u: &UrlSummary, s: &StageSummary| {
        (s.requests.sent > 0).then(|| u.figures.sent as f64 / s.requests.sent as f64 * 100.0)
    };
    let failed = |u: &UrlSummary| {
        let f = &u.figures;
        (f.sent > 0).then(|| f.failed as f64 / f.sent as f64 * 100.0)
    };
    let cached = |u: &UrlSummary| u.figures.cached_share.map(|c| c * 100.0);
    let mut out = vec![
        percent("share of requests", share(bu, bs), share(cu, cs)),
        percent("failed", failed(bu), failed(cu)),
        percent("cached share", cached(bu), cached(cu)),
    ];
    for (m, name) in [(LatencyMetric::Ttft, "ttft"), (LatencyMetric::E2e, "e2e")] {
        let (b, c) = (&bu.figures.latency[m], &cu.figures.latency[m]);
        if b.count == 0 && c.count == 0 {
            // An API answered whole has no TTFT.
            continue;
        }
        let at = |d: &Dist, p: f64| (d.count > 0).then_some(p);
        for (q, bv, cv) in [("p50", b.p50, c.p50), ("p99", b.p99, c.p99)] {
            let (bv, cv) = (at(b, bv), at(c, cv));
            out.push(UrlFigure {
                metric: format!("{name}.{q} (ms)"),
                baseline: bv.map_or_else(dash, num),
                current: cv.map_or_else(dash, num),
                change: change(bv, cv),
            });
        }
    }
    out
}

fn dash() -> String {
    "–".to_string()
}

/// A share in percent, its change in percentage points.
fn percent(metric: &str, b: Option<f64>, c: Option<f64>) -> UrlFigure {
    let text = |v: Option<f64>| v.map_or_else(dash, |v| format!("{} %", num(v)));
    UrlFigure {
        metric: metric.to_string(),
        baseline: text(b),
        current: text(c),
        change: match (b, c) {
            (Some(b), Some(c)) => format!("{:+.1} pt", c - b),
            _ => dash(),
        },
    }
}

/// The relative change of a latency, in percent.
fn change(b: Option<f64>, c: Option<f64>) -> String {
    match (b, c) {
        (Some(b), Some(c)) if b > 0.0 => format!("{:+.1} %", (c - b) / b * 100.0),
        _ => dash(),
    }
}
