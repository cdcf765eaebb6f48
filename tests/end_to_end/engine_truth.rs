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
    against_with(server, 32, target_extra, stage_extra)
}

fn against_with(server: &RawServer, input: u32, target_extra: &str, stage_extra: &str) -> String {
    format!(
        r#"
scenario "truth" {{ seed 3; }}
target "{}" {{
    model "m"
    {target_extra}
}}
dataset "d" {{ synthetic {{ input-tokens {input}; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; {stage_extra} }}
"#,
        server.base_url
    )
}

fn run_against(text: &str) -> (serde_json::Value, std::process::Output) {
    let (r, o, _) = run_report(text);
    (r, o)
}

/// Also returns `report.md`.
fn run_report(text: &str) -> (serde_json::Value, std::process::Output, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    let r = try_results(&out).unwrap_or(serde_json::Value::Null);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap_or_default();
    (r, o, md)
}

/// One chat chunk of the stream.
fn chunk(delta: &str, tail: &str) -> String {
    format!(
        "data: {{\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
         \"delta\":{delta}}}]{tail}}}\n\n"
    )
}

/// A whole `200` chat stream that says "hi" four times and sends no usage (as
/// llama-cpp-python, and llama-server without `stream_options`), its last chunk carrying
/// `last_tail` (e.g. llama.cpp's `timings`).
fn no_usage_stream(last_tail: &str) -> Vec<u8> {
    let mut body = chunk(r#"{"role":"assistant","content":null}"#, "");
    for _ in 0..4 {
        body.push_str(&chunk(r#"{"content":"hi "}"#, ""));
    }
    body.push_str(&format!(
        "data: {{\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
         \"delta\":{{}},\"finish_reason\":\"length\"}}]{last_tail}}}\n\ndata: [DONE]\n\n"
    ));
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A llama.cpp-style `/tokenize` answer (`{"tokens": [...]}`) counting `factor` tokens per
/// word of the request's `content` (our synthetic prompts are one cl100k token a word).
fn tokenize_answer(p: &mut Post<'_>, factor: usize) -> After {
    let req: serde_json::Value = serde_json::from_str(&p.body()).unwrap_or_default();
    let words = req["content"]
        .as_str()
        .or(req["prompt"].as_str())
        .map_or(0, |t| t.split_whitespace().count());
    let ids = vec!["1"; words * factor].join(",");
    p.json(&format!(r#"{{"tokens":[{ids}]}}"#))
}

/// Answers `POST /reset_prefix_cache` as vLLM does: `{"success": false}` for the first
/// `declines` tries (requests still running), then `{"success": true}`; chat with a stream.
fn vllm_like(declines: usize) -> (RawServer, Arc<AtomicUsize>) {
    let resets = Arc::new(AtomicUsize::new(0));
    let seen = resets.clone();
    let server = RawServer::engine(move |p: &mut Post<'_>| {
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

#[test]
fn a_server_tokenizer_that_counts_otherwise_is_named_at_the_preflight() {
    // The server counts two tokens a word where cl100k counts one: a llama model's tokenizer
    // against the default, which once left both stages of real-engine.kdl untrusted (exit 4).
    let server = RawServer::engine(|p: &mut Post<'_>| {
        if p.path() == "/tokenize" {
            return tokenize_answer(p, 2);
        }
        p.read_body();
        p.write(&ok_response("hi", 4));
        After::KeepAlive
    });
    let (r, o) = run_against(&against(&server, "", ""));
    let (_, stderr) = text(&o);
    let said = "the server's /tokenize counts the first prompt as 64 tokens where the \
                scenario's tokenizer `cl100k_base` counts 32";
    assert!(stderr.contains(said), "{stderr}");
    assert!(
        stderr.contains("tokenizer \"path/to/tokenizer.json\""),
        "{stderr}"
    );
    let notes = stage(&r, "s")["notes"].to_string();
    assert!(
        notes.contains("counts the first prompt as 64 tokens"),
        "{notes}"
    );

    // The same count: nothing said.
    let agreeing = RawServer::engine(|p: &mut Post<'_>| {
        if p.path() == "/tokenize" {
            return tokenize_answer(p, 1);
        }
        p.read_body();
        p.write(&ok_response("hi", 4));
        After::KeepAlive
    });
    let (r, o) = run_against(&against(&agreeing, "", ""));
    let (_, stderr) = text(&o);
    assert!(!stderr.contains("/tokenize"), "{stderr}");
    assert!(!stage(&r, "s")["notes"].to_string().contains("/tokenize"));
}

#[test]
fn without_usage_the_prompt_count_comes_from_llama_cpp_timings() {
    // llama.cpp's templated count: 139 tokens for 128 planned; 4 generated, 2 of them cached.
    let server = RawServer::engine(|p: &mut Post<'_>| {
        p.read_body();
        if !p.path().starts_with("/v1/") {
            p.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
            return After::KeepAlive;
        }
        let timings = r#","timings":{"cache_n":2,"prompt_n":137,"prompt_ms":24.6,"predicted_n":4,"predicted_ms":12.3}"#;
        p.write(&no_usage_stream(timings));
        After::KeepAlive
    });
    let (r, o) = run_against(&against_with(&server, 128, "", ""));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let t = &stage(&r, "s")["tokens"];
    assert_eq!(t["input"], 3 * 139, "{t}");
    assert_eq!(t["from_timings"], 3, "{t}");
    assert_eq!(t["cached"], 3 * 2, "{t}");
    assert!(t.get("estimated").is_none(), "{t}");
    assert_eq!(
        t["mismatched"], 0,
        "within the chat template's allowance: {t}"
    );
}

#[test]
fn an_output_count_estimated_by_re_tokenizing_is_marked_where_tpot_is_shown() {
    // No usage, no timings: the server's /tokenize counts the streamed text.
    let tokenized = Arc::new(AtomicUsize::new(0));
    let seen = tokenized.clone();
    let server = RawServer::engine(move |p: &mut Post<'_>| {
        if p.path() == "/tokenize" {
            seen.fetch_add(1, Ordering::SeqCst);
            return tokenize_answer(p, 1);
        }
        p.read_body();
        p.write(&no_usage_stream(""));
        After::KeepAlive
    });
    let (r, o, md) = run_report(&against(&server, "", ""));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let s = stage(&r, "s");
    let t = &s["tokens"];
    assert_eq!(
        t["from_tokenize"], 3,
        "the server's own tokenizer first: {t}"
    );
    assert_eq!(t["output"], 3 * 4, "{t}");
    assert_eq!(t["estimated"], 3, "{t}");
    assert_eq!(t["tpot_estimated"], 3, "{t}");
    assert_eq!(s["latency"]["tpot_ms"]["count"], 3);
    // The preflight's probe and count, then one count per request.
    assert!(tokenized.load(Ordering::SeqCst) > 3);
    assert!(md.contains("TPOT (estimated for 3 of 3)"), "{md}");
    assert!(md.contains("3 estimated by the server's /tokenize"), "{md}");
}

#[test]
fn a_tokenize_answer_without_end_is_not_read_whole() {
    // 9 MiB of token ids for a 32-token prompt: not an answer; the run goes on without it.
    let server = RawServer::engine(|p: &mut Post<'_>| {
        if p.path() == "/tokenize" {
            p.read_body();
            let ids = "1,".repeat(9 << 19);
            return p.json(&format!(r#"{{"tokens":[{ids}1]}}"#));
        }
        p.read_body();
        p.write(&ok_response("hi", 4));
        After::KeepAlive
    });
    let (r, o) = run_against(&against(&server, "", ""));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(!stderr.contains("/tokenize"), "{stderr}");
    assert_eq!(stage(&r, "s")["requests"]["ok"], 3);
}
