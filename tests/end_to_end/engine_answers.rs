//! What real engines (and broken ones) answer, and what the run makes of it: a server that
//! closes every reused connection (llama-server) costs retries, not errors; a stream with no
//! generated content is `empty`; one endless SSE line or invalid UTF-8 is `malformed`; an
//! implausible `usage` count is flagged and replaced; without `usage`, llama.cpp's
//! `timings.predicted_n`, else the server's `/tokenize`, counts the output (the latter marked as
//! an estimate). Each server here is written for the test: a thread per connection on loopback.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use crate::support::*;

/// How the server answers a generation request.
#[derive(Clone, Copy)]
enum Mode {
    /// A normal stream, then closes each connection on its second request without answering.
    CloseReused,
    /// Headers, then `data: xxxx…` that never ends.
    Endless,
    /// A content chunk whose text is not UTF-8.
    InvalidUtf8,
    /// Only `data: [DONE]`.
    DoneOnly,
    /// Only a usage chunk with `choices: []`, then `[DONE]`.
    UsageOnly,
    /// Eight content chunks and `usage.completion_tokens` of 2^63.
    HugeUsage,
    /// Eight content chunks, no usage; `/tokenize` counts 3 per text.
    NoUsage,
    /// Eight content chunks, no usage, llama.cpp's `timings` with `predicted_n` 8.
    TimingsOnly,
}

/// Serves `mode` on an ephemeral loopback port; returns the API base URL and a counter of
/// `/tokenize` calls.
fn serve(mode: Mode) -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let tokenized = Arc::new(AtomicU64::new(0));
    let count = tokenized.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { continue };
            let count = count.clone();
            thread::spawn(move || connection(conn, mode, &count));
        }
    });
    (format!("http://{addr}/v1"), tokenized)
}

/// Reads one request: its request line and body; `None` at end of stream.
fn read_request(conn: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body).ok()?;
    Some((head.lines().next().unwrap_or("").to_string(), body))
}

fn respond(conn: &mut TcpStream, keep_alive: bool, ctype: &str, body: &[u8]) {
    let connection = if keep_alive {
        "keep-alive\r\nkeep-alive: timeout=5, max=100"
    } else {
        "close"
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: {connection}\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
}

fn chunk(text: &str) -> String {
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\n\n"
    )
}

/// Eight content chunks (`t0 ` … `t7 `).
fn eight() -> String {
    (0..8).map(|i| chunk(&format!("t{i} "))).collect()
}

fn connection(mut conn: TcpStream, mode: Mode, tokenized: &AtomicU64) {
    let mut served = 0;
    while let Some((line, _body)) = read_request(&mut conn) {
        if matches!(mode, Mode::CloseReused) && served > 0 {
            // A reused connection: closed under the request, no byte of answer.
            return;
        }
        served += 1;
        if line.starts_with("GET /v1/models") {
            respond(
                &mut conn,
                true,
                "application/json",
                br#"{"object":"list","data":[{"id":"m","object":"model"}]}"#,
            );
            continue;
        }
        if line.starts_with("POST /tokenize") {
            tokenized.fetch_add(1, Ordering::Relaxed);
            respond(
                &mut conn,
                true,
                "application/json",
                br#"{"tokens":[1,2,3]}"#,
            );
            continue;
        }
        let done = "data: [DONE]\n\n";
        let body = match mode {
            Mode::CloseReused => {
                let usage = r#"data: {"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":8}}"#;
                let body = format!("{}{usage}\n\n{done}", eight());
                respond(&mut conn, true, "text/event-stream", body.as_bytes());
                continue;
            }
            Mode::Endless => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: ";
                if conn.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let filler = vec![b'x'; 64 * 1024];
                // Until the client gives up and closes.
                while conn.write_all(&filler).is_ok() {}
                return;
            }
            Mode::InvalidUtf8 => {
                let mut b = chunk("fine").into_bytes();
                b.extend_from_slice(b"data: {\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\n");
                b.extend_from_slice(done.as_bytes());
                b
            }
            Mode::DoneOnly => done.as_bytes().to_vec(),
            Mode::UsageOnly => format!(
                "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":16,\"completion_tokens\":8}}}}\n\n{done}"
            )
            .into_bytes(),
            Mode::HugeUsage => format!(
                "{}data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":16,\"completion_tokens\":9223372036854775808}}}}\n\n{done}",
                eight()
            )
            .into_bytes(),
            Mode::NoUsage => format!("{}{done}", eight()).into_bytes(),
            Mode::TimingsOnly => format!(
                "{}data: {{\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"length\"}}],\"timings\":{{\"prompt_n\":16,\"prompt_ms\":2.5,\"predicted_n\":8,\"predicted_ms\":16.0}}}}\n\n{done}",
                eight()
            )
            .into_bytes(),
        };
        respond(&mut conn, false, "text/event-stream", &body);
        return;
    }
}

/// Runs `requests` requests against `base` (8 output tokens planned, `extra` lines in the
/// target block); the results and the run's output.
fn run_against(
    base: &str,
    requests: u32,
    target_extra: &str,
    sla: &str,
) -> (serde_json::Value, std::process::Output) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
scenario "answers" {{ seed 1; }}
target "{base}" {{
    model "m"
    timeout "20s"
    {target_extra}
}}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 8; }} }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=1
    requests {requests}
}}
{sla}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl"]);
    let r = results(&out);
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap_or_default();
    let mut r = r;
    r["rows"] = rows
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .collect();
    (r, o)
}

#[test]
fn a_server_that_closes_every_reused_connection_costs_retries_not_errors() {
    let (base, _) = serve(Mode::CloseReused);
    let (r, o) = run_against(&base, 20, "", "");
    // The engine probes (`/version`, `/props`, …) asked beside the preflight are on
    // connections of their own: none is reused, and closed, under the model lookup.
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let s = stage(&r, "s");
    assert_eq!(s["requests"]["failed"], 0, "{}", describe(&o));
    assert_eq!(s["requests"]["ok"], 20);
    // Every pooled connection has served one request (its warm-up) already, so each request
    // meets a closed one at least once.
    let retried = s["requests"]["retried"].as_u64().unwrap_or(0);
    assert!((1..=20).contains(&retried), "retried {retried}");
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(
        rows.iter().filter(|row| row["retries"] == 1).count() as u64,
        retried
    );
    let (stdout, _) = text(&o);
    assert!(stdout.contains("retried on a fresh connection"), "{stdout}");
}

#[test]
fn an_sse_line_that_never_ends_fails_as_malformed_and_the_run_ends() {
    let (base, _) = serve(Mode::Endless);
    let (r, o) = run_against(&base, 3, "max-event-size \"64KiB\"", "");
    let s = stage(&r, "s");
    assert_eq!(s["requests"]["errors"]["malformed"], 3, "{}", describe(&o));
}

#[test]
fn invalid_utf8_in_a_chunk_is_malformed_not_a_broken_stream() {
    let (base, _) = serve(Mode::InvalidUtf8);
    let (r, o) = run_against(&base, 2, "", "");
    let s = stage(&r, "s");
    assert_eq!(s["requests"]["errors"]["malformed"], 2, "{}", describe(&o));
    assert!(s["requests"]["errors"].get("stream_broken").is_none());
}

#[test]
fn a_stream_without_generated_content_is_empty_not_ok() {
    for mode in [Mode::DoneOnly, Mode::UsageOnly] {
        let (base, _) = serve(mode);
        let (r, o) = run_against(&base, 3, "", "");
        let s = stage(&r, "s");
        assert_eq!(s["requests"]["ok"], 0, "{}", describe(&o));
        assert_eq!(s["requests"]["errors"]["empty"], 3);
        assert_eq!(s["throughput"]["goodput_ratio"], 0.0);
        // Nothing measured: the run fails, and says why.
        assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
        assert_eq!(s["validity"]["trusted"], false);
    }
}

#[test]
fn an_implausible_completion_count_is_flagged_and_replaced() {
    let (base, _) = serve(Mode::HugeUsage);
    let (r, o) = run_against(&base, 4, "", r#"sla { assert "tpot.p50 < 1000ms"; }"#);
    let s = stage(&r, "s");
    assert_eq!(s["requests"]["ok"], 4, "{}", describe(&o));
    assert_eq!(s["tokens"]["implausible"], 4);
    assert_eq!(s["validity"]["trusted"], false);
    let reasons = s["validity"]["reasons"].to_string();
    assert!(reasons.contains("implausible"), "{reasons}");
    // Replaced by an estimate from the text (the server's /tokenize says 3), far from 2^63.
    let output = s["tokens"]["output"].as_u64().unwrap();
    assert!(output > 0 && output < 1000, "output tokens {output}");
    assert!(s["latency"]["tpot_ms"]["count"].as_u64().unwrap() > 0);
    assert!(s["throughput"]["output_tokens_per_s"].as_f64().unwrap() < 1e6);
    assert_eq!(r["rows"][0]["implausible_usage"], true);
}

#[test]
fn without_usage_the_servers_own_counts_come_first_and_estimates_say_so() {
    // llama.cpp's timings count exactly.
    let (base, tokenized) = serve(Mode::TimingsOnly);
    let (r, o) = run_against(&base, 3, "", "");
    let s = stage(&r, "s");
    assert_eq!(s["tokens"]["from_timings"], 3, "{}", describe(&o));
    assert_eq!(s["tokens"]["output"], 24);
    assert!(s["tokens"].get("estimated").is_none());
    // Only the preflight's tokenizer check (its dialect probe, then the first prompt): no
    // response's count.
    assert_eq!(tokenized.load(Ordering::Relaxed), 2);
    assert_eq!(s["attribution"]["source"], "timings");
    assert_eq!(s["attribution"]["server_ttft_ms"]["count"], 3);

    // Else the server's /tokenize, marked as an estimate (in the stage and in the verdict).
    let (base, tokenized) = serve(Mode::NoUsage);
    let (r, o) = run_against(&base, 3, "", r#"sla { assert "tpot.p50 < 1000ms"; }"#);
    let s = stage(&r, "s");
    assert_eq!(s["tokens"]["from_tokenize"], 3, "{}", describe(&o));
    assert_eq!(s["tokens"]["estimated"], 3);
    assert_eq!(
        s["tokens"]["output"], 9,
        "3 per response, as the server counts"
    );
    // The preflight's probe of the dialect and its count of the first prompt, then one call
    // per response.
    assert_eq!(tokenized.load(Ordering::Relaxed), 2 + 3);
    let notes = s["notes"].to_string();
    assert!(notes.contains("estimates"), "{notes}");
    let note = r["sla"][0]["note"].as_str().unwrap_or_default();
    assert!(note.contains("estimates"), "{note}");
    assert_eq!(r["rows"][0]["token_source"], "tokenize");
}

#[test]
fn a_query_in_the_target_url_stays_after_every_path() {
    // Azure OpenAI's `?api-version=…`: the API's paths go before it, on every request.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let seen = seen.clone();
            thread::spawn(move || {
                while let Some((line, _)) = read_request(&mut conn) {
                    seen.lock().unwrap().push(line.clone());
                    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                    if path == "/v1/models?api-version=2024-10-21" {
                        respond(
                            &mut conn,
                            true,
                            "application/json",
                            br#"{"object":"list","data":[{"id":"m","object":"model"}]}"#,
                        );
                    } else if path == "/v1/chat/completions?api-version=2024-10-21" {
                        let usage = r#"data: {"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":8}}"#;
                        let body = format!("{}{usage}\n\ndata: [DONE]\n\n", eight());
                        respond(&mut conn, true, "text/event-stream", body.as_bytes());
                    } else {
                        let _ = conn.write_all(
                            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: keep-alive\r\n\r\n",
                        );
                    }
                }
            });
        }
    });
    let base = format!("http://{addr}/v1?api-version=2024-10-21");
    let (r, o) = run_against(&base, 4, "", "");
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let s = stage(&r, "s");
    assert_eq!(s["requests"]["ok"], 4, "{}", describe(&o));
    let lines = lines.lock().unwrap();
    let chats = lines
        .iter()
        .filter(|l| l.starts_with("POST /v1/chat/completions?api-version=2024-10-21 "))
        .count();
    assert_eq!(chats, 4, "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("GET /v1/models?api-version=2024-10-21 ")),
        "{lines:?}"
    );
}
