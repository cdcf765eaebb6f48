//! The answer of the pooling APIs (embeddings, rerank, score): one JSON body, not a stream,
//! carrying a list of results (embeddings' and score's `data`, rerank's `results`) and the
//! server's `usage`. What the measurement needs of it is how many results there are and the
//! prompt tokens the server counted, so the decoder counts the list's elements without
//! building them (an embedding's thousands of floats are skipped, not stored) and reads
//! `usage` alone. The request side they share is here too: the `model`, the extra fields and
//! the closing brace around each API's own keys.
//!
//! The rules, for every pooling API:
//!
//! - the body is a JSON object; unknown keys are ignored, a repeated known key is an error;
//! - the API's list (`data` or `results`) is an array: its length is the number of results;
//! - `usage` is `null` or an object whose `prompt_tokens` (else `total_tokens`: a pooling
//!   answer generates nothing), when present, is an unsigned integer;
//! - any non-null top-level `error` is the server's error (vLLM answers a failed request so
//!   when it cannot set the status).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, SeqAccess, Visitor};

use super::body::{self, PromptRef, Request};
use super::chunk::{ChunkError, Usage};

/// What a pooling API's answer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pooled {
    /// The results it holds (embeddings, scores).
    pub results: u64,
    /// Its `usage`, when it has one: prompt tokens only (`completion_tokens` 0).
    pub usage: Option<Usage>,
}

/// Why a whole answer could not be read (the request counts as `malformed`, or for
/// [`WholeError::Server`] as the server's own failure).
#[derive(Debug, thiserror::Error)]
pub enum WholeError {
    #[error("the answer is not a JSON object of the API's shape: {0}")]
    Json(#[from] serde_json::Error),
    #[error("the answer has no `{0}` list")]
    Missing(&'static str),
    #[error("the answer is the server's error object")]
    Server,
    #[error("the answer's status says it is not finished (a background response)")]
    Unfinished,
    #[error("the answer's `usage` is not an object of unsigned integer counts")]
    Usage,
    #[error("this API has no whole answer of this kind")]
    NotPooled,
}

/// The answer's keys this decoder reads; the others are skipped unread.
#[derive(Deserialize)]
struct Body {
    data: Option<Count>,
    results: Option<Count>,
    usage: Option<WireUsage>,
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    total_tokens: Option<u64>,
}

/// The length of a JSON array whose elements are skipped, not stored.
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        d.deserialize_seq(CountVisitor)
    }
}

struct CountVisitor;

impl<'de> Visitor<'de> for CountVisitor {
    type Value = Count;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of results")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
        let mut n = 0;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok(Count(n))
    }
}

/// Which list an API's answer holds its results in.
#[derive(Debug, Clone, Copy)]
pub(super) enum List {
    /// `data` (embeddings, score).
    Data,
    /// `results` (rerank).
    Results,
}

/// Decodes a pooling API's answer by the rules in the module doc.
pub(super) fn decode(bytes: &[u8], list: List) -> Result<Pooled, WholeError> {
    let body: Body = serde_json::from_slice(bytes)?;
    if body.error.is_some() {
        return Err(WholeError::Server);
    }
    let results = match list {
        List::Data => body.data.ok_or(WholeError::Missing("data"))?,
        List::Results => body.results.ok_or(WholeError::Missing("results"))?,
    };
    let usage = body.usage.and_then(|u| {
        u.prompt_tokens.or(u.total_tokens).map(|n| Usage {
            prompt_tokens: n,
            completion_tokens: 0,
            cached_tokens: None,
            reasoning_tokens: None,
        })
    });
    Ok(Pooled {
        results: results.0,
        usage,
    })
}

/// A pooling API has no events: the client reads its answer whole
/// ([`super::ApiKind::decode_whole`]), so an event handed to it is not its grammar.
pub(super) fn no_event() -> ChunkError {
    ChunkError::Type {
        field: "stream",
        expected: "absent: a pooling API answers in one JSON body",
    }
}

/// The request's first text and the texts after it: a pooling request's prompt is text
/// (a conversation's messages are sent as their texts, in order).
pub(super) fn texts<'a>(req: &Request<'a>) -> (Option<&'a str>, &'a [String]) {
    let first = match req.prompt {
        PromptRef::Text(t) => Some(t),
        PromptRef::Messages(m) => m.first().map(|m| m.content),
    };
    (first, req.batch)
}

/// `"key":"text"` or `"key":["a","b",…]`: a list when `list` is set (a batch), else the one
/// text.
pub(super) fn text_field(out: &mut Vec<u8>, key: &str, texts: &[&str], list: bool) {
    out.push(b',');
    body::json_str(out, key);
    out.push(b':');
    if !list && let [one] = texts {
        return body::json_str(out, one);
    }
    out.push(b'[');
    for (i, t) in texts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        body::json_str(out, t);
    }
    out.push(b']');
}

/// A pair API's body (rerank's, score's): the query under its key, the documents under
/// theirs — always a list with `always_list`, else a list only for more than one — then the
/// extra fields.
pub(super) fn write_pairs(
    out: &mut Vec<u8>,
    req: &Request<'_>,
    (query_key, docs_key): (&str, &str),
    always_list: bool,
) {
    body::open(out, req.model);
    let (query, docs) = texts(req);
    text_field(out, query_key, &[query.unwrap_or("")], false);
    let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
    text_field(out, docs_key, &docs, always_list || docs.len() != 1);
    close(out, req);
}

/// The extra fields and the closing brace: a pooling request has no length, no `stream`.
pub(super) fn close(out: &mut Vec<u8>, req: &Request<'_>) {
    body::extra_fields(out, req);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(body: &str, list: List) -> Pooled {
        decode(body.as_bytes(), list).unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    #[test]
    fn vllm_answers_decode() {
        let embeddings = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/vllm-embeddings.json"
        ))
        .unwrap();
        let p = ok(&embeddings, List::Data);
        assert_eq!(p.results, 2);
        assert_eq!(p.usage.map(|u| u.prompt_tokens), Some(6));
        let score = r#"{"id":"score-1","object":"list","created":1,"model":"m","data":[{"index":0,"object":"score","score":0.85}],"usage":{"prompt_tokens":100,"total_tokens":100,"completion_tokens":0}}"#;
        assert_eq!(ok(score, List::Data).results, 1);
        // An older rerank usage has only `total_tokens`.
        let rerank = r#"{"id":"rerank-1","model":"m","usage":{"total_tokens":464},"results":[{"index":3,"document":{"text":"a"},"relevance_score":0.99},{"index":1,"relevance_score":4e-5}]}"#;
        let p = ok(rerank, List::Results);
        assert_eq!((p.results, p.usage.unwrap().prompt_tokens), (2, 464));
        assert_eq!(ok(r#"{"data":[],"usage":null}"#, List::Data).usage, None);
    }

    #[test]
    fn hostile_answers_fail_cleanly() {
        let bad = [
            "",
            "<html><body>502 Bad Gateway</body></html>",
            r#"{"data":[{"embedding":[0.1,0.2"#,
            r#"{"data":{"0":1}}"#,
            r#"{"data":"many"}"#,
            r#"{"data":[],"usage":{"prompt_tokens":-3}}"#,
            r#"{"data":[],"usage":{"prompt_tokens":"6"}}"#,
            r#"{"data":[],"usage":7}"#,
            r#"{"data":[],"data":[1]}"#,
            "[1,2,3]",
            "null",
            r#"{"data":[]} trailing"#,
        ];
        for body in bad {
            assert!(
                matches!(
                    decode(body.as_bytes(), List::Data),
                    Err(WholeError::Json(_))
                ),
                "{body}"
            );
        }
        assert!(matches!(
            decode(br#"{"results":[]}"#, List::Data),
            Err(WholeError::Missing("data"))
        ));
        assert!(matches!(
            decode(
                br#"{"object":"error","error":{"message":"boom"},"data":[]}"#,
                List::Data
            ),
            Err(WholeError::Server)
        ));
        // A null error is no error.
        assert_eq!(ok(r#"{"error":null,"data":[1]}"#, List::Data).results, 1);
    }

    /// The body `api` writes for a prompt and `batch` more texts, as JSON.
    fn body(api: crate::protocol::Api, batch: &[&str]) -> serde_json::Value {
        let extra =
            std::collections::BTreeMap::from([("truncate_prompt_tokens".into(), 512.into())]);
        let batch: Vec<String> = batch.iter().map(|t| t.to_string()).collect();
        let req = Request {
            model: "m",
            prompt: PromptRef::Text("q \"x\""),
            max_tokens: 0,
            ignore_eos: true,
            stream: true,
            extra: &extra,
            item: None,
            images: &[],
            batch: &batch,
            reasoning_effort: None,
        };
        let mut out = Vec::new();
        api.kind().write_body(&mut out, &req);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn each_api_writes_its_texts_under_its_keys_and_nothing_of_generation() {
        use crate::protocol::Api;
        let e = body(Api::EMBEDDINGS, &[]);
        assert_eq!(e["input"], "q \"x\"");
        let e = body(Api::EMBEDDINGS, &["a", "b"]);
        assert_eq!(e["input"], serde_json::json!(["q \"x\"", "a", "b"]));
        let r = body(Api::RERANK, &["a"]);
        assert_eq!(
            (&r["query"], &r["documents"]),
            (&"q \"x\"".into(), &serde_json::json!(["a"]))
        );
        let s = body(Api::SCORE, &["a"]);
        assert_eq!(
            (&s["text_1"], &s["text_2"]),
            (&"q \"x\"".into(), &"a".into())
        );
        let s = body(Api::SCORE, &["a", "b"]);
        assert_eq!(s["text_2"], serde_json::json!(["a", "b"]));
        for b in [e, r, s] {
            assert_eq!(b["model"], "m");
            assert_eq!(b["truncate_prompt_tokens"], 512);
            for k in ["stream", "max_tokens", "ignore_eos", "stream_options"] {
                assert!(b.get(k).is_none(), "{k} in {b}");
            }
        }
    }

    #[test]
    fn a_deeply_nested_answer_is_skipped_without_recursion() {
        // serde_json skips an ignored value iteratively: nesting costs no stack.
        let deep = format!(
            "{{\"data\":[{}{}]}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(decode(deep.as_bytes(), List::Data).unwrap().results, 1);
        let open = format!("{{\"data\":[{}", "[".repeat(100_000));
        assert!(decode(open.as_bytes(), List::Data).is_err());
    }
}
