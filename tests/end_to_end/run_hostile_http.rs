//! The real binary against servers that break HTTP/1.1: answers it cannot read are counted as
//! `protocol` (not `connect`: a connection was made), an empty answer with stray bytes behind
//! it does not shift every later answer by one, and an early `413` to a large body is recorded
//! as such, with one `POST` per request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::support::raw_server::{After, Post, RawServer, ok_response};
use crate::support::*;

/// Runs `requests` requests one at a time against `base` (8 output tokens each, dataset
/// `dataset`); the stage's results.
fn run_against(base: &str, requests: u32, dataset: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
target "{base}" {{ model "m"; timeout "20s"; }}
dataset "d" {{ {dataset} }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=1
    requests {requests}
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    // 1 when every request failed (the default gate holds the error rate under 100 %).
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    stage(&results(&out), "s")["requests"].clone()
}

const SYNTHETIC: &str = "synthetic { input-tokens 16; output-tokens 8; }";

#[test]
fn answers_the_client_cannot_read_are_protocol_errors_not_connect() {
    let bad: Vec<Vec<u8>> = vec![
        format!("HTTP/1.1 200 OK\r\nx: {}\r\n\r\n", "a".repeat(1 << 20)).into_bytes(),
        format!(
            "HTTP/1.1 200 OK\r\n{}\r\n",
            (0..10_000)
                .map(|i| format!("x-{i}: 1\r\n"))
                .collect::<String>()
        )
        .into_bytes(),
        b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64".to_vec(),
        "HTTP/1.1 100 Continue\r\n\r\n".repeat(50_000).into_bytes(),
        b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\nabcd".to_vec(),
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1\r2\nx\r\n0\r\n\r\n".to_vec(),
    ];
    let n = bad.len();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        p.write(&bad[(p.n - 1) % bad.len()]);
        After::Close
    });
    let req = run_against(&server.base_url, n as u32, SYNTHETIC);
    assert_eq!(req["failed"], n, "{req}");
    assert_eq!(req["errors"], serde_json::json!({ "protocol": n }), "{req}");
    assert_eq!(server.posts(), n, "each sent once");
}

#[test]
fn stray_bytes_after_a_304_do_not_shift_later_answers() {
    // The first answer is a 304 with a whole fake answer a moment behind it; a request sent
    // on that connection afterwards would read the fake as its own, and every later request
    // its predecessor's answer.
    let dirty = Arc::new(AtomicUsize::new(0));
    let reused_dirty = Arc::new(AtomicBool::new(false));
    let (d, r) = (dirty.clone(), reused_dirty.clone());
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        if p.connection == d.load(Ordering::SeqCst) {
            r.store(true, Ordering::SeqCst);
        }
        if p.n == 1 {
            d.store(p.connection, Ordering::SeqCst);
            p.write(b"HTTP/1.1 304 Not Modified\r\n\r\n");
            std::thread::sleep(Duration::from_millis(30));
            p.write(&ok_response("stray ", 1));
        } else {
            p.write(&ok_response("t ", 8));
        }
        After::KeepAlive
    });
    let req = run_against(&server.base_url, 6, SYNTHETIC);
    assert_eq!(req["errors"], serde_json::json!({ "http_304": 1 }), "{req}");
    assert_eq!(req["ok"], 5, "{req}");
    assert!(
        !reused_dirty.load(Ordering::SeqCst),
        "a request was sent on the connection that carried the 304"
    );
    assert_eq!(server.posts(), 6);
}

#[test]
fn an_early_413_is_recorded_and_each_request_posted_once() {
    // A prompt far larger than the sockets' buffers; the server answers 413 after the head
    // and closes without reading the body.
    let dir = tempfile::tempdir().unwrap();
    let prompt = "word ".repeat(2 << 20);
    let line = serde_json::json!({ "prompt": prompt, "max_tokens": 8 }).to_string();
    std::fs::write(dir.path().join("big.jsonl"), format!("{line}\n{line}\n")).unwrap();
    let server = RawServer::start(true, |p: &mut Post<'_>| {
        p.write(
            b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        );
        After::Close
    });
    let jsonl = dir.path().join("big.jsonl");
    let dataset = format!("jsonl \"{}\"", jsonl.display());
    let req = run_against(&server.base_url, 2, &dataset);
    assert_eq!(req["errors"], serde_json::json!({ "http_413": 2 }), "{req}");
    assert_eq!(server.posts(), 2, "one POST per request");
    assert!(req.get("retried").is_none_or(|r| r == 0), "{req}");
}
