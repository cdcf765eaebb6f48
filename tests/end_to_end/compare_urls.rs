//! `infermeter compare` per URL through the real binary: two results of a target with two URLs
//! (the baseline fixture given routes and a `per_url` split), the current one's second URL
//! slower. The text and Markdown comparisons show a table per stage and URL, matched by URL,
//! with the slower URL's change, and the URL rows never gate the verdict.

use std::path::Path;

use crate::support::{infermeter, text};
use infermeter_core::metrics::{LatencyMetric, SliceFigures, UrlSummary};
use infermeter_core::protocol::{RoutePolicy, RoutedUrl, Routes};
use infermeter_core::results::{Results, read_results};

const A: &str = "http://10.0.0.1:8000/v1";
const B: &str = "http://10.0.0.2:8000/v1";

/// The fixture with two URLs, each given half of every stage's requests and the stage's TTFT
/// and E2E; URL `B`'s latencies times `slower`. `swap` lists the URLs the other way round,
/// so matching by index would pair the wrong ones.
fn two_urls(dir: &Path, name: &str, slower: f64, swap: bool) -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results/baseline.json");
    let mut r: Results = read_results(&fixture).unwrap();
    let urls = if swap { [B, A] } else { [A, B] };
    r.target.routes = Some(Routes {
        urls: urls
            .iter()
            .map(|u| RoutedUrl {
                url: (*u).to_string(),
                weight: 1,
            })
            .collect(),
        policy: RoutePolicy::RoundRobin,
    });
    for s in &mut r.stages {
        let half = s.requests.ok / 2;
        s.per_url = (0..2u16)
            .map(|i| {
                let mut u = UrlSummary {
                    url: i,
                    figures: SliceFigures {
                        sent: half,
                        ok: half,
                        ..SliceFigures::default()
                    },
                };
                let is_b = urls[usize::from(i)] == B;
                for m in [LatencyMetric::Ttft, LatencyMetric::E2e] {
                    let mut d = s.latency[m];
                    d.count = d.count.min(half);
                    d.intervals = None;
                    if is_b {
                        for v in [
                            &mut d.p50,
                            &mut d.p90,
                            &mut d.p95,
                            &mut d.p99,
                            &mut d.p999,
                            &mut d.max,
                            &mut d.min,
                            &mut d.mean,
                        ] {
                            *v *= slower;
                        }
                    }
                    u.figures.latency[m] = d;
                }
                u
            })
            .collect();
    }
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(&r).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn compare_shows_each_url_matched_by_url_and_does_not_gate_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let base = two_urls(dir.path(), "base.json", 1.0, false);
    let cur = two_urls(dir.path(), "cur.json", 2.0, true);
    let o = infermeter(&["compare", &base, &cur]);
    let (stdout, stderr) = text(&o);
    // The stages' own figures did not move: the run passes, whatever one URL did.
    assert_eq!(o.status.code(), Some(0), "{stdout}{stderr}");
    let section = |url: &str| {
        let head = format!("stage steady at {url} (per URL, not gated)");
        let at = stdout
            .find(&head)
            .unwrap_or_else(|| panic!("no {head:?}: {stdout}"));
        stdout[at..].lines().take(10).collect::<Vec<_>>().join("\n")
    };
    let a = section(A);
    let b = section(B);
    let row = |s: &str, metric: &str| {
        s.lines()
            .find(|l| l.trim_start().starts_with(metric))
            .unwrap_or_else(|| panic!("no {metric}: {s}"))
            .to_string()
    };
    assert!(row(&b, "ttft.p99 (ms)").ends_with("+100.0 %"), "{b}");
    assert!(row(&b, "e2e.p50 (ms)").ends_with("+100.0 %"), "{b}");
    assert!(row(&a, "ttft.p99 (ms)").ends_with("+0.0 %"), "{a}");
    assert!(row(&a, "share of requests").ends_with("+0.0 pt"), "{a}");
    let o = infermeter(&["compare", &base, &cur, "--format", "markdown"]);
    let (md, _) = text(&o);
    assert!(
        md.contains(&format!(
            "#### Stage `steady` at `{B}` (per URL, not gated)"
        )),
        "{md}"
    );
    assert!(md.contains("| +100.0 % |"), "{md}");
}

#[test]
fn results_without_urls_have_no_url_rows() {
    let dir = tempfile::tempdir().unwrap();
    let base = two_urls(dir.path(), "base.json", 1.0, false);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results/baseline.json");
    let o = infermeter(&["compare", &base, fixture.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert!(!stdout.contains("per URL"), "{stdout}{stderr}");
}
