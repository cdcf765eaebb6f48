//! The pooling APIs (embeddings, rerank, score) through the real binary: against the
//! simulator, results with E2E, inputs and prompt tokens and no TTFT anywhere (results, the
//! markdown report, the CSV, `compare`); an SLA on a metric the API lacks refused where it is
//! written; and against a server whose whole answers are broken, huge, mistyped or dripped,
//! each request failing with its kind, none hanging.

use std::time::Duration;

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::*;

/// A scenario of `requests` requests of `api` with `batch` inputs of `tokens` tokens each, on
/// `target` (`"sim"` or a URL), with `extra` in the target.
fn pooled_scenario(target: &str, api: &str, batch: u32, requests: u32, extra: &str) -> String {
    format!(
        r#"
target "{target}" {{ api "{api}"; batch {batch}; timeout "20s"; {extra} }}
dataset "d" {{ synthetic {{ input-tokens 24; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=2; requests {requests}; }}
"#
    )
}

/// Runs `text` with `--untrusted judge` (a loaded machine may flag the client: trust is not
/// under test) and returns its results directory and the run's output.
fn run_text(dir: &std::path::Path, text: &str) -> (std::path::PathBuf, std::process::Output) {
    let path = scenario(dir, "p.kdl", text);
    let out = dir.join("out");
    let o = run(&path, &out, &["--untrusted", "judge"]);
    (out, o)
}

#[test]
fn embeddings_on_the_simulator_have_e2e_and_inputs_and_no_ttft() {
    let dir = tempfile::tempdir().unwrap();
    let (out, o) = run_text(dir.path(), &pooled_scenario("sim", "embeddings", 4, 12, ""));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["target"]["api"], "embeddings");
    let s = stage(&r, "s");
    assert_eq!(s["requests"]["ok"], 12, "{}", s["requests"]);
    // Every input counted, with exactly the tokens the plan drew (the simulator counts them).
    assert_eq!(s["tokens"]["inputs"], 12 * 4);
    assert_eq!(s["tokens"]["input"], 12 * 4 * 24);
    assert_eq!(s["tokens"]["mismatched"], 0);
    assert_eq!(s["tokens"]["from_usage"], 12);
    assert!(s["throughput"]["inputs_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(s["latency"]["e2e_ms"]["count"], 12);
    for m in ["ttft_ms", "itl_ms", "tpot_ms", "ntpot_ms", "ttfa_ms"] {
        assert!(s["latency"].get(m).is_none(), "{m}: {}", s["latency"]);
        assert!(s["histograms"].get(m).is_none(), "{m}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!md.contains("| TTFT |"), "{md}");
    assert!(!md.contains("output tokens"), "{md}");
    assert!(md.contains("| E2E |") && md.contains("inputs/s"), "{md}");
    // The pull-request comment's latency table has no TTFT or ITL column either.
    let pr = std::fs::read_to_string(out.join("report.pr.md")).unwrap();
    assert!(
        pr.contains("E2E p99") && !pr.contains("TTFT") && !pr.contains("ITL"),
        "{pr}"
    );
    let csv = std::fs::read_to_string(out.join("stages.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        !header.contains("ttft") && header.contains("inputs_per_s"),
        "{header}"
    );
    let (stdout, _) = text(&o);
    assert!(!stdout.contains("TTFT"), "{stdout}");
}

#[test]
fn a_pooling_stage_with_a_steady_window_prints_no_ttft() {
    // The shipped example runs long enough for a steady window, whose line once printed
    // "TTFT p50/p99 0.0 / 0.0 ms" for answers that have no TTFT.
    let dir = tempfile::tempdir().unwrap();
    let o = command()
        .args(["run", "scenarios/embeddings.kdl", "--no-plots", "--out"])
        .arg(dir.path().join("out"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let (stdout, _) = text(&o);
    assert!(stdout.contains("steady "), "{stdout}");
    assert!(!stdout.contains("TTFT"), "{stdout}");
}

#[test]
fn an_api_given_by_a_param_is_read_as_the_literal_is() {
    // A data set is read before the target, knowing its API: `api (param)"api"` once read as
    // a generation API, so a pooling data set without `output-tokens` was refused.
    let dir = tempfile::tempdir().unwrap();
    let text = pooled_scenario("sim", "embeddings", 2, 4, "")
        .replace("api \"embeddings\"", "api (param)\"api\"");
    let text = format!("param \"api\" \"embeddings\"\n{text}");
    let path = scenario(dir.path(), "param.kdl", &text);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    // And `stream (param)"s"` with `#false` is a whole answer: a TTFT SLA is refused.
    let text = "param \"s\" #false\ntarget \"sim\" { stream (param)\"s\"; }\n\
        dataset \"d\" { synthetic { input-tokens 8; output-tokens 2; } }\n\
        stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }\n\
        goodput ttft=\"200ms\"\n";
    let path = scenario(dir.path(), "whole.kdl", text);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    let (_, err) = crate::support::text(&o);
    assert!(err.contains("`goodput` sets an SLO"), "{err}");
}

#[test]
fn where_a_pooling_stage_spent_its_time_splits_e2e_not_ttft() {
    // With the server's histograms, a pooling stage once read "TTFT mean 0 ms: … -17.4
    // outside": it has no TTFT. Its E2E is split instead.
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}telemetry {{ prometheus \"sim\"; interval \"250ms\"; }}\n",
        pooled_scenario(
            "sim",
            "embeddings",
            4,
            24,
            "metrics-histograms #true; max-running 1; prefill-per-token \"20us\";"
        )
    );
    let (out, o) = run_text(dir.path(), &text);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let a = &stage(&r, "s")["attribution"];
    assert_eq!(a["source"], "prometheus", "{a}");
    assert!(
        a.get("server_ttft_ms").is_none() && a.get("outside_ms").is_none(),
        "{a}"
    );
    assert!(a.get("decode_ms").is_none(), "nothing decoded: {a}");
    assert!(a["outside_e2e_ms"]["mean"].is_number(), "{a}");
    let (stdout, _) = crate::support::text(&o);
    let line = stdout
        .lines()
        .find(|l| l.contains("queued in the server"))
        .unwrap();
    assert!(line.trim_start().starts_with("E2E mean "), "{line}");
    assert!(!line.contains(" -"), "no negative remainder: {line}");
    assert!(!stdout.contains("TTFT"), "{stdout}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| E2E, client |") && !md.contains("TTFT"),
        "{md}"
    );
}

#[test]
fn rerank_and_score_count_each_pair() {
    for api in ["rerank", "score"] {
        let dir = tempfile::tempdir().unwrap();
        let (out, o) = run_text(dir.path(), &pooled_scenario("sim", api, 3, 6, ""));
        assert_eq!(o.status.code(), Some(0), "{api}: {}", describe(&o));
        let s = stage(&results(&out), "s").clone();
        assert_eq!(s["requests"]["ok"], 6, "{api}: {}", s["requests"]);
        assert_eq!(s["tokens"]["inputs"], 6 * 3, "{api}");
        // A query and 3 documents of 24 tokens: 3 pairs of 48.
        assert_eq!(s["tokens"]["input"], 6 * 3 * 48, "{api}");
        assert_eq!(s["tokens"]["mismatched"], 0, "{api}");
        assert!(s["latency"].get("ttft_ms").is_none(), "{api}");
    }
}

#[test]
fn an_sla_on_a_metric_the_api_lacks_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{}\nsla {{ assert \"ttft.p95 < 100ms\"; }}\n",
        pooled_scenario("sim", "embeddings", 2, 4, "")
    );
    let path = scenario(dir.path(), "bad.kdl", &text);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    let (_, err) = crate::support::text(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("api \"embeddings\" has no `ttft`"), "{err}");
    assert!(err.contains("e2e") && err.contains("inputs_per_s"), "{err}");
    assert!(
        err.contains("bad.kdl:"),
        "points at the file and line: {err}"
    );
    // A goodput SLO no whole answer can meet.
    let text = format!(
        "{}\ngoodput ttft=\"200ms\"\n",
        pooled_scenario("sim", "rerank", 2, 4, "")
    );
    let path = scenario(dir.path(), "goodput.kdl", &text);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    let (_, err) = crate::support::text(&o);
    assert!(
        err.contains("`goodput` sets an SLO no answer that comes whole can meet"),
        "{err}"
    );
    // And `batch` on a generation API.
    let path = scenario(
        dir.path(),
        "chat.kdl",
        "target \"sim\" { batch 4; }\ndataset \"d\" { synthetic { input-tokens 8; output-tokens 2; } }\nstage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }\n",
    );
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    let (_, err) = crate::support::text(&o);
    assert!(
        err.contains("`batch` does not apply to api \"chat\""),
        "{err}"
    );
}

#[test]
fn compare_of_two_embeddings_runs_compares_e2e_and_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let text = pooled_scenario("sim", "embeddings", 2, 10, "");
    let mut outs = Vec::new();
    for name in ["a", "b"] {
        // One scenario file name: the plan (and its hash) is the same.
        let sub = dir.path().join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let path = scenario(&sub, "embed.kdl", &text);
        let out = sub.join("out");
        let o = run(&path, &out, &["--untrusted", "judge"]);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        outs.push(out.join("results.json"));
    }
    let o = infermeter(&[
        "compare",
        outs[0].to_str().unwrap(),
        outs[1].to_str().unwrap(),
        "--tolerance",
        "100%",
    ]);
    let (stdout, stderr) = crate::support::text(&o);
    // Two runs on a loaded machine may differ: any verdict, but a comparison.
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{stdout}{stderr}"
    );
    assert!(
        stdout.contains("e2e") && stdout.contains("inputs_per_s"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("ttft") && !stdout.contains("output_throughput"),
        "{stdout}"
    );
}

/// `body` as a whole HTTP/1.1 answer with a correct length.
fn answer(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[test]
fn broken_whole_answers_fail_with_their_kind_and_none_hangs() {
    let huge = format!(
        "{{\"data\":[{{\"embedding\":[{}]}}],\"usage\":{{\"prompt_tokens\":24}}}}",
        "0.125,".repeat(400_000) + "0"
    );
    let good = r#"{"object":"list","data":[{"index":0,"object":"embedding","embedding":[0.1]}],"usage":{"prompt_tokens":24,"total_tokens":24}}"#;
    let bad: Vec<(Vec<u8>, &str)> = vec![
        (
            answer("200 OK", "<html><body>502 Bad Gateway</body></html>"),
            "malformed",
        ),
        (answer("200 OK", r#"{"data":"x","usage":{}}"#), "malformed"),
        (
            answer("200 OK", r#"{"data":[],"usage":{"prompt_tokens":"24"}}"#),
            "malformed",
        ),
        (answer("200 OK", r#"{"data":[1,2,3]}"#), "malformed"),
        (answer("200 OK", r#"{"data":[]}"#), "empty"),
        (
            answer("200 OK", r#"{"error":{"message":"boom"}}"#),
            "stream_broken",
        ),
        (answer("200 OK", &huge), "malformed"),
        (
            answer("502 Bad Gateway", "<html>bad gateway</html>"),
            "http_502",
        ),
        (
            // Promises more than it sends, then closes: cut short.
            b"HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n{\"data\":[{\"embedding\":[0.1"
                .to_vec(),
            "stream_broken",
        ),
        (answer("200 OK", good), "ok"),
    ];
    let n = bad.len();
    let answers: Vec<Vec<u8>> = bad.iter().map(|(b, _)| b.clone()).collect();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        p.write(&answers[(p.n - 1) % answers.len()]);
        After::Close
    });
    let dir = tempfile::tempdir().unwrap();
    let text = pooled_scenario(&server.base_url, "embeddings", 1, n as u32, "model \"m\";")
        .replace("clients=2", "clients=1");
    let (out, o) = run_text(dir.path(), &text);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let req = stage(&results(&out), "s")["requests"].clone();
    let mut want = std::collections::BTreeMap::<&str, u64>::new();
    for (_, kind) in bad.iter().filter(|(_, k)| *k != "ok") {
        *want.entry(kind).or_default() += 1;
    }
    assert_eq!(req["errors"], serde_json::json!(want), "{req}");
    assert_eq!(req["ok"], 1, "{req}");
}

/// Runs `requests` requests of `api` with `batch` inputs each, one at a time, against a
/// server that answers the n-th with `bodies[n - 1]` (cycling), and returns the stage.
fn answered_with(api: &str, batch: u32, bodies: &[&str]) -> serde_json::Value {
    let answers: Vec<Vec<u8>> = bodies.iter().map(|b| answer("200 OK", b)).collect();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        p.write(&answers[(p.n - 1) % answers.len()]);
        After::Close
    });
    let dir = tempfile::tempdir().unwrap();
    let requests = bodies.len() as u32;
    let text = pooled_scenario(&server.base_url, api, batch, requests, "model \"m\";")
        .replace("clients=2", "clients=1");
    let (out, o) = run_text(dir.path(), &text);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    stage(&results(&out), "s").clone()
}

#[test]
fn a_pooling_answer_that_misses_or_repeats_an_input_is_incomplete_and_not_credited() {
    let e = |i: &str| format!(r#"{{"index":{i},"object":"embedding","embedding":[0.5,0.25]}}"#);
    let data = |items: &[&str]| {
        let list: Vec<String> = items.iter().map(|i| e(i)).collect();
        format!(
            r#"{{"data":[{}],"usage":{{"prompt_tokens":96}}}}"#,
            list.join(",")
        )
    };
    let bodies = [
        // One vector for a batch of four.
        data(&["0"]),
        // Four vectors, one input twice and one never.
        data(&["0", "1", "1", "3"]),
        // Five vectors for four inputs.
        data(&["0", "1", "2", "3", "0"]),
        // Every input once, in any order: the only complete answer.
        data(&["3", "1", "0", "2"]),
    ];
    let bodies: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let s = answered_with("embeddings", 4, &bodies);
    let req = &s["requests"];
    assert_eq!(
        req["errors"],
        serde_json::json!({ "incomplete": 3 }),
        "{req}"
    );
    assert_eq!(req["ok"], 1, "{req}");
    // Only the complete answer's inputs are credited.
    assert_eq!(s["tokens"]["inputs"], 4, "{}", s["tokens"]);

    let r = |indices: &[&str]| {
        let list: Vec<String> = indices
            .iter()
            .map(|i| format!(r#"{{"index":{i},"relevance_score":0.5}}"#))
            .collect();
        format!(
            r#"{{"results":[{}],"usage":{{"total_tokens":96}}}}"#,
            list.join(",")
        )
    };
    let bodies = [
        r(&["99", "0", "1", "2"]),
        r(&["-1", "0", "1", "2"]),
        r(&["2", "2", "0", "1"]),
        r(&["0.5", "1", "2", "3"]),
        r(&["1", "3", "0", "2"]),
    ];
    let bodies: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let s = answered_with("rerank", 4, &bodies);
    let req = &s["requests"];
    assert_eq!(
        req["errors"],
        serde_json::json!({ "incomplete": 4 }),
        "{req}"
    );
    assert_eq!(req["ok"], 1, "{req}");
    assert_eq!(s["tokens"]["inputs"], 4, "{}", s["tokens"]);
}

#[test]
fn an_answer_that_drips_times_out_instead_of_hanging() {
    let server = RawServer::start(true, |p: &mut Post<'_>| {
        p.read_body();
        p.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n{\"data\":[");
        for _ in 0..60 {
            std::thread::sleep(Duration::from_millis(100));
            if !p.write(b" ") {
                break;
            }
        }
        After::Close
    });
    let dir = tempfile::tempdir().unwrap();
    let text = pooled_scenario(&server.base_url, "embeddings", 1, 1, "model \"m\";")
        .replace("timeout \"20s\"", "timeout \"2s\"");
    let (out, o) = run_text(dir.path(), &text);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let req = stage(&results(&out), "s")["requests"].clone();
    assert_eq!(req["errors"], serde_json::json!({ "timeout": 1 }), "{req}");
}

#[test]
fn a_pooling_sweep_has_no_ttft_column_or_series() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
target "sim" { api "embeddings"; batch 2; timeout "20s"; }
dataset "d" { synthetic { input-tokens 16; } }
stage "p" {
    dataset "d"
    arrival "poisson" rate=20
    requests 10
    sweep { rates 20 40; }
}
"#;
    let (out, o) = run_text(dir.path(), text);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let table = md
        .lines()
        .find(|l| l.starts_with("| load ("))
        .unwrap_or_else(|| panic!("no profile table: {md}"));
    assert!(table.contains("E2E p99 ms"), "{table}");
    assert!(!table.contains("TTFT") && !table.contains("ITL"), "{table}");
    assert!(!table.contains("output tok/s"), "{table}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let head = html
        .lines()
        .find(|l| l.contains("<th>load ("))
        .expect("the HTML profile table");
    assert!(!head.contains("TTFT") && head.contains("E2E p99"), "{head}");
    let svg = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("profile-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("the profile plot");
    assert!(
        !svg.contains("TTFT") && svg.contains("E2E p99"),
        "a TTFT series"
    );
}
