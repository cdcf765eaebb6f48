//! Sessions the server keeps (`session state="previous-response-id"`, the Responses API)
//! through the real binary: against the simulator in its own process (its response store's
//! counters on `/metrics`), against a Responses server written for the test that records
//! every body, against one whose ids are missing, huge or full of control characters, and
//! against a store too small to keep the conversations.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::scrape::metrics;
use crate::support::*;

/// `GET /metrics` of a simulator: its counters by name (the response store's among them).
fn store_metrics(base_url: &str) -> BTreeMap<String, f64> {
    metrics(base_url, "infermeter_sim_")
}

/// Runs `sessions` three-turn sessions (2 at a time) against `base_url` in `state`; the
/// stage, the request rows and the run's output.
fn run_sessions(base_url: &str, state: &str, sessions: u32) -> (Value, Vec<Value>, Output) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
scenario "kept" {{ seed 3 }}
target "{base_url}" {{ model "infermeter-sim"; api "responses"; timeout "20s"; }}
dataset "chat" {{
    synthetic {{ input-tokens 48; output-tokens 8; }}
    session turns=3 state="{state}"
}}
stage "s" {{ dataset "chat"; arrival "concurrency" clients=2; requests {sessions}; }}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl", "--untrusted", "judge"]);
    let rows = std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let stage = stage(&results(&out), "s").clone();
    (stage, rows, o)
}

use std::process::Output;

fn sim() -> SimProcess {
    SimProcess::start(&[
        "--decode-base",
        "1ms",
        "--output-len-dist",
        "fixed",
        "--output-len-mean",
        "8",
        "--prefix-cache",
    ])
}

fn per_turn(stage: &Value, key: &str) -> Vec<f64> {
    stage["per_turn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[key].as_f64().unwrap_or(f64::NAN))
        .collect()
}

#[test]
fn the_server_keeps_the_conversation_and_processes_what_a_resent_one_would() {
    let (resend_sim, kept_sim) = (sim(), sim());
    let (resend, _, o) = run_sessions(&resend_sim.base_url, "resend", 4);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (kept, rows, o) = run_sessions(&kept_sim.base_url, "previous-response-id", 4);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(kept["requests"]["ok"], 12, "{}", kept["requests"]);

    // The server processed the same conversation either way, turn by turn...
    let processed = per_turn(&kept, "mean_input_tokens");
    assert_eq!(processed, per_turn(&resend, "mean_input_tokens"));
    assert!(
        processed[0] < processed[1] && processed[1] < processed[2],
        "{processed:?}"
    );
    // ...while a later turn sent only its new message: the same bytes every turn, where a
    // resent history grows.
    // (The server counts the chat template's tokens on top of the text sent.)
    let sent = per_turn(&kept, "mean_sent_input_tokens");
    assert_eq!(sent, vec![48.0; 3]);
    let (bytes, resent_bytes) = (
        per_turn(&kept, "mean_request_bytes"),
        per_turn(&resend, "mean_request_bytes"),
    );
    assert!(
        bytes[2] < resent_bytes[2] / 2.0,
        "{bytes:?} / {resent_bytes:?}"
    );
    assert!(
        resend["per_turn"][1]
            .get("mean_sent_input_tokens")
            .is_none()
    );
    // The prefix cache served the stored conversation as it serves a resent one.
    let cached = per_turn(&kept, "cached_share");
    assert!(cached[2] > 0.5, "{cached:?}");
    assert_eq!(cached, per_turn(&resend, "cached_share"));
    for r in &rows {
        assert_eq!(r["token_mismatch"], false, "{r}");
        assert!(r["sent_input_tokens"].as_u64().unwrap() <= r["input_tokens"].as_u64().unwrap());
    }

    // Every turn was stored; the two later turns of each session named their predecessor.
    let m = store_metrics(&kept_sim.base_url);
    assert_eq!(m["infermeter_sim_responses_stored_total"], 12.0, "{m:?}");
    assert_eq!(
        m["infermeter_sim_previous_response_hits_total"], 8.0,
        "{m:?}"
    );
    assert_eq!(
        m["infermeter_sim_previous_response_misses_total"], 0.0,
        "{m:?}"
    );
    assert!(
        m["infermeter_sim_previous_response_tokens_total"] > 8.0 * 48.0,
        "{m:?}"
    );
    // A resent session stores nothing and names nothing.
    let m = store_metrics(&resend_sim.base_url);
    assert_eq!(m["infermeter_sim_responses_stored_total"], 0.0, "{m:?}");
    assert_eq!(
        m["infermeter_sim_previous_response_hits_total"], 0.0,
        "{m:?}"
    );
}

#[test]
fn a_store_that_keeps_nothing_answers_404_and_the_session_ends_there() {
    // A store of 0 keeps no response, so every second turn names one the simulator does not
    // hold, whatever the timing (eviction order itself: tests/simulator/sim_response_store.rs).
    let none = SimProcess::start(&["--decode-base", "1ms", "--response-store", "0"]);
    let (stage, _, o) = run_sessions(&none.base_url, "previous-response-id", 2);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let m = store_metrics(&none.base_url);
    assert_eq!(
        m["infermeter_sim_previous_response_misses_total"], 2.0,
        "{m:?}"
    );
    assert_eq!(
        m["infermeter_sim_previous_response_hits_total"], 0.0,
        "{m:?}"
    );
    let r = &stage["requests"];
    assert_eq!(r["errors"]["http_404"], 2, "{r}");
    // A failed turn ends its session: each session sent its first turn and the one that
    // failed, never a third.
    assert_eq!(
        (r["sent"].as_u64(), r["ok"].as_u64()),
        (Some(4), Some(2)),
        "{r}"
    );
}

/// The id a test server gives its `n`-th response (`None`: none).
type IdOf = fn(usize) -> Option<String>;

/// A Responses server answering every request with a stream whose response id is `id(n)`
/// (`None`: no id) for the `n`-th request, keeping every body it was sent.
fn responses_server(id: IdOf) -> (RawServer, Arc<Mutex<Vec<Value>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        let body: Value = serde_json::from_str(&p.body()).unwrap_or(Value::Null);
        kept.lock().unwrap().push(body);
        let id = match id(p.n) {
            Some(id) => format!(r#""id":{},"#, serde_json::to_string(&id).unwrap()),
            None => String::new(),
        };
        let events = [
            format!(r#"{{"type":"response.created","response":{{{id}"status":"in_progress"}}}}"#),
            r#"{"type":"response.output_text.delta","delta":" the answer"}"#.to_string(),
            format!(
                r#"{{"type":"response.completed","response":{{{id}"status":"completed","usage":{{"input_tokens":20,"output_tokens":2}}}}}}"#
            ),
        ];
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

/// One three-turn session, against `server`: the stage and the run's stderr.
fn one_session(server: &RawServer) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{}" {{ model "m"; api "responses"; timeout "20s"; }}
dataset "d" {{
    synthetic {{ input-tokens 16; output-tokens 8; }}
    session turns=3 state="previous-response-id"
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 1; }}
"#,
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = command()
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .args(["--untrusted", "judge", "--no-plots"])
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let (stdout, stderr) = text(&o);
    (
        stage(&results(&out), "s").clone(),
        format!("{stdout}{stderr}"),
    )
}

#[test]
fn later_turns_send_only_the_new_message_and_the_previous_id() {
    let (server, bodies) = responses_server(|n| Some(format!("resp_{n}")));
    let (stage, _) = one_session(&server);
    assert_eq!(stage["requests"]["ok"], 3, "{}", stage["requests"]);
    let bodies = bodies.lock().unwrap();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["store"], true);
    assert!(
        bodies[0].get("previous_response_id").is_none(),
        "{}",
        bodies[0]
    );
    for (k, body) in bodies.iter().enumerate().skip(1) {
        assert_eq!(body["store"], true, "{body}");
        assert_eq!(body["previous_response_id"], format!("resp_{k}"), "{body}");
        // Only the new user message: none of the earlier turns, none of the replies.
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 1, "{body}");
        assert_eq!(input[0]["role"], "user");
        assert!(!body.to_string().contains("the answer"), "{body}");
        assert_ne!(input[0]["content"], bodies[0]["input"][0]["content"]);
    }
}

#[test]
fn an_unusable_id_fails_its_turn_clearly_and_ends_the_session() {
    let cases: [(IdOf, &str); 3] = [
        (|_| None, "response_id_missing"),
        (|_| Some("x".repeat(10 * 1024)), "response_id_too_long"),
        (
            |_| Some("resp_\u{1b}[2J\u{7}".into()),
            "response_id_unprintable",
        ),
    ];
    for (id, says) in cases {
        let (server, bodies) = responses_server(id);
        let (stage, printed) = one_session(&server);
        // The first turn's answer came, but there is nothing to continue from: it fails as
        // `response_id_…` and no later turn is sent.
        assert_eq!(
            stage["requests"]["sent"], 1,
            "{says}: {}",
            stage["requests"]
        );
        assert_eq!(
            stage["requests"]["errors"],
            serde_json::json!({ says: 1 }),
            "{says}"
        );
        assert_eq!(bodies.lock().unwrap().len(), 1, "{says}");
        assert!(printed.contains(&format!("{says}: 1")), "{says}: {printed}");
        assert!(
            printed.contains("previous_response_id"),
            "the why: {printed}"
        );
        // The id itself is never echoed.
        assert!(!printed.contains(&"x".repeat(300)), "{says}");
        assert!(
            !printed.contains('\u{7}') && !printed.contains("\u{1b}[2J"),
            "{says}"
        );
    }
}

#[test]
fn the_state_is_refused_on_an_api_without_previous_response_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        r#"
target "sim" { api "chat"; }
dataset "d" {
    synthetic { input-tokens 16; output-tokens 8; }
    session turns=3 state="previous-response-id"
}
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 1; }
"#,
    );
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_ne!(o.status.code(), Some(0), "{}", describe(&o));
    let (out, err) = text(&o);
    let all = format!("{out}{err}");
    assert!(all.contains("needs the Responses API"), "{all}");
    assert!(all.contains("s.kdl:5:"), "file:line: {all}");
    assert!(all.contains("api \"responses\""), "the fix: {all}");
}
