//! A server's hostile tool calls against a session that answers them, through the real binary:
//! 10,000 calls in one answer (duplicate ids among them), 10 MB of one call's arguments, a call
//! id of markup. No panic, no hang; what is kept and answered is bounded (the first 128 calls,
//! each id once; a call past 1 MiB of arguments is not answered); nothing of the server's text
//! reaches a report or a row.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::*;

const TOOLS: &str = r#"body {
        tools { - { type "function"; function { name "get_weather"; parameters { type "object"; }; }; }; }
    }"#;

const MARKUP: &str = "<script>alert(1)</script>";

fn delta(calls: &str) -> String {
    format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{calls}]}}}}]}}\n\n")
}

fn call(id: &str) -> String {
    format!(
        r#"{{"index":0,"id":"{id}","type":"function","function":{{"name":"get_weather","arguments":"{{}}"}}}}"#
    )
}

/// Session 1's first answer: 10,000 calls, one a chunk, the first id repeated 3 times.
fn flood() -> String {
    let mut out = String::new();
    for _ in 0..3 {
        out.push_str(&delta(&call("c0")));
    }
    for i in 1..10_000 {
        out.push_str(&delta(&call(&format!("c{i}"))));
    }
    out
}

/// Session 2's first answer: a call whose arguments are 10 MB (in 64 KiB deltas), then a call
/// whose id is markup.
fn huge() -> String {
    let mut out = delta(&call("big").replace("{}", ""));
    let piece = "x".repeat(64 * 1024);
    for _ in 0..160 {
        out.push_str(&delta(&format!(
            r#"{{"index":0,"function":{{"arguments":"{piece}"}}}}"#
        )));
    }
    out.push_str(&delta(&call(MARKUP)));
    out
}

fn server() -> (RawServer, Arc<Mutex<Vec<String>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        let body = p.body();
        let first_turn = body.matches("\"role\"").count() == 1;
        let mut seen = seen.lock().unwrap();
        seen.push(body);
        let firsts = seen
            .iter()
            .filter(|b| b.matches("\"role\"").count() == 1)
            .count();
        let mut out = match (first_turn, firsts) {
            (true, 1) => flood(),
            (true, _) => huge(),
            (false, _) => {
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fine\"}}]}\n\n"
                    .to_string()
            }
        };
        let end = if first_turn { "tool_calls" } else { "stop" };
        out.push_str(&format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{end}\"}}]}}\n\ndata: [DONE]\n\n"
        ));
        p.write(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                out.len()
            )
            .as_bytes(),
        );
        p.write(out.as_bytes());
        After::KeepAlive
    });
    (server, bodies)
}

#[test]
fn floods_of_calls_huge_arguments_and_markup_ids_stay_bounded_and_unshown() {
    let (server, bodies) = server();
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{}" {{ model "m"; timeout "60s"; ignore-eos #false; {TOOLS} }}
dataset "d" {{
    synthetic {{ input-tokens 20; output-tokens 4 }}
    session turns=2 history="server" tool-time="10ms"
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 2; }}
"#,
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl", "--untrusted", "judge"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let s = stage(&results(&out), "s").clone();
    assert_eq!(s["requests"]["ok"], 4, "{}", s["requests"]);
    assert_eq!(s["tokens"]["tool_round_trips"], 2, "{}", s["tokens"]);
    let bodies = bodies.lock().unwrap();
    let answers: Vec<Value> = bodies
        .iter()
        .filter(|b| b.contains("\"role\":\"tool\""))
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    assert_eq!(answers.len(), 2);
    let results = |v: &Value| -> Vec<String> {
        v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["tool_call_id"].as_str().unwrap().to_string())
            .collect()
    };
    // The first 128 calls kept, each id once: c0 (its repeats dropped) to c125.
    let flood = results(&answers[0]);
    assert_eq!(flood.len(), 126, "{flood:?}");
    assert_eq!((flood[0].as_str(), flood[125].as_str()), ("c0", "c125"));
    // The 10 MB call is not answered (nor sent back); the markup id goes back as JSON text.
    assert_eq!(results(&answers[1]), [MARKUP]);
    assert!(
        bodies.iter().all(|b| b.len() < 1 << 20),
        "nothing huge is sent back"
    );
    // Nothing of the server's ids is written to the outputs.
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert!(!text.contains("alert(1)"), "{}", path.display());
            assert!(!text.contains("c125"), "{}", path.display());
        }
    }
}
