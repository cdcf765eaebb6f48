//! The streaming client against what real servers send: responses captured from llama.cpp's
//! `llama-server` and from `llama-cpp-python` (tests/data/*.sse), replayed event by event with
//! a pause between events, over real HTTP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use infermeter_core::client::{Client, ClientConfig, TokenCounter};
use infermeter_core::metrics::{
    ErrorKind, FinishReason, RequestRecord, ServerTimings, TokenSource,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Counts words, so the fallback count is predictable in the test.
struct Words;

impl TokenCounter for Words {
    fn count(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

const GAP: Duration = Duration::from_millis(15);

/// Serves `body` (SSE events separated by blank lines) once per connection, pausing `GAP`
/// between events, then closes the connection. Returns the base URL.
async fn replay(body: &'static str, status: u16) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let _ = sock.set_nodelay(true);
            tokio::spawn(async move {
                // Read the request head and its body (content-length) before answering.
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = sock.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf);
                    if let Some(head_end) = text.find("\r\n\r\n") {
                        let len = text[..head_end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if buf.len() >= head_end + 4 + len {
                            break;
                        }
                    }
                }
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                );
                let _ = sock.write_all(head.as_bytes()).await;
                for event in body.split("\n\n").filter(|e| !e.trim().is_empty()) {
                    let _ = sock.write_all(format!("{event}\n\n").as_bytes()).await;
                    tokio::time::sleep(GAP).await;
                }
                let _ = sock.shutdown().await;
            });
        }
    });
    format!("http://{addr}/v1/chat/completions")
}

async fn execute(url: String, planned_input: u32) -> RequestRecord {
    execute_text(url, planned_input).await.0
}

/// The record and the response text (what `validate` hooks see).
async fn execute_text(url: String, planned_input: u32) -> (RequestRecord, String) {
    let client = Client::new(
        ClientConfig {
            timeout: Duration::from_secs(10),
            pool_size: 1,
            ..ClientConfig::new(url)
        },
        Arc::new(Words),
    )
    .unwrap();
    let mut rec = RequestRecord {
        input_tokens: planned_input,
        ..RequestRecord::default()
    };
    let t0 = Instant::now();
    let text = client
        .execute_text(bytes::Bytes::from_static(b"{}"), 16, &mut rec, t0)
        .await;
    (rec, text)
}

/// Chunks in a transcript that carry generated text.
fn content_chunks(body: &str) -> usize {
    body.split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter(|d| {
            let v: serde_json::Value = serde_json::from_str(d).unwrap();
            let c = &v["choices"][0];
            [&c["delta"]["content"], &c["text"]]
                .iter()
                .any(|t| t.as_str().is_some_and(|s| !s.is_empty()))
        })
        .count()
}

#[tokio::test]
async fn llama_server_chat_with_usage_in_an_empty_choices_chunk() {
    const BODY: &str = include_str!("../data/llama-server-chat-stream-usage.sse");
    let rec = execute(replay(BODY, 200).await, 23).await;
    assert_eq!(rec.error, None);
    let n = content_chunks(BODY);
    assert_eq!(rec.chunks as usize, n);
    // The role-only first chunk arrives one gap before the first content chunk: TTFT must
    // not start there.
    let first = rec.first_token_ns.unwrap();
    assert!(first >= GAP.as_nanos() as u64, "first token at {first} ns");
    assert_eq!(rec.itl_us.len(), n - 1);
    // Every gap is a sample, each about one pause long.
    let median = {
        let mut v = rec.itl_us.clone();
        v.sort();
        v[v.len() / 2]
    };
    assert!((10_000..60_000).contains(&median), "median ITL {median} µs");
    assert_eq!(rec.token_source, TokenSource::Usage);
    assert_eq!(rec.output_tokens, 8);
    assert_eq!(rec.input_tokens, 23);
    assert!(!rec.token_mismatch);
    // What llama-server adds: cached prompt tokens, the reason it stopped, its own timings.
    assert_eq!(rec.cached_tokens, Some(0));
    assert_eq!(rec.finish_reason, Some(FinishReason::Length));
    assert_eq!(
        rec.server_timings,
        Some(ServerTimings {
            prompt_n: Some(23),
            prompt_ms: Some(24.63),
            predicted_n: Some(8),
            predicted_ms: Some(30.963),
            cache_n: Some(0),
            ..ServerTimings::default()
        })
    );
}

#[tokio::test]
async fn llama_cpp_python_without_usage_falls_back_to_the_tokenizer() {
    const BODY: &str = include_str!("../data/llama-cpp-python-chat-stream.sse");
    let rec = execute(replay(BODY, 200).await, 10).await;
    assert_eq!(rec.error, None);
    assert_eq!(rec.token_source, TokenSource::Tokenizer);
    // The last chunk (an empty delta with finish_reason) is not a token.
    assert_eq!(rec.chunks as usize, content_chunks(BODY));
    let text: String = BODY
        .split("\n\n")
        .filter_map(|e| e.trim().strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| {
            let v: serde_json::Value = serde_json::from_str(d).ok()?;
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(String::from)
        })
        .collect();
    assert_eq!(rec.output_tokens as usize, Words.count(&text));
    assert_eq!(
        rec.input_tokens, 10,
        "the planned count stands without usage"
    );
    assert_eq!(rec.cached_tokens, None);
    assert_eq!(rec.finish_reason, Some(FinishReason::Length));
    assert_eq!(rec.server_timings, None);
}

#[tokio::test]
async fn llama_server_completions_text_chunks() {
    const BODY: &str = include_str!("../data/llama-server-completions-stream.sse");
    let rec = execute(replay(BODY, 200).await, 7).await;
    assert_eq!(rec.error, None);
    assert_eq!(rec.chunks as usize, content_chunks(BODY));
    assert_eq!(rec.output_tokens, 6);
    assert_eq!(rec.token_source, TokenSource::Usage);
    assert_eq!(rec.cached_tokens, Some(1));
    assert_eq!(rec.finish_reason, Some(FinishReason::Length));
    assert_eq!(rec.server_timings.and_then(|t| t.cache_n), Some(1));
}

#[tokio::test]
async fn a_stream_without_done_is_broken_and_an_error_status_is_counted() {
    const CUT: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
    let rec = execute(replay(CUT, 200).await, 1).await;
    assert_eq!(rec.error, Some(ErrorKind::StreamBroken));
    assert_eq!(rec.chunks, 1, "what arrived before the cut is kept");
    let rec = execute(replay("", 503).await, 1).await;
    assert_eq!(rec.error, Some(ErrorKind::Http(503)));
    assert_eq!(rec.status, Some(503));
    const GARBAGE: &str = "data: {not json\n\n";
    let rec = execute(replay(GARBAGE, 200).await, 1).await;
    assert_eq!(rec.error, Some(ErrorKind::Malformed));
}

#[tokio::test]
async fn keep_alives_comments_empty_data_and_crlf_are_not_chunks() {
    // What proxies and some servers put between chunks: SSE comments, `event:`-only blocks,
    // an empty `data:`; plus a field without the optional space and CRLF line ends.
    const BODY: &str = concat!(
        ": keep-alive\n\n",
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        "event: ping\n\n",
        "data:{\"choices\":[{\"delta\":{\"content\":\"one\"}}]}\n\n",
        "data:\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\" two\"}}]}\r\n\n",
        ": still here\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n",
        "data: [DONE]\n\n",
    );
    let rec = execute(replay(BODY, 200).await, 3).await;
    assert_eq!(rec.error, None);
    assert_eq!(rec.chunks, 2);
    assert_eq!(rec.itl_us.len(), 1);
    assert_eq!(rec.output_tokens, 2);
    assert_eq!(rec.token_source, TokenSource::Usage);
}

#[tokio::test]
async fn response_text_has_escapes_decoded() {
    // The response text joins each chunk's answer and reasoning, escapes decoded; a chunk
    // serde_json must decode (an escaped key) joins the same way.
    const BODY: &str = concat!(
        "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"think \\\"hard\\\"\\n\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"content\":\"caf\\u00e9 \\ud83d\\ude00\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{\"con\\u0074ent\":\" \\u65e5\"}}]}\n\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (rec, text) = execute_text(replay(BODY, 200).await, 3).await;
    assert_eq!(rec.error, None);
    assert_eq!(rec.chunks, 3);
    assert_eq!(text, "think \"hard\"\ncafé 😀 日");
    assert_eq!(rec.finish_reason, Some(FinishReason::Stop));
    assert_eq!(rec.token_source, TokenSource::Tokenizer);
}

/// vLLM's Responses stream, captured, replayed over HTTP with its `event:` lines: the deltas
/// are the answer, `response.completed` (no `[DONE]` follows) ends the request with its usage
/// and the budget's finish reason.
#[tokio::test]
async fn vllm_responses_stream_with_event_lines() {
    const BODY: &str = include_str!("../data/vllm-responses-stream.sse");
    let url = replay(BODY, 200)
        .await
        .replace("/chat/completions", "/responses");
    let client = Client::new(
        ClientConfig {
            timeout: Duration::from_secs(10),
            pool_size: 1,
            api: infermeter_core::protocol::Api::RESPONSES,
            ..ClientConfig::new(url)
        },
        Arc::new(Words),
    )
    .unwrap();
    let mut rec = RequestRecord {
        input_tokens: 14,
        planned_input_tokens: 14,
        planned_output_tokens: 6,
        ..RequestRecord::default()
    };
    let text = client
        .execute_text(
            bytes::Bytes::from_static(b"{}"),
            6,
            &mut rec,
            Instant::now(),
        )
        .await;
    assert_eq!(rec.error, None);
    assert_eq!(text, " SSLreadable follow**** successpyenv");
    assert_eq!(rec.chunks, 6, "one per output_text.delta");
    assert_eq!(rec.itl_us.len(), 5);
    // Bookkeeping events (created, in_progress, item and part added) precede the first
    // delta: TTFT starts at the delta, four gaps in.
    assert!(rec.first_token_ns.unwrap() >= 4 * GAP.as_nanos() as u64);
    assert_eq!(rec.first_answer_ns, rec.first_token_ns);
    assert_eq!(rec.token_source, TokenSource::Usage);
    assert_eq!((rec.input_tokens, rec.output_tokens), (14, 6));
    assert_eq!(rec.cached_tokens, Some(0));
    assert_eq!(rec.reasoning_tokens, Some(0));
    assert_eq!(rec.finish_reason, Some(FinishReason::Length));
    assert!(!rec.answer_starved());
}
