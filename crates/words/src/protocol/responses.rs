//! `api "responses"`: OpenAI's Responses API, `POST {base}/responses` with `input`, streamed
//! as typed events (`data: {"type":"response.output_text.delta",…}`), as OpenAI, vLLM and
//! SGLang serve it; with `stream #false` in the target, one `response` object, decoded in
//! `responses/whole.rs`.
//!
//! The request: a text prompt is `input` as one string; a conversation is `input` as message
//! items (`{"role","content"}`), its first message, when a system prompt, sent as
//! `instructions`. A multi-turn session resends its history as `input` items, as chat does, or
//! with `session state="previous-response-id"` sends only the new message with the previous
//! response's id (`response_id.rs`, `runner/session.rs`). `max_output_tokens`
//! carries the length, `reasoning: {"effort"}` the reasoning effort when the target sets one.
//! `ignore_eos` is off by default: the API has no such field (OpenAI refuses unknown ones).
//!
//! The event grammar, each event's `type` naming it (the SSE `event:` line repeats it and is
//! not read):
//!
//! - `response.output_text.delta`: answer text in `delta` (a string; `null` or absent is no
//!   text, another type fails the request as malformed);
//! - `response.reasoning_text.delta`, `response.reasoning_summary_text.delta`: reasoning text
//!   in `delta`, likewise;
//! - `response.function_call_arguments.delta`: a function call's arguments in `delta`, answer
//!   output as a chat tool call's are, likewise;
//! - `response.completed`, `response.incomplete`: the end of the stream, with
//!   `response.usage` (`input_tokens`, `output_tokens`, unsigned integers, 0 when absent;
//!   `input_tokens_details.cached_tokens` and `output_tokens_details.reasoning_tokens` read
//!   when present as such) and the finish reason from `response.status` and
//!   `response.incomplete_details.reason` (`max_output_tokens`: `length`);
//! - `response.failed`, `error`: the server reported an error in the stream;
//! - `response.created`: `response.id`, when a string, is the response's id (a later turn of
//!   a session the server keeps sends it back; `response.completed` repeats it, and that one
//!   wins); anything else in it is skipped;
//! - `response.output_item.added` whose `item` is a `function_call`: the call's `call_id` and
//!   `name` (the name is answer output, as a chat tool call's first delta is); any other item,
//!   or an item not of this form, carries nothing;
//! - every other type (`response.in_progress`, …) carries nothing the measurement reads and
//!   is skipped; an event without a string `type` is malformed.
//!
//! Decoding borrows: each event is read by serde_json into a struct of borrowed raw values,
//! and a delta's text stays in the event with its escapes until the client asks for it, so a
//! delta event allocates nothing. (A raw value lets a lone surrogate escape through, which
//! decodes as U+FFFD; chat's decoder refuses it.)

use std::io::Write;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::api::ApiKind;
use super::body::{self, Message, PromptRef, Request};
use super::chunk::{ChunkError, ChunkInfo, Event, FinishReason, JsonStr};
use super::generated::Generated;
use super::pooled::WholeError;
use parts::{incomplete_reason, string, type_error, usage};

mod calls;
mod parts;

/// The Responses API.
pub struct Responses;

impl ApiKind for Responses {
    fn otlp_operation(&self) -> &'static str {
        "chat"
    }

    fn keeps_responses(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "responses"
    }

    fn help(&self) -> &'static str {
        "`POST {base}/responses` with `input`, streamed as typed events."
    }

    fn path(&self) -> &'static str {
        "/responses"
    }

    fn conversation(&self) -> bool {
        true
    }

    /// The same chat template as chat's: the server formats `input` items as messages.
    fn template_tokens(&self) -> u32 {
        16
    }

    /// Off: the API has no `ignore_eos` (OpenAI answers 400 to an unknown parameter), and the
    /// models served behind it are reasoning models, which gpt-oss's Harmony format breaks
    /// when the end-of-sequence token is ignored.
    fn ignore_eos_default(&self) -> bool {
        false
    }

    fn reasoning_effort(&self) -> bool {
        true
    }

    /// `{"model","instructions"?,"input","max_output_tokens","stream","reasoning"?,…}`.
    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>) {
        body::open(out, req.model);
        match req.prompt {
            PromptRef::Text(t) => {
                out.extend_from_slice(b",\"input\":");
                body::json_str(out, t);
            }
            PromptRef::Messages(m) => {
                let rest = match m.split_first() {
                    Some((first, rest)) if first.role == "system" => {
                        out.extend_from_slice(b",\"instructions\":");
                        body::json_str(out, first.content);
                        rest
                    }
                    _ => m,
                };
                out.extend_from_slice(b",\"input\":");
                input_items(out, rest);
            }
        }
        out.extend_from_slice(b",\"max_output_tokens\":");
        // Writing into a Vec cannot fail.
        let _ = write!(out, "{}", req.max_tokens);
        out.extend_from_slice(if req.stream {
            b",\"stream\":true"
        } else {
            b",\"stream\":false"
        });
        if let Some(effort) = req.reasoning_effort {
            out.extend_from_slice(b",\"reasoning\":{\"effort\":");
            body::json_str(out, effort.as_str());
            out.push(b'}');
        }
        if req.ignore_eos {
            out.extend_from_slice(b",\"ignore_eos\":true");
        }
        body::extra_fields(out, req);
        out.push(b'}');
    }

    fn decode_event<'a>(&self, data: &'a str) -> Result<Event<'a>, ChunkError> {
        decode(data)
    }

    fn answers_whole(&self) -> bool {
        true
    }

    fn decode_generated(&self, body: &[u8]) -> Result<Generated, WholeError> {
        whole::decode(body)
    }
}

/// Messages as `input` items: `[{"role":…,"content":…},…]`.
fn input_items(out: &mut Vec<u8>, messages: &[Message<'_>]) {
    out.push(b'[');
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        if let Some(part) = m.tool {
            super::tool_turn::write_items(out, m, part);
            continue;
        }
        out.extend_from_slice(b"{\"role\":");
        body::json_str(out, m.role);
        out.extend_from_slice(b",\"content\":");
        body::json_str(out, m.content);
        out.push(b'}');
    }
    out.push(b']');
}

/// One event, the fields the measurement reads, each left as raw JSON until its type is known
/// (a `response` object is only read when the event ends the stream).
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    delta: Option<&'a RawValue>,
    #[serde(borrow)]
    response: Option<&'a RawValue>,
    #[serde(borrow)]
    item: Option<&'a RawValue>,
}

/// Decodes one event's data (see the module doc for the grammar).
fn decode(data: &str) -> Result<Event<'_>, ChunkError> {
    let wire: Wire<'_> = serde_json::from_str(data)?;
    let kind = wire
        .kind
        .and_then(|k| string(k).and_then(|s| s.raw()))
        .ok_or(type_error("type", "a string"))?;
    let info = match kind {
        "response.output_text.delta" => ChunkInfo {
            answer: delta(wire.delta)?,
            ..ChunkInfo::default()
        },
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => ChunkInfo {
            reasoning: delta(wire.delta)?,
            ..ChunkInfo::default()
        },
        // A function call's arguments, streamed: generated answer output, as chat's are.
        "response.function_call_arguments.delta" => {
            let mut info = ChunkInfo::default();
            info.tool_call.arguments = delta(wire.delta)?;
            info
        }
        // A function call item announced: its call id and name (a tool result names it).
        "response.output_item.added" => calls::added(wire.item),
        "response.completed" | "response.incomplete" => {
            return finished(wire.response, kind == "response.incomplete").map(Event::Last);
        }
        "response.failed" | "error" => ChunkInfo {
            error: true,
            ..ChunkInfo::default()
        },
        // The id a later turn names (`previous_response_id`); nothing else is read here.
        "response.created" => ChunkInfo {
            response_id: wire.response.and_then(response_id),
            ..ChunkInfo::default()
        },
        _ => ChunkInfo::default(),
    };
    Ok(Event::Chunk(info))
}

/// A delta's text: a string, or nothing for `null` or no delta.
fn delta(raw: Option<&RawValue>) -> Result<Option<JsonStr<'_>>, ChunkError> {
    match raw {
        None => Ok(None),
        Some(raw) => string(raw)
            .map(Some)
            .ok_or(type_error("delta", "a string or null")),
    }
}

/// The stream's last event: how the response ended, and its usage.
fn finished(response: Option<&RawValue>, incomplete: bool) -> Result<ChunkInfo<'_>, ChunkError> {
    #[derive(Deserialize)]
    struct Response<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        #[serde(borrow)]
        status: Option<&'a RawValue>,
        #[serde(borrow)]
        incomplete_details: Option<&'a RawValue>,
        #[serde(borrow)]
        usage: Option<&'a RawValue>,
    }
    let Some(raw) = response else {
        return Ok(ChunkInfo {
            finish_reason: Some(if incomplete {
                FinishReason::Other
            } else {
                FinishReason::Stop
            }),
            ..ChunkInfo::default()
        });
    };
    let r: Response<'_> =
        serde_json::from_str(raw.get()).map_err(|_| type_error("response", "an object"))?;
    let status = r.status.and_then(string).and_then(|s| s.raw());
    let error = status == Some("failed");
    let finish_reason = match status {
        Some("incomplete") => Some(incomplete_reason(r.incomplete_details)),
        _ if incomplete => Some(incomplete_reason(r.incomplete_details)),
        Some("completed") | None => Some(FinishReason::Stop),
        Some(_) => Some(FinishReason::Other),
    };
    Ok(ChunkInfo {
        finish_reason,
        usage: r.usage.map(usage).transpose()?.flatten(),
        error,
        response_id: r.id.and_then(string),
        ..ChunkInfo::default()
    })
}

/// `response.id` of a `response` object, when it is a string (anything else is no id); the
/// object itself is checked where it ends the stream, so a broken one here is no id either.
fn response_id(raw: &RawValue) -> Option<JsonStr<'_>> {
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
    }
    let head: Head<'_> = serde_json::from_str(raw.get()).ok()?;
    head.id.and_then(string)
}

mod whole;

pub use whole::MAX_ID_BYTES;

#[cfg(test)]
mod tests;
