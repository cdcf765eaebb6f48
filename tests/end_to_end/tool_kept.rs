//! Sessions the server keeps (`state="previous-response-id"`) answering tool calls, through
//! the real binary: against the simulator (its own process, `tool-calls` on), a turn answered
//! with a function call is followed, after the tool time, by a turn that sends only
//! `previous_response_id` and one `function_call_output` per call, which the simulator checks
//! against its stored response's calls and counts as a resent conversation would; against a
//! Responses server written for the test, the exact body, with an unusable call left
//! unanswered.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::scrape::{metric, metrics};
use crate::support::*;
use crate::tool_results::{RESPONSES_TOOLS, tool_sim};

fn rows(out: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs 3 three-turn Responses sessions in `state` against `base_url` (`extra` in the target);
/// the stage and its rows.
fn sessions(base_url: &str, state: &str, extra: &str) -> (Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
scenario "tools" {{ seed 3 }}
target "{base_url}" {{
    api "responses"
    timeout "30s"
    ignore-eos #false
    {extra}
    {RESPONSES_TOOLS}
}}
dataset "d" {{
    synthetic {{ input-tokens 40; output-tokens 6 }}
    session turns=3 state="{state}" history="server" tool-time="300ms"
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=2; requests 3; }}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl", "--untrusted", "judge"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        describe(&o),
        std::fs::read_to_string(out.join("results.json")).unwrap_or_default()
    );
    (stage(&results(&out), "s").clone(), rows(&out))
}

fn per_turn(stage: &Value, key: &str) -> Vec<f64> {
    stage["per_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[key].as_f64().unwrap_or(f64::NAN))
        .collect()
}

/// Turn 0 of each session is answered with a call; turn 1 sends its result after the tool
/// time and is answered with text; turn 2 is the next user message.
fn assert_answered(s: &Value, rows: &[Value]) {
    assert_eq!(s["requests"]["ok"], 9, "{}", s["requests"]);
    assert_eq!(s["tokens"]["tool_round_trips"], 3, "{}", s["tokens"]);
    for index in 0..3 {
        let turn = |k: u64| {
            rows.iter()
                .find(|r| r["index"] == index && r["turn"] == k)
                .unwrap_or_else(|| panic!("session {index} turn {k}"))
        };
        assert_eq!(turn(0)["finish_reason"], "tool_calls", "{}", turn(0));
        assert_eq!(turn(1)["tool_result"], true, "{}", turn(1));
        assert_ne!(turn(1)["finish_reason"], "tool_calls", "{}", turn(1));
        assert!(turn(2).get("tool_result").is_none(), "{}", turn(2));
        let gap = turn(1)["scheduled_ns"].as_u64().unwrap() - turn(0)["done_ns"].as_u64().unwrap();
        assert!(gap >= 300_000_000, "the tool time first: {gap} ns");
    }
    for r in rows {
        assert_eq!(r["token_mismatch"], false, "planned vs usage: {r}");
    }
}

#[test]
fn a_kept_session_answers_function_calls_with_outputs_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (kept_sim, resent_sim) = (
        tool_sim(dir.path(), &["--prefix-cache"]),
        tool_sim(dir.path(), &["--prefix-cache"]),
    );
    let (kept, rows) = sessions(&kept_sim.base_url, "previous-response-id", "");
    assert_answered(&kept, &rows);
    // Every result named the call of the response it continued (an unknown one is a 400);
    // each later turn found its predecessor.
    assert_eq!(
        metric(&kept_sim.base_url, "infermeter_sim_tool_results_total"),
        3.0
    );
    assert_eq!(
        metric(
            &kept_sim.base_url,
            "infermeter_sim_tool_results_sim_ids_total"
        ),
        3.0
    );
    let m = metrics(&kept_sim.base_url, "infermeter_sim_previous_response");
    assert_eq!(
        m["infermeter_sim_previous_response_hits_total"], 6.0,
        "{m:?}"
    );
    assert_eq!(
        m["infermeter_sim_previous_response_misses_total"], 0.0,
        "{m:?}"
    );
    // The server processed what a resent conversation makes it process, turn by turn, while
    // the tool-result turn sent only its outputs.
    let (resent, resent_rows) = sessions(&resent_sim.base_url, "resend", "");
    assert_answered(&resent, &resent_rows);
    assert_eq!(
        per_turn(&kept, "mean_input_tokens"),
        per_turn(&resent, "mean_input_tokens")
    );
    let (sent, resent_bytes) = (
        per_turn(&kept, "mean_sent_input_tokens"),
        per_turn(&resent, "mean_request_bytes"),
    );
    // The outputs' texts are the turn's planned text, as a resent session's results are.
    assert_eq!(sent, vec![40.0; 3], "outputs only: {sent:?}");
    assert!(
        per_turn(&kept, "mean_request_bytes")[1] < resent_bytes[1],
        "{resent_bytes:?}"
    );
}

#[test]
fn a_kept_session_answers_whole_function_calls_too() {
    let dir = tempfile::tempdir().unwrap();
    let sim = tool_sim(dir.path(), &["--prefix-cache"]);
    let (kept, rows) = sessions(&sim.base_url, "previous-response-id", "stream #false");
    assert_answered(&kept, &rows);
    assert_eq!(
        metric(&sim.base_url, "infermeter_sim_tool_results_total"),
        3.0
    );
}

/// A Responses server whose first answer calls two functions (one with an id full of control
/// characters) and whose later answers are text; every body it was sent.
fn calling_server() -> (RawServer, Arc<Mutex<Vec<Value>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        let body: Value = serde_json::from_str(&p.body()).unwrap_or(Value::Null);
        kept.lock().unwrap().push(body);
        let id = format!("resp_{}", p.n);
        let item = |i: u32, call: &str| {
            format!(
                r#"{{"type":"response.output_item.added","output_index":{i},"item":{{"type":"function_call","id":"fc_{i}","call_id":{call},"name":"get_weather","arguments":""}}}}"#
            )
        };
        let mut events = vec![format!(
            r#"{{"type":"response.created","response":{{"id":"{id}","status":"in_progress"}}}}"#
        )];
        if p.n == 1 {
            events.push(item(0, r#""call_a""#));
            events.push(
                r#"{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{\"city\":\"Paris\"}"}"#.into(),
            );
            events.push(item(1, r#""call_\u001b[2J<b>""#));
            events.push(
                r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{}"}"#.into(),
            );
        } else {
            events.push(r#"{"type":"response.output_text.delta","delta":" fine"}"#.into());
        }
        events.push(format!(
            r#"{{"type":"response.completed","response":{{"id":"{id}","status":"completed","usage":{{"input_tokens":20,"output_tokens":2}}}}}}"#
        ));
        p.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
        for e in events {
            let chunk = format!("data: {e}\n\n");
            p.write(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
        }
        p.write(b"0\r\n\r\n");
        After::KeepAlive
    });
    (server, bodies)
}

#[test]
fn the_tool_result_turn_sends_the_previous_id_and_one_output_per_usable_call() {
    let (server, bodies) = calling_server();
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{}" {{ model "m"; api "responses"; timeout "20s"; {RESPONSES_TOOLS} }}
dataset "d" {{
    synthetic {{ input-tokens 16; output-tokens 8; }}
    session turns=3 state="previous-response-id" tool-time="10ms"
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 1; }}
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
    assert_eq!(s["requests"]["ok"], 3, "{}", s["requests"]);
    assert_eq!(s["tokens"]["tool_round_trips"], 1, "{}", s["tokens"]);
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 3);
    let second = &bodies[1];
    assert_eq!(second["previous_response_id"], "resp_1", "{second}");
    assert_eq!(second["store"], true, "{second}");
    let input = second["input"].as_array().unwrap();
    // Only the usable call is answered; nothing the server holds is sent again.
    assert_eq!(input.len(), 1, "{second}");
    assert_eq!(input[0]["type"], "function_call_output", "{second}");
    assert_eq!(input[0]["call_id"], "call_a", "{second}");
    assert!(!input[0]["output"].as_str().unwrap().is_empty(), "{second}");
    let text = second.to_string();
    assert!(
        !text.contains("Paris") && !text.contains("\"function_call\""),
        "{text}"
    );
    assert!(!text.contains("\\u001b"), "{text}");
    // The third turn is the next user message, naming the second's response.
    assert_eq!(bodies[2]["previous_response_id"], "resp_2");
    assert_eq!(bodies[2]["input"][0]["role"], "user", "{}", bodies[2]);
    for r in rows(&out) {
        assert!(!r.to_string().contains("call_"), "no call id in rows: {r}");
    }
}
