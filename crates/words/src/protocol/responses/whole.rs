//! A whole (non-streamed) Responses answer, `stream: false`: one `response` object. The rules:
//!
//! - the body is a JSON object; unknown keys anywhere are ignored;
//! - a non-null `error`, or `status` `failed` or `cancelled`, is the server's error; `queued`
//!   or `in_progress` (a background response, which a benchmark does not ask for) is an
//!   unfinished answer; `incomplete` ends as `length` when `incomplete_details.reason` is
//!   `max_output_tokens`, else `other`; `completed` or none, as `stop` (`tool_calls` when the
//!   answer holds a function call);
//! - `output` is an array of items, each an object whose `type` is a string: `message` items'
//!   `content` parts of type `output_text` (`text`) and `refusal` (`refusal`) are the answer;
//!   `reasoning` items' `content` parts (`reasoning_text`), else their `summary` parts, the
//!   reasoning; `function_call` items (`call_id`, `name`, `arguments`) tool calls; other items
//!   and parts are skipped; a field read is a string or absent (`null` too), anything else
//!   makes the answer malformed;
//! - the top-level `output_text` (a convenience some servers and SDKs add) is the answer only
//!   when no message item carried text;
//! - `usage` as in the stream's `response.completed` (`input_tokens`, `output_tokens`,
//!   `output_tokens_details.reasoning_tokens`);
//! - `id`, a non-empty string, is kept (a later turn may name it, once the client has judged
//!   it: [`MAX_ID_BYTES`] at most, printable ASCII; see `protocol::ResponseId`).
//!
//! serde_json's recursion limit bounds nesting; the client bounds the body's size.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::super::chunk::FinishReason;
use super::super::generated::{Generated, ToolCall};
use super::super::pooled::WholeError;
use super::parts::{incomplete_reason, usage};

/// The longest response id kept: OpenAI's are about 50 bytes; a longer one is not believed,
/// and is not sent back.
pub const MAX_ID_BYTES: usize = 256;

#[derive(Deserialize)]
struct Body<'a> {
    id: Option<serde_json::Value>,
    status: Option<String>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
    #[serde(borrow)]
    incomplete_details: Option<&'a RawValue>,
    output: Option<Vec<Item>>,
    output_text: Option<String>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    content: Option<Vec<Part>>,
    #[serde(default)]
    summary: Option<Vec<Part>>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    refusal: Option<String>,
}

/// Decodes a whole Responses answer by the rules in the module doc.
pub(super) fn decode(bytes: &[u8]) -> Result<Generated, WholeError> {
    let body: Body<'_> = serde_json::from_slice(bytes)?;
    if body.error.is_some_and(|e| e.get() != "null") {
        return Err(WholeError::Server);
    }
    let finish = match body.status.as_deref() {
        Some("failed" | "cancelled") => return Err(WholeError::Server),
        Some("queued" | "in_progress") => return Err(WholeError::Unfinished),
        Some("incomplete") => Some(incomplete_reason(body.incomplete_details)),
        Some("completed") | None => Some(FinishReason::Stop),
        Some(_) => Some(FinishReason::Other),
    };
    let mut out = Generated {
        finish_reason: finish,
        ..Generated::default()
    };
    for item in body.output.ok_or(WholeError::Missing("output"))? {
        read_item(item, &mut out);
    }
    if out.answer.is_empty()
        && let Some(text) = body.output_text
    {
        out.answer = text;
    }
    if !out.tool_calls.is_empty() && out.finish_reason == Some(FinishReason::Stop) {
        out.finish_reason = Some(FinishReason::ToolCalls);
    }
    out.usage = match body.usage {
        Some(u) => usage(u).map_err(|_| WholeError::Usage)?,
        None => None,
    };
    out.id = body
        .id
        .as_ref()
        .and_then(serde_json::Value::as_str)
        .filter(|id| !id.is_empty())
        .map(str::to_string);
    Ok(out)
}

/// What one output item adds to the answer.
fn read_item(item: Item, out: &mut Generated) {
    match item.kind.as_str() {
        "message" => {
            for part in item.content.into_iter().flatten() {
                match part.kind.as_deref() {
                    Some("output_text") => out.answer.push_str(part.text.as_deref().unwrap_or("")),
                    Some("refusal") => out.answer.push_str(part.refusal.as_deref().unwrap_or("")),
                    _ => {}
                }
            }
        }
        "reasoning" => {
            let content: String = texts(item.content.as_deref(), "reasoning_text");
            if content.is_empty() {
                out.reasoning
                    .push_str(&texts(item.summary.as_deref(), "summary_text"));
            } else {
                out.reasoning.push_str(&content);
            }
        }
        "function_call" => out.tool_calls.push(ToolCall {
            call_id: item.call_id.unwrap_or_default(),
            name: item.name.unwrap_or_default(),
            arguments: item.arguments.unwrap_or_default(),
        }),
        _ => {}
    }
}

/// The text of the parts of type `kind`, joined.
fn texts(parts: Option<&[Part]>, kind: &str) -> String {
    parts
        .into_iter()
        .flatten()
        .filter(|p| p.kind.as_deref() == Some(kind))
        .filter_map(|p| p.text.as_deref())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Usage;

    fn ok(body: &str) -> Generated {
        decode(body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e}"))
    }

    fn err(body: &str) -> WholeError {
        match decode(body.as_bytes()) {
            Ok(g) => panic!("{} decoded: {g:?}", &body[..body.len().min(200)]),
            Err(e) => e,
        }
    }

    #[test]
    fn reasoning_then_the_answer_with_usage() {
        let g = ok(
            r#"{"id":"resp_1","object":"response","status":"completed","error":null,
            "output":[
              {"type":"reasoning","id":"rs","summary":[{"type":"summary_text","text":"short"}],
               "content":[{"type":"reasoning_text","text":"let me "},{"type":"reasoning_text","text":"think"}]},
              {"type":"message","role":"assistant","content":[
                 {"type":"output_text","text":"hello \u00e9","annotations":[]},
                 {"type":"output_text","text":"!"}]}],
            "usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":16},
                     "output_tokens":9,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":29}}"#,
        );
        assert_eq!(g.answer, "hello é!");
        assert_eq!(
            g.reasoning, "let me think",
            "the content wins over the summary"
        );
        assert_eq!(g.finish_reason, Some(FinishReason::Stop));
        assert_eq!(g.id.as_deref(), Some("resp_1"));
        assert_eq!(
            g.usage,
            Some(Usage {
                prompt_tokens: 20,
                completion_tokens: 9,
                cached_tokens: Some(16),
                reasoning_tokens: Some(4),
            })
        );
        assert!(g.has_answer() && g.has_output());
        // OpenAI's hidden reasoning: only a summary.
        let g = ok(
            r#"{"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"s"}]}]}"#,
        );
        assert_eq!(g.reasoning, "s");
        assert!(!g.has_answer());
    }

    #[test]
    fn vllm_answers_so() {
        // Captured from vLLM 0.32 on CPU (tests/data), cut off by `max_output_tokens`.
        let body = include_str!("../../../../../tests/data/vllm-responses-nonstream.json");
        let g = ok(body);
        assert_eq!(g.answer, " havesslumesend 0 wor");
        assert_eq!(g.finish_reason, Some(FinishReason::Length));
        assert_eq!(g.id.as_deref(), Some("resp_95b05e09f6c19d76"));
        let u = g.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (14, 6));
        assert_eq!(u.reasoning_tokens, Some(0));
    }

    #[test]
    fn how_the_answer_ended() {
        let g = ok(
            r#"{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}"#,
        );
        assert_eq!(g.finish_reason, Some(FinishReason::Length));
        assert!(!g.has_output());
        let g = ok(
            r#"{"status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[]}"#,
        );
        assert_eq!(g.finish_reason, Some(FinishReason::Other));
        let g = ok(r#"{"status":"something_new","output":[]}"#);
        assert_eq!(g.finish_reason, Some(FinishReason::Other));
        let g = ok(
            r#"{"output":[{"type":"function_call","call_id":"c1","name":"get","arguments":"{\"a\":1}"},
                               {"type":"function_call","call_id":"c2","name":"put","arguments":"{}"}]}"#,
        );
        assert_eq!(g.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(g.tool_calls.len(), 2, "every call, not the first");
        assert_eq!(g.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(g.tool_calls[1].call_id, "c2");
        let mut text = String::new();
        g.push_text(&mut text);
        assert_eq!(text, r#"get{"a":1}put{}"#);
        for body in [
            r#"{"status":"failed","output":[]}"#,
            r#"{"status":"cancelled","output":[]}"#,
            r#"{"status":"completed","error":{"message":"no"},"output":[]}"#,
        ] {
            assert!(matches!(err(body), WholeError::Server), "{body}");
        }
        assert!(matches!(
            err(r#"{"status":"in_progress","output":[]}"#),
            WholeError::Unfinished
        ));
    }

    #[test]
    fn output_text_stands_in_only_for_a_missing_message() {
        let g = ok(r#"{"output":[],"output_text":"from the sdk"}"#);
        assert_eq!(g.answer, "from the sdk");
        let g = ok(
            r#"{"output":[{"type":"message","content":[{"type":"output_text","text":"a"}]}],"output_text":"b"}"#,
        );
        assert_eq!(g.answer, "a");
        let g = ok(
            r#"{"output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]},
                                 {"type":"web_search_call","id":"x"}]}"#,
        );
        assert_eq!(g.answer, "no");
    }

    #[test]
    fn hostile_bodies_are_typed_errors() {
        assert!(matches!(
            err(r#"{"status":"completed"}"#),
            WholeError::Missing("output")
        ));
        for body in [
            "",
            "<html>502 Bad Gateway</html>",
            r#"{"output":[{"type":"message","content":[{"type":"output_text","text":"cut"#,
            r#"{"output":{"type":"message"}}"#,
            r#"{"output":[{"type":7}]}"#,
            r#"{"output":[{"type":"message","content":[{"type":"output_text","text":5}]}]}"#,
            r#"{"output":[{"type":"function_call","name":["x"]}]}"#,
            r#"[1,2]"#,
        ] {
            assert!(matches!(err(body), WholeError::Json(_)), "{body}");
        }
        assert!(matches!(
            err(r#"{"output":[],"usage":{"input_tokens":-1}}"#),
            WholeError::Usage
        ));
        // Nested ten thousand deep: skipped without recursion where unread, refused at
        // serde_json's recursion limit where read; never a stack overflow.
        let nest = |n| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let skipped = format!(r#"{{"output":[],"extra":{}}}"#, nest(10_000));
        assert!(decode(skipped.as_bytes()).is_ok());
        let read = format!(
            r#"{{"output":[{{"type":"message","content":{}}}]}}"#,
            nest(10_000)
        );
        assert!(matches!(decode(read.as_bytes()), Err(WholeError::Json(_))));
        // An id too long to be believed is kept for the client to judge (and refuse); the
        // answer stands.
        let long = format!(r#"{{"id":"{}","output":[]}}"#, "x".repeat(MAX_ID_BYTES + 1));
        assert_eq!(ok(&long).id.map(|id| id.len()), Some(MAX_ID_BYTES + 1));
        assert_eq!(ok(r#"{"id":7,"output":[]}"#).id, None);
        // Markup and control characters are text, returned as they came (escaped where shown).
        let g = ok(
            r#"{"output":[{"type":"message","content":[{"type":"output_text","text":"<script>\u0007"}]}]}"#,
        );
        assert_eq!(g.answer, "<script>\u{7}");
    }
}
