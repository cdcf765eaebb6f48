//! Agreement with a baseline (docs/quality.md): a run whose data set has a `quality` block
//! keeps each judged answer in `answers.jsonl` (bounded, masked), and `compare` pairs two
//! runs' answers by prompt — identical runs agree wholly and show no regression, a lossy run
//! drifts and its paired accuracy drop is a regression, runs of different plans are said not
//! to pair, and a hostile answer stays bounded and masked.

use std::path::Path;

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::*;

fn qa_set() -> String {
    format!("{}/scenarios/data/qa.jsonl", env!("CARGO_MANIFEST_DIR"))
}

/// 120 of the shipped questions against the simulator answering `accuracy` of them right.
pub(crate) fn qa_scenario(accuracy: &str, seed: u64) -> String {
    format!(
        r#"
scenario "qa" {{ seed {seed}; }}
target "sim" {{
    timeout "30s"
    decode-base "1ms"
    max-running 64
    ignore-eos #false
    answer-accuracy {accuracy}
}}
dataset "qa" {{
    jsonl "{path}" max-tokens=48
    quality {{ score "number"; }}
}}
stage "qa" {{ dataset "qa"; arrival "concurrency" clients=8; requests 120; }}
"#,
        path = qa_set()
    )
}

/// Runs `kdl` into `dir/name`; the output directory.
fn run_into(dir: &Path, name: &str, kdl: &str) -> std::path::PathBuf {
    let path = scenario(dir, &format!("{name}.kdl"), kdl);
    let out = dir.join(name);
    let o = run(&path, &out, &[]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    out
}

fn compare(a: &Path, b: &Path, extra: &[&str]) -> std::process::Output {
    let (a, b) = (a.join("results.json"), b.join("results.json"));
    // Latencies on a busy test machine are noise here: only the answers may decide.
    let mut args = vec![
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--tolerance",
        "100%",
        "--tolerance",
        "accuracy=5%",
    ];
    args.extend_from_slice(extra);
    infermeter(&args)
}

fn rows(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("answers.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The exit code of a comparison whose answers show no regression: 0, unless a latency
/// moved beyond even its wide tolerance on a busy machine (then 1, and only latencies named).
fn no_regression_but_latency(o: &std::process::Output) {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let named: Vec<&str> = v["regressions"]
        .as_array()
        .unwrap()
        .iter()
        .chain(v["undecided"].as_array().unwrap())
        .filter_map(|f| f.as_str())
        .collect();
    assert!(!named.iter().any(|f| f.contains("accuracy")), "{named:?}");
    let expected = if v["regressions"].as_array().unwrap().is_empty() {
        0
    } else {
        1
    };
    assert_eq!(o.status.code(), Some(expected), "{}", describe(o));
}

fn agreement_json(o: &std::process::Output) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["agreement"].clone()
}

#[test]
fn identical_runs_agree_wholly_and_a_lossy_one_regresses() {
    let dir = tempfile::tempdir().unwrap();
    let base = run_into(dir.path(), "base", &qa_scenario("1.0", 3));
    let again = run_into(dir.path(), "again", &qa_scenario("1.0", 3));
    let kept = rows(&base);
    assert_eq!(kept.len(), 120);
    assert!(
        kept.iter()
            .all(|r| r["stage"] == "qa" && r["correct"] == true),
        "{}",
        kept[0]
    );

    // 120 of 120 identical: the Wilson interval's low end is 96.9 %, so 95 % is shown met.
    let o = compare(
        &base,
        &again,
        &["--format", "json", "--min-agreement", "95%"],
    );
    let a = agreement_json(&o);
    no_regression_but_latency(&o);
    let s = &a["paired"]["stages"][0];
    assert_eq!(
        (s["paired"].as_u64(), s["identical"].as_u64()),
        (Some(120), Some(120)),
        "{a}"
    );
    assert_eq!(s["similarity"], 1.0);
    assert_eq!(s["accuracy"]["verdict"], "same", "{a}");
    let o = compare(&base, &again, &[]);
    let (out, _) = text(&o);
    assert!(out.contains("identical 100.0 %"), "{out}");
    // 99 % cannot be shown on 120 answers: undecided, which --inconclusive decides.
    let o = compare(
        &base,
        &again,
        &["--format", "json", "--min-agreement", "0.99"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let undecided = v["undecided"].to_string();
    assert!(
        undecided.contains("qa: accuracy (identical answers 100.0 % [96.9, 100.0]"),
        "{undecided}"
    );

    // The same prompts answered worse: a lossy change. The simulator's accuracy is the
    // target's, so the plans differ; the prompts (stage, index, record) still pair.
    let lossy = run_into(dir.path(), "lossy", &qa_scenario("0.7", 3));
    let o = compare(
        &base,
        &lossy,
        &["--format", "json", "--allow-different-plans"],
    );
    let a = agreement_json(&o);
    let s = &a["paired"]["stages"][0];
    assert!(s["identical"].as_u64().unwrap() < 120, "{a}");
    assert_eq!(s["accuracy"]["verdict"], "worse", "{a}");
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
}

#[test]
fn runs_of_different_plans_are_said_not_to_pair() {
    let dir = tempfile::tempdir().unwrap();
    let base = run_into(dir.path(), "base", &qa_scenario("1.0", 3));
    let other = run_into(dir.path(), "other", &qa_scenario("1.0", 4));
    // Refused as before without the flag …
    let o = compare(&base, &other, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    // … and with it, compared, the answers said not to pair.
    let o = compare(&base, &other, &["--allow-different-plans"]);
    let (out, _) = text(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    assert!(
        out.contains("answers cannot be paired: the runs used different plans"),
        "{out}"
    );
    // A gate on agreement cannot be met unmeasured.
    let o = compare(
        &base,
        &other,
        &["--allow-different-plans", "--min-agreement", "0.99"],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(err.contains("--min-agreement needs"), "{err}");
}

/// One chat chunk carrying `content` (already JSON-escaped).
fn content_chunk(content: &str) -> String {
    format!(
        "data: {{\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
         \"delta\":{{\"content\":\"{content}\"}}}}]}}\n\n"
    )
}

/// A server whose every answer is a secret-shaped token, then 10 MiB of markup.
fn hostile_server() -> RawServer {
    let piece = "<script>alert(1)</script><b>@team</b> |x| ".repeat(1560);
    RawServer::engine(move |p: &mut Post<'_>| {
        p.read_body();
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                    transfer-encoding: chunked\r\n\r\n";
        if !p.write(head.as_bytes()) {
            return After::Close;
        }
        let mut send = |text: &str| p.write(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes());
        if !send(&content_chunk("key sk-proj-Zq9xLmN4pQrStUvWx12 then\\n")) {
            return After::Close;
        }
        for _ in 0..160 {
            if !send(&content_chunk(&piece)) {
                return After::Close;
            }
        }
        let end = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\
                   \"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":8,\
                   \"completion_tokens\":1000,\"total_tokens\":1008}}\n\ndata: [DONE]\n\n";
        send(end);
        p.write(b"0\r\n\r\n");
        After::KeepAlive
    })
}

#[test]
fn a_hostile_answer_is_kept_bounded_and_masked() {
    let server = hostile_server();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("q.jsonl"),
        "{\"prompt\": \"What is 1 + 1?\", \"reference\": \"2\"}\n",
    )
    .unwrap();
    let kdl = format!(
        r#"
scenario "hostile" {{ seed 1; }}
target "{url}" {{ model "m"; timeout "60s"; max-event-size "1MiB"; }}
dataset "d" {{
    jsonl "q.jsonl" max-tokens=2000
    quality {{ score "contains"; }}
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 2; }}
"#,
        url = server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--untrusted", "judge"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let again = dir.path().join("again");
    let o = run(&path, &again, &["--untrusted", "judge"]);
    drop(server);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let file = std::fs::read_to_string(out.join("answers.jsonl")).unwrap();
    assert!(file.len() < 2 * 8 * 1024, "{} bytes", file.len());
    assert!(
        !file.contains("Zq9xLmN4pQrStUvWx12"),
        "the key is kept: {}",
        &file[..200]
    );
    for r in rows(&out) {
        assert!(r["text"].as_str().unwrap().len() <= 4096, "{r}");
        assert_eq!(r["clipped"], true);
        assert!(r["bytes"].as_u64().unwrap() > 10_000_000, "{r}");
        assert!(r["correct"].is_boolean(), "{r}");
    }
    for format in ["text", "markdown", "json"] {
        let o = compare(&out, &again, &["--format", format]);
        let (shown, err) = text(&o);
        assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
        assert!(
            !shown.contains("<script>") && !err.contains("<script>"),
            "{format}: {shown}"
        );
        assert!(!shown.contains("Zq9xLmN4"), "{format}: {shown}");
        assert!(
            shown.contains("100.0") || shown.contains("\"identical\": 2"),
            "{format}: {shown}"
        );
    }
}
