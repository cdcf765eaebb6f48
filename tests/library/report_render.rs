//! Rendering a fixed results file: the Markdown report (snapshot), JUnit, SVG plots and
//! `write_all`.

use std::path::Path;

use infermeter_core::metrics::LatencyMetric;
use infermeter_core::report::{
    JUNIT_FILE, REPORT_FILE, ReportError, WriteOptions, junit_xml, render_markdown,
    render_summary_text, write_all, write_plots,
};
use infermeter_core::results::{RESULTS_FILE, Results, read_results};

fn fixture(name: &str) -> Results {
    read_results(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/results")
            .join(name),
    )
    .expect("fixture parses")
}

#[test]
fn markdown_report_snapshot() {
    let md = render_markdown(&fixture("current.json"), None).unwrap();
    insta::assert_snapshot!("current_report", md);
}

#[test]
fn markdown_puts_the_verdict_and_failed_assertion_first() {
    let md = render_markdown(&fixture("current.json"), None).unwrap();
    let first = md.lines().next().unwrap();
    assert!(first.contains('❌') && first.contains("1 of 3"), "{first}");
    let failed = md
        .find("| ❌ | `error_rate < 1%` | peak | 1.08 % |  | 1 % |")
        .expect("failed row");
    let passed = md.find("| ✅ |").expect("passed row");
    assert!(failed < passed, "failed assertions come first");
    assert!(
        md.contains("client CPU above 85 %"),
        "validity reasons are shown"
    );
    assert!(md.contains("| `http_429` | 6 |"));

    let ok = render_markdown(&fixture("baseline.json"), None).unwrap();
    let first = ok.lines().next().unwrap();
    assert!(
        first.contains("✅ chat-pr-gate: PASSED — all 3 SLA assertions passed"),
        "{first}"
    );

    // A version-2 result: intervals beside the figures, undecided ones said so.
    let v2 = render_markdown(&fixture("v2.json"), None).unwrap();
    assert!(v2.contains("95 % confidence intervals"), "{v2}");
    assert!(v2.contains("<sub>["), "{v2}");
    assert!(v2.contains("across 3 rounds"), "{v2}");
}

#[test]
fn custom_templates_are_strict() {
    let r = fixture("current.json");
    let md = render_markdown(&r, Some("{{ results.scenario }}/{{ view.sla_failed }}")).unwrap();
    assert_eq!(md, "chat-pr-gate/1");
    let err = render_markdown(&r, Some("{{ results.no_such_field }}")).unwrap_err();
    assert!(matches!(err, ReportError::Template { .. }), "{err}");
    assert!(render_markdown(&r, Some("{% if %}")).is_err());
}

#[test]
fn junit_names_the_failing_assertion_with_observed_and_threshold() {
    let xml = junit_xml(&fixture("current.json"));
    assert!(well_formed(&xml), "{xml}");
    assert!(xml.contains("tests=\"3\" failures=\"1\""), "{xml}");
    let case = xml
        .split("<testcase")
        .find(|c| c.contains("<failure"))
        .expect("a failing test case");
    assert!(
        case.contains("name=\"error_rate &lt; 1% [peak]\""),
        "{case}"
    );
    assert!(case.contains("observed 1.08 %, threshold 1 %"), "{case}");
    assert_eq!(xml.matches("<failure").count(), 1);
}

#[test]
fn plots_are_well_formed_svg_with_their_series() {
    let dir = tempfile::tempdir().unwrap();
    if let Ok(keep) = std::env::var("KEEP_PLOTS") {
        write_plots(&fixture("current.json"), Path::new(&keep)).unwrap();
    }
    let files = write_plots(&fixture("current.json"), dir.path()).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "stage-steady-latency-cdf.svg",
            "stage-steady-timeline.svg",
            "stage-peak-latency-cdf.svg",
            "stage-peak-timeline.svg"
        ]
    );
    for f in &files {
        let svg = std::fs::read_to_string(f).unwrap();
        assert!(svg.starts_with("<svg"), "{}", f.display());
        assert!(well_formed(&svg), "{} is not well-formed", f.display());
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let stage = if name.contains("steady") {
            "steady"
        } else {
            "peak"
        };
        let (caption, series): (String, &[&str]) = if name.ends_with("latency-cdf.svg") {
            (
                format!("{stage}: latency distribution"),
                &[
                    "TTFT (ms, log scale)",
                    "ITL (ms, log scale)",
                    "E2E (ms, log scale)",
                ],
            )
        } else {
            (
                format!("{stage}: over time"),
                &[
                    "TTFT p50",
                    "E2E p99",
                    "sent",
                    "completed",
                    "failed",
                    "output tok/s",
                ],
            )
        };
        let texts = svg_texts(&svg);
        assert!(
            texts.contains(&caption),
            "{name}: no `{caption}` in {texts:?}"
        );
        for s in series {
            assert!(
                texts.iter().any(|t| t == s),
                "{name} lacks series {s}: {texts:?}"
            );
        }
        assert!(
            svg.contains("<path") || svg.contains("<polyline"),
            "no line drawn"
        );
    }
}

#[test]
fn write_all_writes_everything_and_appends_the_step_summary() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let results = fixture("current.json");
    let out = dir.path().join("run");
    let opts = WriteOptions {
        step_summary: Some(summary.clone()),
        ..WriteOptions::default()
    };
    let files = write_all(&results, &out, &opts).unwrap();
    assert_eq!(files[0], out.join(RESULTS_FILE));
    assert!(files.contains(&out.join(REPORT_FILE)));
    assert!(files.contains(&out.join(JUNIT_FILE)));
    // results.json, report.md, report.html, report.pr.md, stages.csv, junit.xml; 4 plots.
    assert_eq!(files.len(), 6 + 4);
    assert_eq!(
        read_results(&out.join(RESULTS_FILE)).unwrap(),
        results,
        "round trip"
    );
    let md = std::fs::read_to_string(out.join(REPORT_FILE)).unwrap();
    assert!(md.contains(
        "![peak: latency distribution (TTFT, ITL, TPOT, E2E)](stage-peak-latency-cdf.svg)"
    ));
    let s = std::fs::read_to_string(&summary).unwrap();
    assert!(s.starts_with("earlier step\n## ❌ chat-pr-gate"), "{s}");
    assert!(
        !s.contains("!["),
        "relative image links do not work in a step summary"
    );
}

/// The trimmed contents of every `<text>` element.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// A small XML well-formedness check: balanced, properly nested tags, quoted attributes, and
/// only known entities. Enough to catch broken escaping or truncated output.
fn well_formed(xml: &str) -> bool {
    let body = xml
        .strip_prefix("<?xml")
        .map_or(xml, |rest| match rest.find("?>") {
            Some(i) => &rest[i + 2..],
            None => "",
        });
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = body;
    let mut roots = 0;
    while let Some(lt) = rest.find('<') {
        if !entities_ok(&rest[..lt]) {
            return false;
        }
        rest = &rest[lt + 1..];
        if let Some(after) = rest.strip_prefix("!--") {
            let Some(end) = after.find("-->") else {
                return false;
            };
            rest = &after[end + 3..];
            continue;
        }
        let Some(gt) = rest.find('>') else {
            return false;
        };
        let tag = &rest[..gt];
        rest = &rest[gt + 1..];
        if tag.contains('<') || !tag.matches('"').count().is_multiple_of(2) || !entities_ok(tag) {
            return false;
        }
        if let Some(name) = tag.strip_prefix('/') {
            if stack.pop() != Some(name.trim()) {
                return false;
            }
        } else {
            let name = tag
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_end_matches('/');
            if name.is_empty() {
                return false;
            }
            if stack.is_empty() {
                roots += 1;
            }
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
    }
    stack.is_empty() && roots == 1 && rest.trim().is_empty()
}

fn entities_ok(text: &str) -> bool {
    text.split('&').skip(1).all(|e| {
        ["amp;", "lt;", "gt;", "quot;", "apos;", "#"]
            .iter()
            .any(|k| e.starts_with(k))
    })
}

#[test]
fn terminal_summary_prints_units_only_where_there_are_some() {
    let mut r = fixture("current.json");
    let mut unitless = r.sla[0].clone();
    unitless.assertion = "gpu.throttle_ratio.min < 0.1".parse().unwrap();
    unitless.observed = 0.05;
    unitless.threshold = 0.1;
    r.sla.push(unitless);
    let text = render_summary_text(&r);
    assert!(text.contains("observed 0.05 (threshold 0.10)"), "{text}");
    // `ttft.p95 < 400ms` keeps its unit on both numbers.
    assert!(
        text.contains("observed 275 ms (threshold 400 ms)"),
        "{text}"
    );
}

#[test]
fn the_ttfa_row_appears_only_for_models_that_reason_first() {
    // The simulator answers at once: every first answer token is the first token.
    let mut r = fixture("sim-quickstart.json");
    let md = render_markdown(&r, None).unwrap();
    assert!(md.contains("| TTFT |") && !md.contains("| TTFA |"), "{md}");
    r.stages[0].latency[LatencyMetric::Ttfa].p50 += 40.0;
    r.stages[0].latency[LatencyMetric::Ttfa].p99 += 40.0;
    let md = render_markdown(&r, None).unwrap();
    assert_eq!(md.matches("| TTFA |").count(), 1, "{md}");
}

#[test]
fn the_report_says_where_the_run_came_from() {
    let md = render_markdown(&fixture("sim-quickstart.json"), None).unwrap();
    for row in [
        "| build |",
        "| command line |",
        "| params |",
        "| host |",
        "| server |",
    ] {
        assert!(md.contains(row), "no {row} in {md}");
    }
    let xml = junit_xml(&fixture("sim-quickstart.json"));
    assert!(well_formed(&xml), "{xml}");
    assert!(
        xml.contains("<property name=\"infermeter.commit\""),
        "{xml}"
    );
    assert!(xml.contains("<property name=\"scenario.sha256\""), "{xml}");
}

#[test]
fn the_pr_comment_is_short_and_links_nothing() {
    use infermeter_core::report::render_pr_comment;
    for name in ["sim-profile.json", "current.json", "v2.json"] {
        let r = fixture(name);
        let md = render_pr_comment(&r, None).unwrap();
        assert!(md.starts_with("## "), "{name}: {md}");
        assert!(
            !md.contains("](") && !md.contains("!["),
            "{name} links out: {md}"
        );
        assert!(md.contains("<details><summary>Latency per stage"), "{name}");
        // The table ends before the folded part: a blank line after every table.
        let lines: Vec<&str> = md.lines().collect();
        for w in lines.windows(2) {
            assert!(
                !(w[0].starts_with('|') && !w[1].is_empty() && !w[1].starts_with('|')),
                "{name}: text glued to a table: {w:?}"
            );
        }
        for s in &r.stages {
            assert!(
                md.contains(&format!("| `{}` |", s.name)),
                "{name}: {}",
                s.name
            );
        }
    }
    let md = render_pr_comment(&fixture("sim-profile.json"), None).unwrap();
    assert!(md.contains("**sweep `profile`**: knee"), "{md}");
    assert!(
        md.contains("infermeter 0.1.0 (`"),
        "the provenance line: {md}"
    );
}
