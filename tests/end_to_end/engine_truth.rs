//! What real engines showed (issue 27, item 8), against servers written for the test that
//! answer as vLLM and llama.cpp did: a prompt-cache reset the server declines while requests
//! run on it is asked again and never taken as done, and the counts a server gives in its
//! own ways (llama.cpp's `timings`, `/tokenize`) are used and marked for what they are.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::raw_server::{After, Post, RawServer, ok_response};
use crate::support::*;

/// A stage of three chat requests against `server`, with `target_extra` in its target.
fn against(server: &RawServer, target_extra: &str, stage_extra: &str) -> String {
    format!(
        r#"
scenario "truth" {{ seed 3; }}
target "{}" {{
    model "m"
    {target_extra}
}}
dataset "d" {{ synthetic {{ input-tokens 32; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; {stage_extra} }}
"#,
        server.base_url
    )
}

fn run_against(text: &str) -> (serde_json::Value, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    let r = try_results(&out).unwrap_or(serde_json::Value::Null);
    (r, o)
}

/// Answers `POST /reset_prefix_cache` as vLLM does: `{"success": false}` for the first
/// `declines` tries (requests still running), then `{"success": true}`; chat with a stream.
fn vllm_like(declines: usize) -> (RawServer, Arc<AtomicUsize>) {
    let resets = Arc::new(AtomicUsize::new(0));
    let seen = resets.clone();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        if p.path() == "/reset_prefix_cache" {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            return p.json(&format!(r#"{{"success": {}}}"#, n >= declines));
        }
        p.write(&ok_response("hi", 4));
        After::KeepAlive
    });
    (server, resets)
}

#[test]
fn a_declined_cache_reset_is_asked_again_until_the_server_drains() {
    let (server, resets) = vllm_like(2);
    let (r, o) = run_against(&against(&server, r#"reset-cache "vllm""#, ""));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(resets.load(Ordering::SeqCst), 3, "two declines, then done");
    let notes = stage(&r, "s")["notes"].to_string();
    assert!(notes.contains("accepted on try 3"), "{notes}");
    assert!(!notes.contains("NOT dropped"), "{notes}");
    let (_, stderr) = text(&o);
    assert!(!stderr.contains("reset-cache"), "{stderr}");
}

#[test]
fn a_reset_the_server_keeps_declining_is_reported_as_failed() {
    // `{"success": false}` forever: once taken as done (the stage then ran 75 % cached).
    let (server, resets) = vllm_like(usize::MAX);
    let (r, o) = run_against(&against(
        &server,
        r#"reset-cache "auto""#,
        r#"drain-timeout "1s";"#,
    ));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        resets.load(Ordering::SeqCst) >= 2,
        "asked again before giving up"
    );
    let notes = stage(&r, "s")["notes"].to_string();
    assert!(notes.contains("NOT dropped"), "{notes}");
    assert!(
        notes.contains(r#"answered {\"success\": false}"#),
        "{notes}"
    );
    assert!(!notes.contains("asked the server to drop"), "{notes}");
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains("reset-cache \"auto\" before `s`: the server declined"),
        "{stderr}"
    );
}
