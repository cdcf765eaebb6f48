//! Sessions that answer tool calls with tool results, through the real binary: the simulator
//! (its own process, `tool_calls` on) answers a session's first turn with a tool call; the
//! second turn sends the call back with a tool result — chat's `tool` message, the Responses
//! API's `function_call_output` item — after the tool time, which is not latency; the
//! simulator counts the results it accepted and those naming its own call ids on `/metrics`.
//! A misbehaving server's unusable call ids, an empty answer and garbage arguments neither
//! panic nor hang a session.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::scrape::metric;
use crate::support::*;

/// The tools every chat request offers (`target { body { … } }`).
const TOOLS: &str = r#"body {
        tool_choice "auto"
        tools {
            - {
                type "function"
                function { name "get_weather"; parameters { type "object"; }; }
            }
        }
    }"#;

/// The same tool as the Responses API takes it (flat: no `function` object).
pub(crate) const RESPONSES_TOOLS: &str = r#"body {
        tool_choice "auto"
        tools { - { type "function"; name "get_weather"; parameters { type "object"; }; }; }
    }"#;

/// A simulator in its own process that answers requests offering tools with tool calls,
/// stopping on its own (3 tokens, under the requests' 6) so a call ends `tool_calls`; `more`:
/// further flags.
pub(crate) fn tool_sim(dir: &std::path::Path, more: &[&str]) -> SimProcess {
    let config = dir.join("sim.json");
    std::fs::write(
        &config,
        r#"{"tool-calls": true, "output-len-dist": "fixed", "output-len-mean": 3}"#,
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let mut args = vec!["--config", config, "--decode-base", "1ms", "--jitter", "0"];
    args.extend_from_slice(more);
    SimProcess::start(&args)
}

/// The simulator's `infermeter_sim_tool_results*` counters: (all, naming its own ids).
fn tool_counters(base_url: &str) -> (f64, f64) {
    (
        metric(base_url, "infermeter_sim_tool_results_total"),
        metric(base_url, "infermeter_sim_tool_results_sim_ids_total"),
    )
}

fn rows(out: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs 3 two-turn sessions of `api` with `history` against a tool-calling simulator; the
/// stage, its rows and the simulator's counters.
fn round_trips(api: &str, history: &str) -> (Value, Vec<Value>, (f64, f64)) {
    round_trips_with(api, history, "")
}

/// [`round_trips`] with `extra` in the target (`stream #false`).
fn round_trips_with(api: &str, history: &str, extra: &str) -> (Value, Vec<Value>, (f64, f64)) {
    let dir = tempfile::tempdir().unwrap();
    let sim = tool_sim(dir.path(), &[]);
    let kdl = format!(
        r#"
scenario "tools" {{ seed 3 }}
target "{url}" {{
    api "{api}"
    timeout "30s"
    ignore-eos #false
    {extra}
    {tools}
}}
dataset "d" {{
    synthetic {{ input-tokens 40; output-tokens 6 }}
    session turns=2 history="{history}" tool-time="300ms" tool-time-max="400ms"
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=2; requests 3; }}
"#,
        url = sim.base_url,
        tools = if api == "responses" {
            RESPONSES_TOOLS
        } else {
            TOOLS
        },
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
    let report = infermeter(&["report", out.join("results.json").to_str().unwrap()]);
    let (shown, _) = text(&report);
    assert!(shown.contains("tool round trips"), "{shown}");
    let counters = tool_counters(&sim.base_url);
    (stage(&results(&out), "s").clone(), rows(&out), counters)
}

/// Every session's turn 0 was answered with a call and turn 1 sent its result after the tool
/// time: turn 1 was due (its latency's start) no sooner than 300 ms after turn 0 ended.
fn assert_round_trips(s: &Value, rows: &[Value]) {
    assert_eq!(s["requests"]["ok"], 6, "{}", s["requests"]);
    assert_eq!(s["tokens"]["tool_round_trips"], 3, "{}", s["tokens"]);
    for index in 0..3 {
        let turn = |k: u64| {
            rows.iter()
                .find(|r| r["index"] == index && r["turn"] == k)
                .unwrap_or_else(|| panic!("session {index} turn {k}"))
        };
        let (first, second) = (turn(0), turn(1));
        assert_eq!(first["finish_reason"], "tool_calls", "{first}");
        assert!(first.get("tool_result").is_none(), "{first}");
        assert_eq!(second["tool_result"], true, "{second}");
        assert_ne!(
            second["finish_reason"], "tool_calls",
            "answered with text: {second}"
        );
        let gap = second["scheduled_ns"].as_u64().unwrap() - first["done_ns"].as_u64().unwrap();
        assert!(
            gap >= 300_000_000,
            "the tool time is before the turn is due: {gap} ns"
        );
    }
}

#[test]
fn a_chat_session_answers_the_servers_tool_call_with_its_result() {
    let (s, rows, (results, own_ids)) = round_trips("chat", "server");
    assert_round_trips(&s, &rows);
    // The simulator accepted 3 tool messages (a result naming no call of the request is a
    // 400), each naming the call id it gave.
    assert_eq!((results, own_ids), (3.0, 3.0));
}

#[test]
fn whole_answers_with_tool_calls_are_answered_too() {
    // `stream #false` (which the client reads on the Responses API): the simulator answers
    // with whole `function_call` items, answered as streamed ones are.
    let (s, rows, (results, own_ids)) = round_trips_with("responses", "server", "stream #false");
    assert_round_trips(&s, &rows);
    assert_eq!((results, own_ids), (3.0, 3.0));
}

#[test]
fn a_responses_session_sends_function_call_output_items() {
    let (s, rows, (results, own_ids)) = round_trips("responses", "dataset");
    assert_round_trips(&s, &rows);
    // Under history "dataset" the calls go back as planned: the session's own ids.
    assert_eq!((results, own_ids), (3.0, 0.0));
}

/// A server whose first turns answer with a tool call of `call` (a `tool_calls[]` element's
/// JSON, or nothing for no call) in session order, and whose later turns answer with text;
/// every body it was sent.
fn misbehaving(calls: Vec<String>) -> (RawServer, Arc<Mutex<Vec<String>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        let body = p.body();
        let first_turn = body.matches("\"role\"").count() == 1;
        let mut seen = seen.lock().unwrap();
        seen.push(body);
        let chunks = if first_turn {
            let n = seen
                .iter()
                .filter(|b| b.matches("\"role\"").count() == 1)
                .count();
            let call = &calls[(n - 1) % calls.len()];
            let delta = if call.is_empty() {
                r#"{"tool_calls":[]}"#.to_string()
            } else {
                format!(r#"{{"role":"assistant","tool_calls":[{call}]}}"#)
            };
            format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{delta}}}]}}\n\n\
                 data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\n"
            )
        } else {
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"fine\"},\"finish_reason\":\"stop\"}]}\n\n"
                .to_string()
        };
        let body = format!("{chunks}data: [DONE]\n\n");
        p.write(
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        );
        After::KeepAlive
    });
    (server, bodies)
}

#[test]
fn unusable_call_ids_empty_answers_and_garbage_arguments_do_not_break_a_session() {
    const LONG: &str = "x";
    let call = |id: &str, args: &str| {
        format!(
            r#"{{"index":0,"id":{id},"type":"function","function":{{"name":"get_weather","arguments":{args}}}}}"#
        )
    };
    let (server, bodies) = misbehaving(vec![
        // An id with an escape sequence: not sent back.
        call(r#""call\u001b[31m""#, r#""{}""#),
        // An id far over the cap: not sent back.
        call(&format!("\"{}\"", LONG.repeat(5000)), r#""{}""#),
        // A usable id with arguments that are not JSON: sent back as received.
        call(r#""call_ok""#, r#""{\"city\": <<garbage""#),
        // No call at all and no text: an empty answer.
        String::new(),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
scenario "tools" {{ seed 3 }}
target "{}" {{ model "m"; timeout "20s"; ignore-eos #false; {TOOLS} }}
dataset "d" {{
    synthetic {{ input-tokens 20; output-tokens 4 }}
    session turns=2 history="server" tool-time="10ms"
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 4; }}
"#,
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl", "--untrusted", "judge"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let s = stage(&results(&out), "s").clone();
    // Sessions 0 and 1: two plain turns (the refused calls are not answered); session 2: a
    // tool round trip; session 3: its empty first answer is a named failure (`empty`) that
    // ends the session.
    assert_eq!(s["requests"]["ok"], 6, "{}", s["requests"]);
    assert_eq!(
        s["requests"]["errors"],
        serde_json::json!({ "empty": 1 }),
        "{}",
        s["requests"]
    );
    assert_eq!(s["tokens"]["tool_round_trips"], 1, "{}", s["tokens"]);
    let bodies = bodies.lock().unwrap();
    let answers: Vec<&String> = bodies
        .iter()
        .filter(|b| b.contains("\"role\":\"tool\""))
        .collect();
    assert_eq!(
        answers.len(),
        1,
        "only the usable call is answered: {bodies:?}"
    );
    let sent: Value = serde_json::from_str(answers[0]).unwrap();
    let ms = sent["messages"].as_array().unwrap();
    let call = &ms[ms.len() - 2]["tool_calls"][0];
    assert_eq!(call["id"], "call_ok");
    assert_eq!(call["function"]["arguments"], "{\"city\": <<garbage");
    assert_eq!(ms[ms.len() - 1]["tool_call_id"], "call_ok");
    for b in bodies.iter() {
        assert!(
            !b.contains("\\u001b") && !b.contains(&LONG.repeat(200)),
            "{b}"
        );
    }
    for r in rows(&out) {
        assert!(!r.to_string().contains(&LONG.repeat(200)), "{r}");
    }
}
