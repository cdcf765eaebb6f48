//! The answer of the pooling APIs (embeddings, rerank, score): one JSON body, not a stream,
//! carrying a list of results (embeddings' and score's `data`, rerank's `results`) and the
//! server's `usage`. What the measurement needs of it is whether it answers every input sent
//! exactly once and the prompt tokens the server counted, so the decoder reads each result's
//! `index` without building the result (an embedding's thousands of floats are skipped, not
//! stored) and reads `usage` alone. The request side they share is here too: the `model`, the
//! extra fields and the closing brace around each API's own keys.
//!
//! The rules, for every pooling API:
//!
//! - the body is a JSON object; unknown keys are ignored, a repeated known key is an error;
//! - the API's list (`data` or `results`) is an array of objects;
//! - each result answers the input its `index` names (an unsigned integer; absent or `null`:
//!   its position in the list). The answer is complete only when every input is answered
//!   exactly once: as many results as inputs, every index below the number of inputs, none
//!   twice. Anything else is [`Unanswered`]: one vector for a batch of four must not be
//!   credited with four inputs, nor a rerank of indices 99, −1 and one twice;
//! - `usage` is `null` or an object whose `prompt_tokens` (else `total_tokens`: a pooling
//!   answer generates nothing), when present, is an unsigned integer;
//! - any non-null top-level `error` is the server's error (vLLM answers a failed request so
//!   when it cannot set the status).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use super::body::{self, PromptRef, Request};
use super::chunk::{ChunkError, Usage};

/// What a pooling API's answer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pooled {
    /// The results it holds (embeddings, scores): 0, or exactly one per input.
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
    #[error("the answer does not answer every input exactly once: {0}")]
    Incomplete(#[from] Unanswered),
}

/// How a pooling answer's results fail to answer every input exactly once (the first problem
/// found, in list order). Only numbers this decoder counted are shown, never the server's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    /// An `index` that is not an unsigned integer below the inputs (99 of 4, −1, 1.5).
    #[error("result {at} names an index outside the {inputs} inputs")]
    OutOfRange { at: u64, inputs: u32 },
    /// Two results for one input.
    #[error("input {0} is answered twice")]
    Twice(u64),
    /// Fewer results than inputs.
    #[error("{answered} of the {inputs} inputs are answered")]
    Missing { answered: u64, inputs: u32 },
}

/// The answer's keys this decoder reads; the others are skipped unread. The list is kept as
/// its raw text and read again by a [`Tally`], which knows how many inputs were sent.
#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    data: Option<&'a RawValue>,
    #[serde(borrow)]
    results: Option<&'a RawValue>,
    usage: Option<WireUsage>,
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    total_tokens: Option<u64>,
}

/// Which inputs a list's results answer, counted as the list is read: memory is one flag per
/// input, however long the list.
struct Tally {
    seen: Vec<bool>,
    results: u64,
    answered: u64,
    problem: Option<Unanswered>,
}

impl Tally {
    fn new(inputs: u32) -> Tally {
        Tally {
            seen: vec![false; inputs as usize],
            results: 0,
            answered: 0,
            problem: None,
        }
    }

    /// Notes the next result, which names `index`.
    fn note(&mut self, index: Index) {
        let at = self.results;
        self.results += 1;
        if self.problem.is_some() {
            return;
        }
        let inputs = u32::try_from(self.seen.len()).unwrap_or(u32::MAX);
        let slot = match index {
            Index::Absent => Some(at),
            Index::At(i) => Some(i),
            Index::Invalid => None,
        };
        match slot.and_then(|i| usize::try_from(i).ok().filter(|&i| i < self.seen.len())) {
            None => self.problem = Some(Unanswered::OutOfRange { at, inputs }),
            Some(i) if self.seen[i] => self.problem = Some(Unanswered::Twice(i as u64)),
            Some(i) => {
                self.seen[i] = true;
                self.answered += 1;
            }
        }
    }

    /// Whether every input was answered exactly once.
    fn verdict(&self) -> Result<(), Unanswered> {
        match self.problem {
            Some(p) => Err(p),
            None if self.answered < self.seen.len() as u64 => Err(Unanswered::Missing {
                answered: self.answered,
                inputs: u32::try_from(self.seen.len()).unwrap_or(u32::MAX),
            }),
            None => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for &mut Tally {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for &mut Tally {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of results")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(index) = seq.next_element::<Index>()? {
            self.note(index);
        }
        Ok(())
    }
}

/// What one result says of the input it answers: its `index`, read alone (the vector or
/// score beside it skipped).
enum Index {
    /// No `index` (or `null`): the result answers the input at its position.
    Absent,
    At(u64),
    /// A number that names no input: negative, fractional, past `u64`.
    Invalid,
}

/// A result's keys: only `index` is read.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Index,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Index {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Index, D::Error> {
        // A map only: a result that is an array or a number is no result.
        d.deserialize_map(IndexVisitor)
    }
}

struct IndexVisitor;

impl<'de> Visitor<'de> for IndexVisitor {
    type Value = Index;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a result object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Index, A::Error> {
        let mut index: Option<Option<serde_json::Number>> = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Index if index.is_some() => return Err(de::Error::duplicate_field("index")),
                Key::Index => index = Some(map.next_value()?),
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(match index.flatten() {
            None => Index::Absent,
            Some(n) => n.as_u64().map_or(Index::Invalid, Index::At),
        })
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

/// Decodes a pooling API's answer to a request of `inputs` inputs by the rules in the module
/// doc. An empty list is an answer of no result (the caller counts it `empty`), not an
/// incomplete one.
pub(super) fn decode(bytes: &[u8], list: List, inputs: u32) -> Result<Pooled, WholeError> {
    let body: Body = serde_json::from_slice(bytes)?;
    if body.error.is_some() {
        return Err(WholeError::Server);
    }
    let raw = match list {
        List::Data => body.data.ok_or(WholeError::Missing("data"))?,
        List::Results => body.results.ok_or(WholeError::Missing("results"))?,
    };
    let mut tally = Tally::new(inputs);
    tally.deserialize(&mut serde_json::Deserializer::from_str(raw.get()))?;
    let usage = body.usage.and_then(|u| {
        u.prompt_tokens.or(u.total_tokens).map(|n| Usage {
            prompt_tokens: n,
            completion_tokens: 0,
            cached_tokens: None,
            reasoning_tokens: None,
        })
    });
    if tally.results > 0 {
        tally.verdict()?;
    }
    Ok(Pooled {
        results: tally.results,
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

    fn ok(body: &str, list: List, inputs: u32) -> Pooled {
        decode(body.as_bytes(), list, inputs).unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    #[test]
    fn vllm_answers_decode() {
        let embeddings = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/vllm-embeddings.json"
        ))
        .unwrap();
        let p = ok(&embeddings, List::Data, 2);
        assert_eq!(p.results, 2);
        assert_eq!(p.usage.map(|u| u.prompt_tokens), Some(6));
        let score = r#"{"id":"score-1","object":"list","created":1,"model":"m","data":[{"index":0,"object":"score","score":0.85}],"usage":{"prompt_tokens":100,"total_tokens":100,"completion_tokens":0}}"#;
        assert_eq!(ok(score, List::Data, 1).results, 1);
        // An older rerank usage has only `total_tokens`; results come best first.
        let rerank = r#"{"id":"rerank-1","model":"m","usage":{"total_tokens":464},"results":[{"index":1,"document":{"text":"a"},"relevance_score":0.99},{"relevance_score":4e-5,"index":0}]}"#;
        let p = ok(rerank, List::Results, 2);
        assert_eq!((p.results, p.usage.unwrap().prompt_tokens), (2, 464));
        assert_eq!(ok(r#"{"data":[],"usage":null}"#, List::Data, 3).usage, None);
        // No `index` (or a null one): the result answers the input at its position.
        assert_eq!(
            ok(r#"{"data":[{"index":null},{}]}"#, List::Data, 2).results,
            2
        );
    }

    #[test]
    fn an_answer_must_answer_every_input_exactly_once() {
        let incomplete =
            |body: &str, list: List, inputs: u32| match decode(body.as_bytes(), list, inputs) {
                Err(WholeError::Incomplete(u)) => u,
                other => panic!("{body}: {other:?}"),
            };
        // One vector for a batch of four.
        assert_eq!(
            incomplete(r#"{"data":[{"index":0,"embedding":[0.1]}]}"#, List::Data, 4),
            Unanswered::Missing {
                answered: 1,
                inputs: 4
            }
        );
        // Out of range, whatever the number: past the inputs, negative, fractional, huge.
        for index in ["99", "-1", "1.5", "4", "18446744073709551616", "1e300"] {
            let body = format!(r#"{{"results":[{{"index":0}},{{"index":{index}}}]}}"#);
            assert_eq!(
                incomplete(&body, List::Results, 4),
                Unanswered::OutOfRange { at: 1, inputs: 4 },
                "{index}"
            );
        }
        // One input answered twice, by index or by position.
        let twice = r#"{"results":[{"index":2},{"index":0},{"index":2},{"index":1}]}"#;
        assert_eq!(incomplete(twice, List::Results, 4), Unanswered::Twice(2));
        assert_eq!(
            incomplete(r#"{"data":[{},{"index":0}]}"#, List::Data, 2),
            Unanswered::Twice(0)
        );
        // More results than inputs.
        let more = r#"{"data":[{"index":0},{"index":1},{"index":2}]}"#;
        assert_eq!(
            incomplete(more, List::Data, 2),
            Unanswered::OutOfRange { at: 2, inputs: 2 }
        );
        // A repeated `index` in one result is not a JSON answer of the API's shape.
        assert!(matches!(
            decode(br#"{"data":[{"index":0,"index":1}]}"#, List::Data, 2),
            Err(WholeError::Json(_))
        ));
        // Complete in any order.
        let shuffled = r#"{"results":[{"index":2},{"index":0},{"index":3},{"index":1}]}"#;
        assert_eq!(ok(shuffled, List::Results, 4).results, 4);
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
            // A result is an object: not a number, a string or an array.
            r#"{"data":[1]}"#,
            r#"{"data":[[0]]}"#,
            r#"{"data":[{"index":"0"}]}"#,
        ];
        for body in bad {
            assert!(
                matches!(
                    decode(body.as_bytes(), List::Data, 1),
                    Err(WholeError::Json(_))
                ),
                "{body}"
            );
        }
        assert!(matches!(
            decode(br#"{"results":[]}"#, List::Data, 1),
            Err(WholeError::Missing("data"))
        ));
        assert!(matches!(
            decode(
                br#"{"object":"error","error":{"message":"boom"},"data":[]}"#,
                List::Data,
                1
            ),
            Err(WholeError::Server)
        ));
        // A null error is no error.
        assert_eq!(
            ok(r#"{"error":null,"data":[{}]}"#, List::Data, 1).results,
            1
        );
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
            "{{\"data\":[{{\"index\":0,\"embedding\":{}{}}}]}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert_eq!(decode(deep.as_bytes(), List::Data, 1).unwrap().results, 1);
        let open = format!("{{\"data\":[{}", "[".repeat(100_000));
        assert!(decode(open.as_bytes(), List::Data, 1).is_err());
    }
}
