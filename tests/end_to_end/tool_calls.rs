//! Tool calling through the real binary: a JSONL data set offering tools, answered by the
//! simulator with streamed tool calls (counted as output, a success, TTFT from the first
//! tool-call delta), and a server whose tool-call deltas are broken (counted as `malformed`).

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::*;

const TOOLS_LINE: &str = r#"{"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}], "tool_choice": "auto", "max_tokens": 12}"#;

#[test]
fn tool_call_answers_are_output_and_successes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tools.jsonl"), format!("{TOOLS_LINE}\n")).unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        r#"
target "sim" { decode-base "1ms"; tool-calls #true; ignore-eos #false; output-len-dist "fixed"; output-len-mean 5; }
dataset "d" { jsonl "tools.jsonl" }
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 6; }
"#,
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let s = stage(&results(&out), "s").clone();
    assert_eq!(s["requests"]["ok"], 6, "{s}");
    assert_eq!(s["requests"]["failed"], 0, "{s}");
    assert!(
        s["latency"]["ttft_ms"]["p50"].as_f64().unwrap() > 0.0,
        "{s}"
    );
    let lines = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let mut n = 0;
    for line in lines.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["finish_reason"], "tool_calls", "{r}");
        assert_eq!(r["output_tokens"], 5, "{r}");
        // The first tool-call delta (the name) is the first token and the first answer.
        assert!(r["first_token_ns"].as_u64().is_some(), "{r}");
        assert_eq!(r["first_token_ns"], r["first_answer_ns"], "{r}");
        n += 1;
    }
    assert_eq!(n, 6);
    // The stage's tool calls: counted, and shown in the summary and the reports.
    assert_eq!(s["tokens"]["tool_answers"], 6, "{}", s["tokens"]);
    assert_eq!(s["tokens"]["tool_calls"], 6, "{}", s["tokens"]);
    let (stdout, _) = text(&o);
    let line = "tool calls: 6 in 6 of 6 ok answers (1.00 per answer that called)";
    assert!(stdout.contains(&format!("    {line}")), "{stdout}");
    for absent in ["images:", "vision tokens", "reasoning tokens", "TTFA"] {
        assert!(!stdout.contains(absent), "{absent}: {stdout}");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| tool calls | 6 in 6 of 6 ok answers (1.00 per answer that called) |"),
        "{md}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("6 in 6 of 6 ok answers"), "{html}");
}

#[test]
fn broken_tool_call_deltas_are_malformed() {
    let bodies: Vec<String> = [
        r#"{"choices":[{"delta":{"tool_calls":"get_weather"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":{"city":"x"}}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{\"a"#,
        r#"{"choices":[{"delta":{"tool_calls":[17]}}]}"#,
    ]
    .iter()
    .map(|chunk| {
        let body = format!(
            "data: {{\"choices\":[{{\"delta\":{{\"role\":\"assistant\",\"tool_calls\":[{{\"index\":0,\"id\":\"c\",\"function\":{{\"name\":\"f\",\"arguments\":\"\"}}}}]}}}}]}}\n\n\
             data: {chunk}\n\ndata: [DONE]\n\n"
        );
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    })
    .collect();
    let n = bodies.len();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        p.write(bodies[(p.n - 1) % bodies.len()].as_bytes());
        After::KeepAlive
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tools.jsonl"), format!("{TOOLS_LINE}\n")).unwrap();
    let text = format!(
        r#"
target "{}" {{ model "m"; timeout "20s"; }}
dataset "d" {{ jsonl "tools.jsonl" }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests {n}; }}
"#,
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let req = stage(&results(&out), "s")["requests"].clone();
    assert_eq!(
        req["errors"],
        serde_json::json!({ "malformed": n }),
        "{req}"
    );
}

/// Runs 3 requests against a server streaming `chunks` (each a chat chunk's JSON) then
/// `[DONE]`, without usage (the output is counted from the streamed text); the stage.
fn run_chunks(chunks: &'static [&'static str]) -> serde_json::Value {
    let mut body = String::new();
    for c in chunks {
        body.push_str(&format!("data: {c}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        p.write(answer.as_bytes());
        After::KeepAlive
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tools.jsonl"), format!("{TOOLS_LINE}\n")).unwrap();
    let text = format!(
        r#"
target "{}" {{ model "m"; timeout "20s"; ignore-eos #false; }}
dataset "d" {{ jsonl "tools.jsonl" }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; }}
"#,
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--untrusted", "judge"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    stage(&results(&out), "s").clone()
}

#[test]
fn parallel_tool_calls_in_one_delta_all_count() {
    const FINISH: &str = r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#;
    let one = run_chunks(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}"#,
        FINISH,
    ]);
    let both = run_chunks(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},{"index":1,"id":"b","function":{"name":"get_weather","arguments":"{\"city\":\"Tokyo, the capital of Japan\"}"}}]}}]}"#,
        FINISH,
    ]);
    for s in [&one, &both] {
        assert_eq!(s["requests"]["ok"], 3, "{}", s["requests"]);
        assert_eq!(s["tokens"]["from_tokenizer"], 3, "{}", s["tokens"]);
        assert_eq!(s["tokens"]["tool_answers"], 3, "{}", s["tokens"]);
    }
    // Each call of a delta is a call: two per answer.
    assert_eq!(one["tokens"]["tool_calls"], 3, "{}", one["tokens"]);
    assert_eq!(both["tokens"]["tool_calls"], 6, "{}", both["tokens"]);
    let (n1, n2) = (
        one["tokens"]["output"].as_u64().unwrap(),
        both["tokens"]["output"].as_u64().unwrap(),
    );
    assert!(
        n2 > n1 + 3 * 5,
        "the second call's arguments are output: {n1} / {n2}"
    );
    // Only the second call of the delta carries anything: still the first token.
    let second = run_chunks(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0},{"index":1,"id":"b","function":{"name":"f","arguments":"{}"}}]}}]}"#,
        FINISH,
    ]);
    assert_eq!(second["requests"]["ok"], 3, "{}", second["requests"]);
    assert_eq!(second["tokens"]["tool_calls"], 3, "{}", second["tokens"]);
    assert_eq!(
        second["latency"]["ttft_ms"]["count"], 3,
        "{}",
        second["latency"]
    );
    // A later call that is not an object fails the request like a first one.
    let broken = run_chunks(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}},17]}}]}"#,
        FINISH,
    ]);
    assert_eq!(
        broken["requests"]["errors"],
        serde_json::json!({ "malformed": 3 })
    );
}
