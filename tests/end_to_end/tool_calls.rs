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
