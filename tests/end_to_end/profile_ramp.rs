//! Concurrency ramps, the concurrency search and `compare --plot` end to end: the real binary
//! against the embedded simulator. Stages are a few seconds; bounds are generous.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

fn infermeter(args: &[&str], out: &Path) -> Output {
    crate::support::command()
        .args(args)
        // Trust depends on how busy the test machine is; the profiles are under test here.
        .args(["--quiet", "--untrusted", "judge", "--out"])
        .arg(out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

fn results(dir: &Path, o: &Output) -> Value {
    let text = std::fs::read_to_string(dir.join("results.json")).unwrap_or_else(|e| {
        panic!(
            "no results.json ({e}): {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    serde_json::from_str(&text).unwrap()
}

#[test]
fn concurrency_ramp_grows_to_its_top_client_count() {
    let dir = tempfile::tempdir().unwrap();
    let o = infermeter(
        &[
            "run",
            "scenarios/ramp.kdl",
            "-p",
            "over=2s",
            "-p",
            "hold=4s",
        ],
        dir.path(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = results(dir.path(), &o);
    let stage = r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "client-ramp")
        .expect("the client-ramp stage");
    assert_eq!(stage["planned"]["arrival"], "ramp-concurrency");
    assert_eq!(stage["planned"]["clients"], 8);
    // 1 client at first, 8 from 2 s on: the second half of the 4 s stage sends far more.
    let (mut first, mut second) = (0, 0);
    for p in stage["timeline"].as_array().unwrap() {
        let (t, sent) = (p["t_s"].as_f64().unwrap(), p["sent"].as_u64().unwrap());
        if t < 2.0 {
            first += sent;
        } else {
            second += sent;
        }
    }
    assert!(
        first > 0 && second > first,
        "first {first}, second {second}"
    );
    // Every one of the 8 clients got going: that many requests were in flight at once.
    assert_eq!(
        stage["client"]["peak_in_flight"], 8,
        "{:#}",
        stage["client"]
    );
    // The rate ramp in the same file ran too.
    let rate = &r["stages"][0];
    assert_eq!(rate["planned"]["arrival"], "ramp");
    assert!(rate["requests"]["ok"].as_u64().unwrap() > 0);
}

/// Tags open and closed must pair up, and the document must be one `<svg>` element.
fn assert_well_formed_svg(svg: &str) {
    let body = svg.trim();
    let body = body
        .strip_prefix("<?xml")
        .map_or(body, |rest| &rest[rest.find("?>").unwrap() + 2..])
        .trim();
    assert!(body.starts_with("<svg"), "{}", &body[..body.len().min(80)]);
    assert!(body.ends_with("</svg>"));
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find('<') {
        let end = rest[i..].find('>').expect("every tag closes") + i;
        let tag = &rest[i + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
        } else if !tag.ends_with('/') && !tag.starts_with('!') && !tag.starts_with('?') {
            stack.push(tag.split_whitespace().next().unwrap());
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
}

#[test]
fn concurrency_search_lands_near_max_running_and_compare_plots_it() {
    let dir = tempfile::tempdir().unwrap();
    let o = infermeter(
        // One-second probes: the answer's SLAs are too thin to decide, which is not the test.
        &[
            "run",
            "scenarios/concurrency-search.kdl",
            "-p",
            "probe=1s",
            "--inconclusive",
            "pass",
        ],
        dir.path(),
    );
    let r = results(dir.path(), &o);
    let s = &r["searches"][0];
    assert_eq!(s["group"], "clients");
    assert_eq!(s["concurrency"], true);
    // max-running 4: a fifth client queues a whole request, far past the 80 ms TTFT SLA.
    let answer = s["answer_clients"].as_u64().expect("an answer");
    assert!((2..=6).contains(&answer), "answer {answer}: {s:#}");
    let reason = s["stop_reason"].as_str().unwrap();
    assert!(reason == "converged" || reason == "max_probes", "{reason}");
    let probes = s["probes"].as_array().unwrap();
    for p in probes {
        let c = p["clients"].as_u64().expect("probes count clients");
        if p["passed"].as_bool().unwrap() {
            assert!(c <= answer, "{p}");
        } else {
            assert!(c > answer, "{p}");
        }
    }
    // Every probe is a closed-loop stage; the search's SLAs are judged on its answer.
    let stages = r["stages"].as_array().unwrap();
    assert_eq!(stages.len(), probes.len());
    assert!(
        stages
            .iter()
            .all(|st| st["planned"]["arrival"] == "concurrency")
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // compare --plot against a slower copy: both series on one SVG, the regression exit kept.
    let mut slower = r.clone();
    for st in slower["stages"].as_array_mut().unwrap() {
        // Edited figures without the histograms behind them: compared on the figures. Every
        // figure of the distribution moves the same way, so it still holds together (a
        // result whose percentiles are out of order is refused before any comparison).
        st.as_object_mut().unwrap().remove("histograms");
        let ttft = &mut st["latency"]["ttft_ms"];
        if ttft["count"].as_u64().unwrap() > 0 {
            for q in ["min", "mean", "p50", "p90", "p95", "p99", "p999", "max"] {
                let v = ttft[q].as_f64().unwrap();
                ttft[q] = (v * 3.0 + 50.0).into();
            }
        }
    }
    let current = dir.path().join("slower.json");
    std::fs::write(&current, serde_json::to_string(&slower).unwrap()).unwrap();
    let svg_path = dir.path().join("both.svg");
    let o = crate::support::command()
        .arg("compare")
        .arg(dir.path().join("results.json"))
        .arg(&current)
        .arg("--plot")
        .arg(&svg_path)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let svg = std::fs::read_to_string(&svg_path).expect("the plot is written");
    assert_well_formed_svg(&svg);
    for series in [
        "data-name=\"TTFT p99\" data-run=\"baseline\"",
        "data-name=\"TTFT p99\" data-run=\"current\"",
        "data-name=\"achieved req/s\" data-run=\"current\"",
    ] {
        assert!(svg.contains(series), "no `{series}` in the plot");
    }
    assert!(svg.contains("clients"));
}
