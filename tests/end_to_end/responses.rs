//! `api "responses"` through the real binary: against the simulator serving a reasoning model
//! (TTFT at the first reasoning token, TTFA at the first answer token, reasoning tokens and
//! answer-starved requests in results.json, the reasoning effort reaching the server), and
//! against a server whose Responses streams are broken in each way the grammar allows.

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::*;

/// Runs `body` (stages and datasets) against the simulator speaking the Responses API with
/// `reasoning` tokens of reasoning before each answer; the results and the run's output.
fn run_sim(reasoning: u32, target_extra: &str, body: &str) -> (serde_json::Value, String) {
    run_sim_api("responses", reasoning, target_extra, body)
}

fn run_sim_api(
    api: &str,
    reasoning: u32,
    target_extra: &str,
    body: &str,
) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
target "sim" {{
    api "{api}"
    decode-base "1ms"
    reasoning-tokens {reasoning}
    output-len-dist "fixed"
    output-len-mean 8
    {target_extra}
}}
{body}
"#
    );
    let path = scenario(dir.path(), "r.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    (results(&out), text_of(&o))
}

fn text_of(o: &std::process::Output) -> String {
    let (stdout, stderr) = text(o);
    format!("{stdout}{stderr}")
}

#[test]
fn reasoning_then_answer_against_the_simulator() {
    let (r, printed) = run_sim(
        16,
        "",
        r#"
dataset "room" { synthetic { input-tokens 32; output-tokens 64; } }
dataset "starved" { synthetic { input-tokens 32; output-tokens 8; } }
stage "room" { dataset "room"; arrival "concurrency" clients=2; requests 12; }
stage "starved" { dataset "starved"; arrival "concurrency" clients=2; requests 6; }
goodput ttft="10s"
"#,
    );
    let room = stage(&r, "room");
    assert_eq!(room["requests"]["ok"], 12, "{room}");
    // 16 reasoning tokens, then the 8-token answer: the server's own counts.
    assert_eq!(room["tokens"]["output"], 12 * 24, "{}", room["tokens"]);
    assert_eq!(room["tokens"]["reasoning"], 12 * 16);
    assert_eq!(room["tokens"]["reasoning_reported"], 12);
    assert_eq!(room["tokens"]["from_usage"], 12);
    assert!(room["tokens"].get("answer_starved").is_none());
    let (ttft, ttfa) = (
        room["latency"]["ttft_ms"]["p50"].as_f64().unwrap(),
        room["latency"]["ttfa_ms"]["p50"].as_f64().unwrap(),
    );
    assert!(
        ttfa > ttft,
        "the answer comes after the reasoning: {ttft} / {ttfa}"
    );
    assert_eq!(room["throughput"]["goodput_ratio"], 1.0);
    // The summary shows TTFA beside TTFT, and the reasoning tokens, for this stage.
    assert!(
        printed.contains(&format!(
            "    TTFA p50/p99 {ttfa:.1} / {:.1} ms (the first answer token, after reasoning; TTFT \
             p50/p99 {ttft:.1} / ",
            room["latency"]["ttfa_ms"]["p99"].as_f64().unwrap()
        )),
        "{printed}"
    );
    assert!(
        printed.contains("    reasoning tokens: 192 of 288 out (66.7 %; reported by 12 requests)"),
        "{printed}"
    );

    // A budget under the reasoning: no answer at all, and no good request however fast.
    let starved = stage(&r, "starved");
    assert_eq!(starved["requests"]["ok"], 6, "{starved}");
    assert_eq!(starved["tokens"]["answer_starved"], 6);
    assert_eq!(starved["tokens"]["reasoning"], 6 * 8);
    assert_eq!(starved["throughput"]["goodput_ratio"], 0.0);
    assert!(
        printed.contains("answer-starved: 6 of 6 ok requests"),
        "{printed}"
    );
    assert!(
        printed.contains("reasoning-effort"),
        "the fix is named: {printed}"
    );
}

#[test]
fn the_reasoning_effort_reaches_the_server() {
    // The simulator reasons a quarter as long at `low`, twice as long at `high`.
    let body = r#"
dataset "d" { synthetic { input-tokens 16; output-tokens 128; } }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 3; }
"#;
    for (effort, per_request) in [("low", 4), ("high", 32)] {
        let (r, _) = run_sim(16, &format!("reasoning-effort \"{effort}\""), body);
        let s = stage(&r, "s");
        assert_eq!(s["tokens"]["reasoning"], 3 * per_request, "{effort}: {s}");
    }
}

#[test]
fn chat_reasoning_counts_the_same_way() {
    // Chat streams the reasoning as `delta.reasoning_content` and counts it in
    // `completion_tokens_details`; with ignore-eos (chat's default) the output is the budget.
    let (r, _) = run_sim_api(
        "chat",
        8,
        "reasoning-effort \"medium\"",
        r#"
dataset "d" { synthetic { input-tokens 16; output-tokens 20; } }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 4; }
"#,
    );
    let s = stage(&r, "s");
    assert_eq!(s["tokens"]["output"], 4 * 20, "{s}");
    assert_eq!(s["tokens"]["reasoning"], 4 * 8);
    let ttft = s["latency"]["ttft_ms"]["p50"].as_f64().unwrap();
    let ttfa = s["latency"]["ttfa_ms"]["p50"].as_f64().unwrap();
    assert!(ttfa > ttft, "{ttft} / {ttfa}");
}

/// Runs 3 requests one at a time against a server answering each with `events` (SSE events,
/// each `data:` a Responses event) in a chunked 200; the stage.
fn run_raw(events: &'static [&'static str]) -> serde_json::Value {
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        p.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n");
        for e in events {
            let chunk = format!("data: {e}\n\n");
            p.write(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
        }
        p.write(b"0\r\n\r\n");
        After::KeepAlive
    });
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
target "{}" {{ model "m"; api "responses"; timeout "20s"; }}
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

const CREATED: &str =
    r#"{"type":"response.created","sequence_number":0,"response":{"status":"in_progress"}}"#;
const DELTA: &str =
    r#"{"type":"response.output_text.delta","sequence_number":1,"delta":"hello there"}"#;
const DONE: &str = r#"{"type":"response.completed","sequence_number":2,"response":{"status":"completed","usage":{"input_tokens":20,"output_tokens":2}}}"#;

#[test]
fn broken_responses_streams_fail_as_what_they_are() {
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                CREATED,
                DELTA,
                r#"{"type":"response.output_text.delta","delta":"cut"#,
            ],
            "malformed",
        ),
        (
            &[
                CREATED,
                DELTA,
                r#"{"type":"response.output_text.delta","delta":7}"#,
                DONE,
            ],
            "malformed",
        ),
        (
            &[
                CREATED,
                DELTA,
                r#"{"type":"error","code":"overloaded","message":"try later"}"#,
            ],
            "stream_broken",
        ),
        (
            &[
                CREATED,
                r#"{"type":"response.failed","response":{"status":"failed","error":{"message":"x"}}}"#,
            ],
            "stream_broken",
        ),
        // No `response.completed`: the body ends mid-answer.
        (&[CREATED, DELTA], "stream_broken"),
    ];
    for (events, kind) in cases {
        let s = run_raw(events);
        assert_eq!(s["requests"]["failed"], 3, "{kind}: {}", s["requests"]);
        assert_eq!(
            s["requests"]["errors"],
            serde_json::json!({ kind: 3 }),
            "{events:?}"
        );
    }
}

#[test]
fn the_completed_event_ends_the_stream_and_usage_may_be_missing() {
    // Events after `response.completed` are never read, however broken.
    let s = run_raw(&[CREATED, DELTA, DONE, "{not json", r#"{"type":"error"}"#]);
    assert_eq!(s["requests"]["ok"], 3, "{}", s["requests"]);
    assert_eq!(s["tokens"]["output"], 6);
    assert_eq!(s["tokens"]["from_usage"], 3);
    // Without usage the output is counted from the streamed text; unknown events carry none.
    let s = run_raw(&[
        CREATED,
        r#"{"type":"response.something_new","delta":{"x":1}}"#,
        DELTA,
        r#"{"type":"response.completed","response":{"status":"completed"}}"#,
    ]);
    assert_eq!(s["requests"]["ok"], 3, "{}", s["requests"]);
    assert_eq!(s["tokens"]["from_tokenizer"], 3, "{}", s["tokens"]);
}
