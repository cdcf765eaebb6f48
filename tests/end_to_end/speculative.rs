//! Speculative decoding through the real binary: the simulator's draft model (set in a
//! scenario's `target "sim"`, or with `infermeter sim --draft-tokens …`) is measured back
//! from its `/metrics` counters and its responses' `timings` as the probabilities it was
//! given; a higher acceptance takes fewer verification steps and lowers TPOT; and a `/metrics`
//! page whose speculative counters are negative, NaN, going back or absurd gives no panic and
//! no nonsense figure.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::support::*;

/// A stage of 160 requests of 64 tokens on `target`, with `telemetry` and `sla`.
fn kdl(target: &str, telemetry: &str, sla: &str) -> String {
    format!(
        r#"
scenario "spec" {{ seed 5; }}
{target}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 64; }} }}
telemetry {{
    interval "100ms"
    {telemetry}
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=16; requests 160; }}
sla {{ {sla} }}
"#
    )
}

fn run_kdl(text: &str) -> (std::process::Output, Value) {
    let (o, r, _dir) = run_kept(text);
    (o, r)
}

/// As [`run_kdl`], keeping the directory (its `out/results.json`).
fn run_kept(text: &str) -> (std::process::Output, Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    let r = try_results(&out).unwrap_or_else(|| panic!("results written\n{}", describe(&o)));
    (o, r, dir)
}

/// The stage's speculative-decoding summary from the server's counters.
fn server_spec(r: &Value) -> &Value {
    let stage = r["telemetry"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "s")
        .expect("the stage in telemetry");
    &stage["servers"][0]["spec"]
}

/// Position `i` of 3 is accepted with 0.8 × 0.9^i given the ones before, so a draft's
/// position `i` is accepted with the product of those: 0.8, 0.576, 0.373. Over about 3500
/// drafts each share's standard error is under 0.01.
#[test]
fn acceptance_figures_are_the_draft_models_probabilities() {
    let target = r#"target "sim" {
    decode-base "2ms"
    max-running 16
    timings #true
    draft-tokens 3
    draft-acceptance 0.8
    draft-acceptance-decay 0.9
}"#;
    let (o, r) = run_kdl(&kdl(
        target,
        r#"prometheus "sim" kind="vllm" required=#true"#,
        r#"assert "spec.acceptance_rate >= 50%"
    assert "spec.acceptance_length > 9""#,
    ));
    // The rate holds, the length (at most 1 + 3) cannot: a failed gate, decided.
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let spec = server_spec(&r);
    assert_eq!(spec["source"], "counters", "{spec}");
    let want = [0.8, 0.8 * 0.72, 0.8 * 0.72 * 0.648];
    let per_pos: Vec<f64> = spec["acceptance_rate_per_position"]
        .as_array()
        .expect("per-position rates")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(per_pos.len(), 3, "{spec}");
    for (i, (got, want)) in per_pos.iter().zip(want).enumerate() {
        assert!((got - want).abs() < 0.04, "position {i}: {got} vs {want}");
    }
    let rate = spec["acceptance_rate"].as_f64().unwrap();
    let expected_accepted: f64 = want.iter().sum();
    assert!((rate - expected_accepted / 3.0).abs() < 0.03, "{spec}");
    let length = spec["acceptance_length"].as_f64().unwrap();
    assert!((length - (1.0 + expected_accepted)).abs() < 0.1, "{spec}");
    // The mean length is the rate times the drafts per step, plus the bonus token.
    assert!((length - (1.0 + 3.0 * rate)).abs() < 1e-9, "{spec}");
    // Every draft token the server counted, the responses reported: no disagreement.
    let stage = stage(&r, "s");
    assert_eq!(stage["spec"]["requests"], 160, "{}", stage["spec"]);
    let count = |v: &Value| v.as_f64().expect("a count");
    assert_eq!(
        count(&stage["spec"]["draft_tokens"]),
        count(&spec["draft_tokens"])
    );
    assert_eq!(
        count(&stage["spec"]["accepted_tokens"]),
        count(&spec["accepted_tokens"])
    );
    let notes = stage["notes"].as_array().map_or(0, |n| {
        n.iter()
            .filter(|n| n.as_str().unwrap().contains("speculative"))
            .count()
    });
    assert_eq!(notes, 0, "{}", stage["notes"]);
    let sla = r["sla"].as_array().unwrap();
    assert_eq!(sla[0]["passed"], true, "{sla:?}");
    assert_eq!(sla[1]["passed"], false, "{sla:?}");
}

/// The same seed and load on two simulators that differ only in their draft model's
/// acceptance: the better one takes fewer verification steps for the same tokens (a count,
/// the same on every run) and its TPOT is lower (two measured values, compared generously).
#[test]
fn a_higher_acceptance_takes_fewer_steps_and_lowers_tpot() {
    let measure = |acceptance: &str| {
        let sim = SimProcess::start(&[
            "--decode-base",
            "10ms",
            "--max-running",
            "16",
            "--seed",
            "5",
            "--draft-tokens",
            "4",
            "--draft-acceptance",
            acceptance,
        ]);
        let target = format!("target \"{}\" {{ timeout \"30s\"; }}", sim.base_url);
        let metrics = format!(
            "prometheus \"{}/metrics\" kind=\"vllm\" required=#true",
            sim.base_url.trim_end_matches("/v1")
        );
        let (o, r, dir) = run_kept(&kdl(&target, &metrics, ""));
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let spec = server_spec(&r).clone();
        let tpot = stage(&r, "s")["latency"]["tpot_ms"]["mean"]
            .as_f64()
            .unwrap();
        (spec["drafts"].as_f64().expect("drafts counted"), tpot, dir)
    };
    let (steps_low, tpot_low, low) = measure("0.3");
    let (steps_high, tpot_high, high) = measure("0.9");
    // 160 answers of 63 decoded tokens: 1.4 tokens a step at 0.3, about 3.9 at 0.9.
    assert!(steps_high < steps_low * 0.6, "{steps_high} vs {steps_low}");
    assert!(
        tpot_high < tpot_low * 0.8,
        "{tpot_high} ms vs {tpot_low} ms"
    );
    // `compare` shows the fall from the better draft model to the worse one as a regression.
    let results = |d: &tempfile::TempDir| d.path().join("out/results.json");
    let o = command()
        .arg("compare")
        // The two simulators listen on different ports: the plans differ by the URL only.
        .arg("--allow-different-plans")
        .arg(results(&high))
        .arg(results(&low))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let (stdout, _) = text(&o);
    for m in ["spec.acceptance_rate", "spec.acceptance_length"] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(m))
            .unwrap_or_else(|| panic!("{m} in\n{stdout}"));
        assert!(line.contains("WORSE"), "{line}");
    }
}

/// A `/metrics` server that answers each scrape with the next of `pages` (the last one
/// again once they run out).
fn pages_server(pages: Vec<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let pages = Arc::new(pages);
    let next = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let (pages, next) = (pages.clone(), next.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf);
                let i = next.fetch_add(1, Ordering::SeqCst).min(pages.len() - 1);
                let body = &pages[i];
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n",
                    body.len()
                );
                let _ = conn.write_all(head.as_bytes());
                let _ = conn.write_all(body.as_bytes());
            });
        }
    });
    url
}

fn spec_page(drafts: &str, proposed: &str, accepted: &str, pos0: &str) -> String {
    format!(
        "vllm:num_requests_running 1\n\
         vllm:spec_decode_num_drafts_total{{engine=\"0\"}} {drafts}\n\
         vllm:spec_decode_num_draft_tokens_total{{engine=\"0\"}} {proposed}\n\
         vllm:spec_decode_num_accepted_tokens_total{{engine=\"0\"}} {accepted}\n\
         vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine=\"0\",position=\"0\"}} {pos0}\n\
         vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine=\"0\",position=\"99999999999999999999\"}} 5\n"
    )
}

/// Counters that go back, turn negative or NaN, and claim more accepted than proposed: the
/// run finishes, no output holds a NaN or infinity, a figure the counters contradict is left
/// out with a note, and an SLA on it is not passed on nonsense.
#[test]
fn hostile_spec_counters_give_no_nonsense() {
    // Every fourth page the counters go back (a restart), every other one is garbage, and
    // the rest claim ever more accepted tokens than proposed, and a position accepted more
    // often than drafts were verified.
    let pages = (0..4000u64)
        .map(|i| match i % 4 {
            1 => spec_page("-5", "NaN", "+Inf", "-1"),
            3 => spec_page("1", "4", "5", "7"),
            _ => {
                let i = i as f64;
                spec_page(
                    &format!("{}", 20.0 * i),
                    &format!("{}", 80.0 * i),
                    &format!("{}", 1e18 * i),
                    &format!("{}", 1e6 * i),
                )
            }
        })
        .collect();
    let metrics = pages_server(pages);
    let (o, r, dir) = run_kept(&kdl(
        r#"target "sim" { decode-base "4ms"; }"#,
        &format!("prometheus \"{metrics}/metrics\" kind=\"vllm\" required=#false"),
        r#"assert "spec.acceptance_rate >= 50%""#,
    ));
    let code = o.status.code();
    assert!(matches!(code, Some(1) | Some(4)), "{}", describe(&o));
    let spec = server_spec(&r);
    assert!(spec.is_object(), "the counters were read: {r}");
    assert!(spec["acceptance_rate"].is_null(), "{spec}");
    assert!(spec["acceptance_length"].is_null(), "{spec}");
    assert!(spec["acceptance_rate_per_position"].is_null(), "{spec}");
    assert!(!spec["notes"].as_array().unwrap().is_empty(), "{spec}");
    assert!(spec["counter_resets"].as_u64().unwrap() >= 1, "{spec}");
    let sla = &r["sla"][0];
    assert_ne!(sla["passed"], true, "{sla}");
    // No figure shown from them is NaN or infinite (JSON cannot hold one; the report could).
    let report = std::fs::read_to_string(dir.path().join("out/report.md")).expect("report.md");
    for line in report.lines().filter(|l| l.contains("draft")) {
        for bad in ["NaN", "inf"] {
            assert!(!line.contains(bad), "{line}");
        }
    }
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.contains("draft counters"))
        .collect();
    assert!(!rows.is_empty(), "the notes are shown:\n{report}");
}

/// Without a `/metrics` source the responses' own counters (llama.cpp-style `timings`) still
/// give the acceptance rate an SLA judges; the mean length, which needs the server's count of
/// verification steps, is not measured and fails with the reason.
#[test]
fn without_metrics_the_responses_give_the_rate() {
    let target = r#"target "sim" {
    decode-base "2ms"
    timings #true
    draft-tokens 2
    draft-acceptance 0.9
}"#;
    let text = kdl(target, "", "")
        .replace("telemetry {\n    interval \"100ms\"\n    \n}\n", "")
        .replace(
            "sla {  }",
            "sla {\n    assert \"spec.acceptance_rate >= 60%\"\n    assert \"spec.acceptance_length > 1\"\n}",
        );
    assert!(!text.contains("telemetry"), "{text}");
    let (o, r) = run_kdl(&text);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let sla = r["sla"].as_array().unwrap();
    assert_eq!(sla[0]["passed"], true, "{sla:?}");
    // 0.9, then 0.9 × 0.9: 0.855 of the draft tokens.
    let rate = sla[0]["observed"].as_f64().unwrap();
    assert!((rate - 0.855).abs() < 0.05, "{rate}");
    assert_eq!(sla[1]["passed"], false, "{sla:?}");
}

/// SGLang publishes gauges, not counters (`sglang:spec_accept_length`, the mean tokens per
/// verification step, and `sglang:spec_accept_rate`): through the binary, against a server
/// whose `/metrics` is SGLang's, the stage's figures are the gauges' mean over the stage (an
/// idle engine's 0 left out), and an SLA on each decides on them.
#[test]
fn sglang_gauges_give_the_stage_its_figures() {
    let pages = (0..4000u64)
        .map(|i| match i % 3 {
            // An idle scrape: SGLang reports 0 when no step ran since the last one.
            0 => "sglang:num_running_reqs 0\nsglang:spec_accept_length 0\nsglang:spec_accept_rate 0\n".to_string(),
            _ => "sglang:num_running_reqs 4\nsglang:spec_accept_length{model_name=\"m\"} 2.5\nsglang:spec_accept_rate{model_name=\"m\"} 0.6\n".to_string(),
        })
        .collect();
    let metrics = pages_server(pages);
    let (o, r) = run_kdl(&kdl(
        r#"target "sim" { decode-base "4ms"; }"#,
        &format!("prometheus \"{metrics}/metrics\" kind=\"sglang\" required=#true"),
        r#"assert "spec.acceptance_length > 2"
    assert "spec.acceptance_rate >= 70%""#,
    ));
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let spec = server_spec(&r);
    let length = spec["acceptance_length"].as_f64().expect("a length");
    let rate = spec["acceptance_rate"].as_f64().expect("a rate");
    assert!((length - 2.5).abs() < 1e-9, "{spec}");
    assert!((rate - 0.6).abs() < 1e-9, "{spec}");
    let sla = r["sla"].as_array().unwrap();
    assert_eq!(sla[0]["passed"], true, "{sla:?}");
    assert_eq!(sla[1]["passed"], false, "{sla:?}");
}
