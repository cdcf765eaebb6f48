//! `report.html` in a real browser: headless Chromium loads the page from disk, its inline
//! script records script errors and each plot's laid-out size into the DOM, and the dumped
//! DOM must show no error and every plot present and sized; a screenshot is saved under the
//! test target directory to look at. Without `chromium` on the PATH the browser part is
//! skipped with a message, unless `INFERMETER_REQUIRE_CHROMIUM=1` (set by `.ci/run`) makes
//! that a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use infermeter_core::report::{CompareOptions, HtmlBaseline, compare, render_html};
use infermeter_core::results::{Results, read_results};

fn fixture(name: &str) -> Results {
    read_results(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/results")
            .join(name),
    )
    .expect("fixture parses")
}

/// The Chromium binary, or `None` (after saying why) when the test may skip.
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            && out.status.success()
        {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !path.is_empty() {
                return Some(PathBuf::from(path));
            }
        }
    }
    let required = std::env::var("INFERMETER_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "INFERMETER_REQUIRE_CHROMIUM=1 but no chromium on the PATH (apt-get install chromium)"
    );
    eprintln!(
        "SKIPPED: the HTML report's browser check needs `chromium` on the PATH \
         (apt-get install chromium); set INFERMETER_REQUIRE_CHROMIUM=1 to make this a failure"
    );
    None
}

/// Loads `page` in headless Chromium: (dumped DOM after load, stderr), and a screenshot.
fn browse(chromium: &Path, page: &Path, screenshot: &Path) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let base = |cmd: &mut Command| {
        cmd.arg("--headless")
            .arg("--no-sandbox")
            .arg("--disable-gpu")
            .arg("--no-first-run")
            .arg("--disable-background-networking")
            .arg("--disable-extensions")
            .arg("--hide-scrollbars")
            .arg("--enable-logging=stderr")
            .arg("--v=0")
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("--virtual-time-budget=10000")
            .arg("--window-size=1280,3600");
    };
    let url = format!("file://{}", page.display());
    let mut dump = Command::new(chromium);
    base(&mut dump);
    let out = dump
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {:?}", out);
    let mut shot = Command::new(chromium);
    base(&mut shot);
    let s = shot
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg(&url)
        .output()
        .expect("chromium runs");
    assert!(s.status.success(), "chromium screenshot failed: {s:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every `<svg class="infermeter-plot" …>` start tag in `html`.
fn plot_tags(html: &str) -> Vec<&str> {
    html.match_indices("<svg")
        .filter_map(|(i, _)| {
            let tag = &html[i..i + html[i..].find('>')?];
            tag.contains("infermeter-plot").then_some(tag)
        })
        .collect()
}

fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    Some(&tag[start..start + tag[start..].find('"')?])
}

/// The page is one file: nothing it would fetch.
fn assert_self_contained(html: &str) {
    for bad in ["<link", "<img", "<iframe", "@import", "url(", " src="] {
        assert!(!html.contains(bad), "the page loads something: `{bad}`");
    }
    let outside: Vec<&str> = html
        .match_indices("http")
        .map(|(i, _)| &html[i..(i + 40).min(html.len())])
        .filter(|s| !s.starts_with("http://www.w3.org/2000/svg"))
        .collect();
    assert!(outside.is_empty(), "links out of the page: {outside:?}");
    for (i, _) in html.match_indices("href=\"") {
        assert!(
            html[i + 6..].starts_with('#'),
            "a link that leaves the page"
        );
    }
}

fn check_in_browser(name: &str, html: &str, plots: usize) {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-html");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    let shot = dir.join(format!("{name}.png"));
    let (dom, stderr) = browse(&chromium, &page, &shot);
    let console_errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("CONSOLE") && (l.contains("ERROR") || l.contains("Uncaught")))
        .collect();
    assert!(
        console_errors.is_empty(),
        "console errors: {console_errors:?}"
    );
    assert!(
        dom.contains("data-errors=\"0\""),
        "script errors, or the script did not run"
    );
    assert!(
        dom.contains(&format!("data-plots-rendered=\"{plots}\"")),
        "expected {plots} plots laid out"
    );
    let tags = plot_tags(&dom);
    assert_eq!(tags.len(), plots);
    for tag in tags {
        let kind = attribute(tag, "data-kind").unwrap_or("?");
        let size =
            attribute(tag, "data-rendered").unwrap_or_else(|| panic!("{kind}: not laid out"));
        let (w, h) = size.split_once('x').unwrap();
        let (w, h): (f64, f64) = (w.parse().unwrap(), h.parse().unwrap());
        assert!(w >= 600.0 && h >= 300.0, "{kind} plot laid out at {size}");
    }
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a screenshot"
    );
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn the_html_report_is_self_contained_and_renders_every_plot() {
    let r = fixture("sim-quickstart.json");
    let html = render_html(&r, None).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_self_contained(&html);
    // Every stage, every plot, the SLA table, validity reasons and the provenance.
    let plots = plot_tags(&html);
    assert_eq!(plots.len(), 2 * r.stages.len());
    for s in &r.stages {
        assert!(html.contains(&format!("Stage <code>{}</code>", s.name)));
        for reason in &s.validity.reasons {
            assert!(html.contains(&minijinja_escape(reason)), "reason {reason}");
        }
    }
    for v in &r.sla {
        assert!(html.contains(&format!(
            "<code class=\"nowrap\">{}</code>",
            minijinja_escape(&v.assertion.to_string())
        )));
    }
    let p = r.provenance.as_ref().unwrap();
    assert!(html.contains(&p.scenario_sha256[..12]));
    assert!(
        html.contains("infermeter-sim"),
        "the server's self-description"
    );
    check_in_browser("quickstart", &html, plots.len());
}

#[test]
fn the_html_report_shows_the_comparison_with_a_baseline() {
    let current = fixture("sim-profile.json");
    let cmp = compare(&current, &current, &CompareOptions::default());
    let html = render_html(
        &current,
        Some(HtmlBaseline {
            results: &current,
            comparison: &cmp,
        }),
    )
    .unwrap();
    assert_self_contained(&html);
    assert!(html.contains("Against the baseline"));
    assert!(html.contains("<code>ttft.p95</code>"));
    // Per stage: distribution and timeline; the profile; and the overlays (a distribution per
    // shared stage, the profile).
    let n = current.stages.len();
    assert_eq!(plot_tags(&html).len(), 2 * n + 1 + n + 1);
    check_in_browser("profile-compare", &html, 2 * n + 1 + n + 1);
}

fn minijinja_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

#[test]
fn the_html_report_shows_where_the_time_went() {
    // A simulator standing in for llama.cpp: per-request timings give the attribution.
    let r = fixture("sim-timings.json");
    assert!(r.stages[0].attribution.is_some());
    let html = render_html(&r, None).unwrap();
    assert_self_contained(&html);
    assert!(html.contains("<th>where the time went (ms)</th>"), "{html}");
    assert!(
        html.contains("llama.cpp <code>timings</code>"),
        "source named"
    );
    assert_eq!(plot_tags(&html).len(), 2);
}
