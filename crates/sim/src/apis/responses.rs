//! The simulator's side of `api "responses"`: `input` (a string, or message items counted as
//! chat's messages are) with `instructions` as a system message, and a stream of typed events
//! as OpenAI and vLLM send them, each with its SSE `event:` line: `response.created`, an
//! output item per phase (a reasoning item while the response reasons, then the message),
//! `response.reasoning_text.delta` / `response.output_text.delta` per token, and
//! `response.completed` (or `response.incomplete` when `max_output_tokens` ran out) with usage
//! (`output_tokens_details.reasoning_tokens`). The final response's `output` is left empty:
//! its text was streamed, and no client reads it twice.

use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};
use serde::Deserialize;

use super::chat::{self, RawMessage};
use crate::tokens::PromptSink;
use crate::tool_results::ToolResults;
use crate::wire::{
    self, BadRequest, EventStream, FinishReason, GenRequest, PromptField, SimApi, Stream,
    TokenEvent, Whole,
};
use events::{completed, event, open};

/// The Responses API's side.
pub(crate) struct Responses;

impl SimApi for Responses {
    fn name(&self) -> &'static str {
        "responses"
    }

    fn parse(&self, body: &[u8], collect_ids: bool) -> Result<GenRequest, BadRequest> {
        wire::parse::<Input>(body, collect_ids)
    }

    fn stream(&self) -> Stream {
        Stream::Events(&Responses)
    }

    /// A function call item streamed: see `responses/tool.rs`.
    fn tool_events(&self) -> Option<&'static dyn EventStream> {
        Some(&tool::ResponsesTool)
    }

    /// A `response` object: a reasoning item (its text as `reasoning_text` content, as vLLM
    /// gives it) when the model reasoned, then the message when it answered (or the
    /// `function_call` item when it called a tool); usage with
    /// `output_tokens_details.reasoning_tokens` (and the cached tokens with `prefix-cache`).
    fn whole(&self, w: &Whole<'_>) -> serde_json::Value {
        let count = |k: &str| w.usage.get(k).cloned().unwrap_or(serde_json::Value::Null);
        let incomplete = w.finish == FinishReason::Length.as_str();
        let mut output = Vec::new();
        if !w.reasoning.is_empty() {
            output.push(serde_json::json!({
                "type": "reasoning", "id": format!("rs_sim-{}", w.id), "summary": [],
                "content": [{ "type": "reasoning_text", "text": w.reasoning }],
            }));
        }
        if let Some(name) = w.tool {
            let (call_id, arguments) = crate::tools::whole_call(w.id, w.text);
            output.push(serde_json::json!({
                "type": "function_call", "id": format!("fc_sim-{}", w.id), "call_id": call_id,
                "name": name, "arguments": arguments, "status": "completed",
            }));
        } else if !w.text.is_empty() {
            output.push(serde_json::json!({
                "type": "message", "id": format!("msg_sim-{}", w.id), "role": "assistant",
                "status": "completed",
                "content": [{ "type": "output_text", "text": w.text, "annotations": [] }],
            }));
        }
        let mut usage = serde_json::json!({
            "input_tokens": count("prompt_tokens"), "output_tokens": count("completion_tokens"),
            "output_tokens_details": { "reasoning_tokens": w.reasoning_tokens },
            "total_tokens": count("total_tokens"),
        });
        if let Some(cached) = w.usage.pointer("/prompt_tokens_details/cached_tokens") {
            usage["input_tokens_details"] = serde_json::json!({ "cached_tokens": cached });
        }
        serde_json::json!({
            "id": format!("resp_sim-{}", w.id), "object": "response",
            "created_at": w.created, "model": w.model,
            "status": if incomplete { "incomplete" } else { "completed" },
            "incomplete_details": incomplete.then(|| serde_json::json!({"reason": "max_output_tokens"})),
            "error": null,
            "output": output,
            "usage": usage,
        })
    }
}

/// A request's `input`: one string (a user message), or message items.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum Input {
    Text(String),
    Items(Vec<RawMessage>),
}

impl PromptField for Input {
    const KEY: &'static str = "input";
    const CONTEXT_KEY: Option<&'static str> = Some("instructions");
    fn feed(&self, sink: &mut PromptSink) {
        match self {
            Input::Text(t) => {
                sink.message_start("user");
                sink.text(t);
                sink.message_start("assistant");
            }
            Input::Items(items) => chat::tokens(items, true, sink),
        }
    }
    fn tool_results(&self) -> Result<ToolResults, BadRequest> {
        match self {
            Input::Text(_) => Ok(ToolResults::default()),
            Input::Items(items) => chat::check_tools(items),
        }
    }
    fn tool_results_continuing(&self) -> Result<(ToolResults, Vec<String>), BadRequest> {
        match self {
            Input::Text(_) => Ok((ToolResults::default(), Vec::new())),
            Input::Items(items) => chat::check_tools_continuing(items),
        }
    }
}

impl EventStream for Responses {
    fn token(&self, buf: &mut BytesMut, t: &TokenEvent<'_>) {
        let reasoning = t.index < t.reasoning;
        // Reasoning comes first, as output item 0; the message follows it.
        let item = if reasoning {
            0
        } else {
            u64::from(t.reasoning > 0)
        };
        // Sequence numbers: the response's creation and its first item's announcement, then
        // the tokens, with two more (an item done, the next added) where the answer starts.
        let answer_start = if t.reasoning > 0 { 2 } else { 0 };
        let seq = 2 + t.index + if reasoning { 0 } else { answer_start };
        if t.index == 0 {
            let head = format!(
                r#""response":{{"id":"resp_sim-{}","object":"response","created_at":{},"model":{},"status":"in_progress","output":[],"usage":null}}"#,
                t.id, t.created, t.model_json
            );
            event(buf, "response.created", 0, &head);
            item_event(buf, "response.output_item.added", 1, t, item, reasoning);
        } else if t.index == t.reasoning {
            item_event(buf, "response.output_item.done", seq - 2, t, 0, true);
            item_event(buf, "response.output_item.added", seq - 1, t, item, false);
        }
        let kind = if reasoning {
            "response.reasoning_text.delta"
        } else {
            "response.output_text.delta"
        };
        open(buf, kind);
        let _ = write!(
            buf,
            r#","item_id":"{}_sim-{}","output_index":{item},"content_index":0,"sequence_number":{seq},"delta":""#,
            if reasoning { "rs" } else { "msg" },
            t.id
        );
        buf.put_slice(t.word.as_bytes());
        buf.put_slice(b"\"}\n\n");
        if let Some(finish) = t.finish {
            item_event(
                buf,
                "response.output_item.done",
                seq + 1,
                t,
                item,
                reasoning,
            );
            completed(buf, seq + 2, t, finish);
        }
    }

    fn garbage(&self, buf: &mut BytesMut) {
        open(buf, "response.output_text.delta");
        buf.put_slice(b",\"delta\":<<garbage\n\n");
    }
}

/// An output item's announcement or end: the reasoning item or the message.
fn item_event(
    buf: &mut BytesMut,
    kind: &str,
    seq: u64,
    t: &TokenEvent<'_>,
    index: u64,
    reasoning: bool,
) {
    let status = if kind.ends_with("done") {
        "completed"
    } else {
        "in_progress"
    };
    let item = if reasoning {
        format!(
            r#"{{"type":"reasoning","id":"rs_sim-{}","summary":[],"status":"{status}"}}"#,
            t.id
        )
    } else {
        format!(
            r#"{{"type":"message","id":"msg_sim-{}","role":"assistant","content":[],"status":"{status}"}}"#,
            t.id
        )
    };
    event(
        buf,
        kind,
        seq,
        &format!(r#""output_index":{index},"item":{item}"#),
    );
}

mod events;
mod tool;

#[cfg(test)]
mod tests;
