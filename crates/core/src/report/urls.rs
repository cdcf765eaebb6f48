//! A target's several URLs in the reports: one row per URL of a stage (its share of the
//! requests, failures, prefix-cache share, TTFT and E2E) for report.md and report.html, the
//! lines under a stage in the terminal summary, and `urls.csv`. URLs come from `results.target.routes`, masked when the result was made; every
//! sink escapes them again as it escapes any text.

use std::fmt::Write as _;

use serde::Serialize;

use super::numbers::num;
use crate::escape::terminal as t;
use crate::metrics::{LatencyMetric, StageSummary, UrlSummary};
use crate::protocol::Routes;

#[derive(Debug, Serialize)]
pub struct UrlRow {
    /// The URL's index in the target's list.
    pub index: u16,
    /// The URL (masked).
    pub url: String,
    pub sent: u64,
    pub ok: u64,
    pub failed: u64,
    /// Share of the stage's requests this URL was sent.
    pub share: String,
    /// Prompt tokens served from the prefix cache, or `–` when the server never said.
    pub cached: String,
    pub ttft_p50: String,
    pub ttft_p99: String,
    pub e2e_p50: String,
    pub e2e_p99: String,
}

/// The URL `index` names, masked; a placeholder when the result lists none by that index.
pub(super) fn label(routes: Option<&Routes>, index: u16) -> String {
    routes
        .and_then(|r| r.urls.get(usize::from(index)))
        .map_or_else(
            || format!("URL {index}"),
            |u| crate::redact::secrets(&u.url).into_owned(),
        )
}

fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "–".to_string(), |s| format!("{} %", num(s * 100.0)))
}

/// The rows of a stage's URLs (none for a target with one URL).
pub fn rows(routes: Option<&Routes>, s: &StageSummary) -> Vec<UrlRow> {
    s.per_url
        .iter()
        .map(|u| {
            let (ttft, e2e) = (
                u.figures.latency[LatencyMetric::Ttft],
                u.figures.latency[LatencyMetric::E2e],
            );
            UrlRow {
                index: u.url,
                url: label(routes, u.url),
                sent: u.figures.sent,
                ok: u.figures.ok,
                failed: u.figures.failed,
                share: percent(share_of(u, s)),
                cached: percent(u.figures.cached_share),
                ttft_p50: figure(&ttft, ttft.p50),
                ttft_p99: figure(&ttft, ttft.p99),
                e2e_p50: figure(&e2e, e2e.p50),
                e2e_p99: figure(&e2e, e2e.p99),
            }
        })
        .collect()
}

/// A percentile of `d`, or a dash when it has no sample (a pooling API's TTFT, a URL whose
/// every request failed): never a 0 nothing measured.
fn figure(d: &crate::metrics::Dist, value: f64) -> String {
    if d.count > 0 {
        num(value)
    } else {
        "–".to_string()
    }
}

fn share_of(u: &UrlSummary, s: &StageSummary) -> Option<f64> {
    (s.requests.sent > 0).then(|| u.figures.sent as f64 / s.requests.sent as f64)
}

/// The terminal summary's lines under a stage: one per URL.
pub fn summary_lines(out: &mut String, routes: Option<&Routes>, s: &StageSummary) {
    for r in rows(routes, s) {
        // No TTFT figure where the URL has none (a pooling API's answers come whole).
        let ttft = if r.ttft_p50 == "–" {
            String::new()
        } else {
            format!(", TTFT p50/p99 {} / {} ms", r.ttft_p50, r.ttft_p99)
        };
        let _ = writeln!(
            out,
            "    → {}  sent {} ({}), failed {}, cached {}{ttft}, E2E p99 {} ms",
            t(&r.url),
            r.sent,
            r.share,
            r.failed,
            r.cached,
            r.e2e_p99
        );
    }
}

/// `urls.csv`: one row per stage and URL of a target with several (RFC 4180, as
/// `stages.csv`); empty, and so not written, for a target with one URL.
pub fn urls_csv(results: &crate::results::Results) -> String {
    let routes = results.target.routes.as_ref();
    if results.stages.iter().all(|s| s.per_url.is_empty()) {
        return String::new();
    }
    let mut out = String::from(
        "stage,url_index,url,sent,ok,failed,input_tokens,output_tokens,cached_tokens,\
         cached_share,ttft_p50_ms,ttft_p99_ms,e2e_p50_ms,e2e_p99_ms\r\n",
    );
    for s in &results.stages {
        for u in &s.per_url {
            let (ttft, e2e) = (
                u.figures.latency[LatencyMetric::Ttft],
                u.figures.latency[LatencyMetric::E2e],
            );
            let _ = write!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\r\n",
                crate::escape::csv_cell(&s.name),
                u.url,
                crate::escape::csv_cell(&label(routes, u.url)),
                u.figures.sent,
                u.figures.ok,
                u.figures.failed,
                u.figures.input_tokens,
                u.figures.output_tokens,
                u.figures.cached_tokens,
                u.figures
                    .cached_share
                    .map_or_else(String::new, |c| c.to_string()),
                ttft.p50,
                ttft.p99,
                e2e.p50,
                e2e.p99,
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::SliceFigures;

    /// A URL whose requests have no TTFT (a pooling API) or no sample at all (every one
    /// failed) shows a dash, and its summary line no TTFT: never "0 / 0 ms".
    #[test]
    fn a_url_without_a_sample_shows_no_figure() {
        let mut answered = SliceFigures {
            sent: 4,
            ok: 4,
            ..SliceFigures::default()
        };
        answered.latency[LatencyMetric::E2e].count = 4;
        answered.latency[LatencyMetric::E2e].p99 = 12.5;
        let failed = SliceFigures {
            sent: 4,
            failed: 4,
            ..SliceFigures::default()
        };
        let s = StageSummary {
            per_url: vec![
                UrlSummary {
                    url: 0,
                    figures: answered,
                },
                UrlSummary {
                    url: 1,
                    figures: failed,
                },
            ],
            ..StageSummary::default()
        };
        let rows = rows(None, &s);
        assert_eq!(
            (rows[0].ttft_p50.as_str(), rows[0].e2e_p99.as_str()),
            ("–", "12.5")
        );
        assert_eq!(
            (rows[1].ttft_p99.as_str(), rows[1].e2e_p99.as_str()),
            ("–", "–")
        );
        let mut out = String::new();
        summary_lines(&mut out, None, &s);
        assert!(!out.contains("TTFT") && !out.contains(" 0 ms"), "{out}");
    }
}
