//! `api "responses"` with `stream #false` through the real binary: whole `response` objects
//! from the simulator (reasoning and answer items, usage with reasoning tokens, answer-starved
//! requests), the metrics such a target has (no TTFT row anywhere), and a server whose whole
//! answers are broken in each way the rules allow.

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::*;

#[test]
fn whole_responses_from_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "w.kdl",
        r#"
target "sim" {
    api "responses"
    stream #false
    decode-base "1ms"
    reasoning-tokens 16
    output-len-dist "fixed"
    output-len-mean 8
}
dataset "room" { synthetic { input-tokens 32; output-tokens 64; } }
dataset "starved" { synthetic { input-tokens 32; output-tokens 8; } }
stage "room" { dataset "room"; arrival "concurrency" clients=2; requests 10; }
stage "starved" { dataset "starved"; arrival "concurrency" clients=2; requests 4; }
goodput e2e="10s"
sla { assert "output_throughput > 1 tok/s"; }
"#,
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (printed, _) = text(&o);
    assert!(
        !printed.contains("0.0 / 0.0"),
        "no TTFT or ITL figures: {printed}"
    );
    let r = results(&out);
    assert_eq!(r["target"]["stream"], false, "{}", r["target"]);
    let room = stage(&r, "room");
    assert_eq!(room["requests"]["ok"], 10, "{room}");
    // 16 reasoning tokens, then the 8-token answer, as the server's usage counts them.
    assert_eq!(room["tokens"]["output"], 10 * 24, "{}", room["tokens"]);
    assert_eq!(room["tokens"]["reasoning"], 10 * 16);
    assert_eq!(room["tokens"]["from_usage"], 10);
    assert!(room["tokens"].get("answer_starved").is_none());
    assert!(room["throughput"]["output_tokens_per_s"].as_f64().unwrap() > 0.0);
    // An answer that comes whole has no first token: no TTFT, ITL, TPOT or TTFA written.
    let latency = room["latency"].as_object().unwrap();
    assert!(latency.contains_key("e2e_ms"), "{latency:?}");
    for key in ["ttft_ms", "itl_ms", "tpot_ms", "ttfa_ms"] {
        assert!(!latency.contains_key(key), "{key} in {latency:?}");
    }
    assert_eq!(room["throughput"]["goodput_ratio"], 1.0);
    // The budget ran out while the model reasoned: no answer item, never good.
    let starved = stage(&r, "starved");
    assert_eq!(starved["requests"]["ok"], 4, "{starved}");
    assert_eq!(starved["tokens"]["answer_starved"], 4);
    assert_eq!(starved["throughput"]["goodput_ratio"], 0.0);
    // The reports show only the metrics the target has.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("E2E"), "{md}");
    assert!(!md.contains("TTFT"), "{md}");
    // What the reasoning cost, in every report format.
    assert!(
        md.contains("| reasoning tokens | 160 of 240 out (66.7 %; reported by 10 requests) |"),
        "{md}"
    );
    assert!(md.contains("| answer-starved | 4 of 4 ok requests"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(!html.contains("TTFT"));
    assert!(html.contains("answer-starved") && html.contains("160 of 240 out"));
    let csv = std::fs::read_to_string(out.join("stages.csv")).unwrap();
    let cells = |row: usize, col: &str| -> String {
        let lines: Vec<&str> = csv.lines().collect();
        let at = lines[0].split(',').position(|c| c == col).unwrap();
        lines[row].split(',').nth(at).unwrap().to_string()
    };
    assert_eq!(cells(1, "reasoning_tokens"), "160", "{csv}");
    assert_eq!(cells(1, "answer_starved"), "0");
    assert_eq!(cells(2, "answer_starved"), "4");
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains("e2e_p50_ms") && header.contains("output_tokens"),
        "{header}"
    );
    assert!(!header.contains("ttft"), "{header}");
}

#[test]
fn stream_false_is_refused_where_it_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    for (target, want) in [
        (
            r#"api "chat"; stream #false"#,
            "cannot be asked stream #false",
        ),
        (
            r#"api "embeddings"; stream #false"#,
            "cannot be asked stream #false",
        ),
    ] {
        let kdl = format!("target \"sim\" {{ {target} }}\nstage \"s\" {{ requests 1 }}\n");
        let path = scenario(dir.path(), "x.kdl", &kdl);
        let o = infermeter(&["validate", path.to_str().unwrap()]);
        let (out, err) = text(&o);
        assert_ne!(o.status.code(), Some(0), "{target}");
        assert!(format!("{out}{err}").contains(want), "{target}: {out}{err}");
    }
    let kdl = "target \"sim\" { api \"responses\"; stream #false }\n\
               dataset \"d\" { synthetic { input-tokens 8; output-tokens 8; } }\n\
               stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }\n\
               sla { assert \"ttft.p95 < 1s\"; }\n";
    let path = scenario(dir.path(), "y.kdl", kdl);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        format!("{out}{err}").contains("with stream #false has no `ttft`"),
        "{out}{err}"
    );
    // A goodput objective no whole answer could meet, likewise.
    let kdl = "target \"sim\" { api \"responses\"; stream #false }\n\
               dataset \"d\" { synthetic { input-tokens 8; output-tokens 8; } }\n\
               stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }\n\
               goodput ttft=\"1s\"\n";
    let path = scenario(dir.path(), "z.kdl", kdl);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        format!("{out}{err}").contains("no answer that comes whole can meet"),
        "{out}{err}"
    );
}

/// Runs 3 requests one at a time against a server answering each with `body` (a whole JSON
/// answer, or with `raw` the bytes after the status line's head); the stage.
fn run_raw(answer: impl Fn(&mut Post<'_>) -> After + Send + Sync + 'static) -> serde_json::Value {
    let server = RawServer::start(true, answer);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
target "{}" {{ model "m"; api "responses"; stream #false; timeout "20s"; max-event-size 4096; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 8; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; }}
"#,
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    stage(&results(&out), "s").clone()
}

fn answering(body: &'static str) -> impl Fn(&mut Post<'_>) -> After + Send + Sync + 'static {
    move |p: &mut Post<'_>| {
        // The request asks for a whole answer.
        let sent = p.body();
        assert!(sent.contains(r#""stream":false"#), "{sent}");
        p.json(body)
    }
}

#[test]
fn broken_whole_responses_fail_as_what_they_are() {
    let deep: &'static str = Box::leak(
        format!(
            r#"{{"output":[{{"type":"message","content":{}{}}}]}}"#,
            "[".repeat(1000),
            "]".repeat(1000)
        )
        .into_boxed_str(),
    );
    let huge: &'static str = Box::leak(
        format!(
            r#"{{"output":[{{"type":"message","content":[{{"type":"output_text","text":"{}"}}]}}]}}"#,
            "x".repeat(8192)
        )
        .into_boxed_str(),
    );
    let cases: [(&'static str, &str); 8] = [
        (
            r#"{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"cut"#,
            "malformed",
        ),
        ("<html><body>502 Bad Gateway</body></html>", "malformed"),
        (
            r#"{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":7}]}]}"#,
            "malformed",
        ),
        (
            r#"{"status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}"#,
            "stream_broken",
        ),
        (r#"{"status":"in_progress","output":[]}"#, "malformed"),
        (r#"{"status":"completed","output":[]}"#, "empty"),
        (deep, "malformed"),
        (huge, "malformed"),
    ];
    for (body, kind) in cases {
        let s = run_raw(answering(body));
        assert_eq!(
            s["requests"]["errors"],
            serde_json::json!({ kind: 3 }),
            "{}: {}",
            &body[..body.len().min(80)],
            s["requests"]
        );
    }
}

#[test]
fn a_whole_answer_without_usage_or_with_a_tool_call_counts() {
    // No usage: the answer's text is counted; markup in it is text like any other.
    let s = run_raw(answering(
        r#"{"id":"resp_x","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"<b>hello</b> there"}]}]}"#,
    ));
    assert_eq!(s["requests"]["ok"], 3, "{}", s["requests"]);
    assert_eq!(s["tokens"]["from_tokenizer"], 3, "{}", s["tokens"]);
    // Two calls in one answer: both are output, and a tool call is an answer.
    let s = run_raw(answering(
        r#"{"status":"completed","output":[{"type":"function_call","call_id":"a","name":"f","arguments":"{\"q\":1}"},{"type":"function_call","call_id":"b","name":"g","arguments":"{}"}],"usage":{"input_tokens":20,"output_tokens":6}}"#,
    ));
    assert_eq!(s["requests"]["ok"], 3, "{}", s["requests"]);
    assert_eq!(s["tokens"]["output"], 18);
}
