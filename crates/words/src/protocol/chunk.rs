//! The event grammar of the OpenAI streaming APIs (chat and completions share it): one
//! streamed chunk (`data: {...}`) decoded into what the measurement needs — the first choice's
//! generated text (answer and reasoning) and `finish_reason`, the server's `usage` (with cached
//! prompt tokens), llama.cpp's `timings`, and whether the chunk is an in-stream `error` — and
//! `[DONE]`, which ends the stream. [`ChunkInfo`] is also what any other API's events decode
//! into, so the client measures every API alike.
//!
//! Two decoders, one answer. [`scan_chunk`] is a single pass that borrows every string from the
//! chunk (escapes are decoded only when the caller asks) and allocates nothing; when it meets
//! anything it is not sure of it gives up, and [`parse_chunk`] decodes the chunk again with
//! [`parse_chunk_value`], a full `serde_json::Value` decode that defines the rules. The rules:
//!
//! - the chunk is a JSON object; unknown keys anywhere are ignored, a repeated key counts once
//!   (the last);
//! - `choices` is `null` or an array; only its first element (an object) is read;
//! - answer: `delta.content`, else `text` (completions); reasoning: `delta.reasoning_content`,
//!   else `delta.reasoning`; each a string or `null`, `delta` an object or `null`;
//! - tool calls: `delta.tool_calls` is `null` or an array whose elements are objects; of each
//!   element, `function` is `null` or an object whose `name` and `arguments` are each a
//!   string or `null` (a non-empty one is generated answer output: a first tool-call delta is
//!   a first token; every call of a delta counts, parallel calls sent together included);
//! - `usage` is `null` or an object whose `prompt_tokens` and `completion_tokens` (0 when
//!   absent) are unsigned integers; `usage.prompt_tokens_details.cached_tokens` is read when
//!   present as one, `usage.completion_tokens_details.reasoning_tokens` likewise;
//! - `finish_reason`, `timings` and `cached_tokens` are informational: a value of an unexpected
//!   type leaves them absent (`Other` for a `finish_reason`) rather than failing the request;
//! - any non-null top-level `error` marks the chunk as an error.

mod escape;
mod info;
mod scan;

pub use info::{
    ChunkError, ChunkInfo, Event, EventKind, FinishReason, JsonStr, ServerTimings, ToolCallDelta,
    Usage,
};
pub use scan::memo::ChunkMemo;
pub(super) use scan::plain_run;

use serde_json::{Map, Value};

use info::finish_reason_of;

/// An OpenAI streaming event: `[DONE]`, or a chunk.
pub(super) fn openai_event(data: &str) -> Result<Event<'_>, ChunkError> {
    if data == "[DONE]" {
        return Ok(Event::Done);
    }
    parse_chunk(data).map(Event::Chunk)
}

/// [`openai_event`] into the caller's `info` (as the caller made it: default), so that no
/// chunk is moved on its way to the client: the scanner fills `info` where it lies, and only
/// a chunk it leaves to serde_json is written over it. `memo` is the stream's: what its
/// chunks repeat is validated once (see [`ChunkMemo`]).
pub(super) fn openai_event_into<'a>(
    data: &'a str,
    info: &mut ChunkInfo<'a>,
    memo: &mut ChunkMemo,
) -> Result<EventKind, ChunkError> {
    if data == "[DONE]" {
        return Ok(EventKind::Done);
    }
    if scan::memo::scan_with(data, info, memo).is_none() {
        // The scanner may have filled some fields before it gave up: all are written anew.
        *info = parse_chunk_value(data)?;
    }
    Ok(EventKind::Chunk)
}

/// The string a JSON string literal whose escapes serde_json has validated is (quotes
/// included, as a raw value holds it), borrowed with its escapes; `None` for any other value.
/// How an API with a decoder of its own (the Responses API's) borrows its text.
pub(super) fn raw_json_string(literal: &str) -> Option<JsonStr<'_>> {
    let inner = literal.strip_prefix('"')?.strip_suffix('"')?;
    Some(if memchr::memchr(b'\\', inner.as_bytes()).is_some() {
        JsonStr::from_escaped(inner)
    } else {
        JsonStr::from_plain(inner)
    })
}

/// Decodes one `data:` payload (not `[DONE]`): by the scanner when it is sure, else by
/// serde_json.
pub fn parse_chunk(data: &str) -> Result<ChunkInfo<'_>, ChunkError> {
    let mut info = ChunkInfo::default();
    match scan::scan(data, &mut info) {
        Some(()) => Ok(info),
        None => parse_chunk_value(data),
    }
}

/// The scanner alone: `None` when it is not sure of the answer (every invalid chunk among
/// them), which [`parse_chunk`] then leaves to [`parse_chunk_value`].
pub fn scan_chunk(data: &str) -> Option<ChunkInfo<'_>> {
    let mut info = ChunkInfo::default();
    scan::scan(data, &mut info).map(|()| info)
}

/// Decodes a chunk through a full `serde_json::Value`: the rules in the module doc, spelled
/// out; the scanner's fallback and its reference in tests.
pub fn parse_chunk_value(data: &str) -> Result<ChunkInfo<'static>, ChunkError> {
    let value: Value = serde_json::from_str(data)?;
    let chunk = value.as_object().ok_or(ChunkError::NotAnObject)?;
    let mut info = ChunkInfo {
        usage: usage_of(chunk.get("usage"))?,
        timings: chunk
            .get("timings")
            .and_then(Value::as_object)
            .map(timings_of),
        error: chunk.get("error").is_some_and(|e| !e.is_null()),
        ..ChunkInfo::default()
    };
    let choice = match chunk.get("choices") {
        None | Some(Value::Null) => None,
        Some(Value::Array(choices)) => choices.first(),
        Some(_) => return Err(type_error("choices", "an array or null")),
    };
    if let Some(choice) = choice {
        let choice = choice
            .as_object()
            .ok_or(type_error("choices[0]", "an object"))?;
        let delta = match choice.get("delta") {
            None | Some(Value::Null) => None,
            Some(Value::Object(delta)) => Some(delta),
            Some(_) => return Err(type_error("choices[0].delta", "an object or null")),
        };
        let field = |name, path| delta.map_or(Ok(None), |d| opt_str(d, name, path));
        let content = field("content", "choices[0].delta.content")?;
        let reasoning_content = field("reasoning_content", "choices[0].delta.reasoning_content")?;
        let reasoning = field("reasoning", "choices[0].delta.reasoning")?;
        let text = opt_str(choice, "text", "choices[0].text")?;
        match delta.and_then(|d| d.get("tool_calls")) {
            None | Some(Value::Null) => {}
            Some(Value::Array(calls)) => {
                let mut calls = calls.iter().map(tool_call_of);
                if let Some(first) = calls.next() {
                    info.tool_call = first?;
                }
                info.more_tool_calls = calls.collect::<Result<_, _>>()?;
            }
            Some(_) => {
                return Err(type_error(
                    "choices[0].delta.tool_calls",
                    "an array or null",
                ));
            }
        }
        info.answer = content.or(text);
        info.reasoning = reasoning_content.or(reasoning);
        info.finish_reason = match choice.get("finish_reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(finish_reason_of(&JsonStr::from_plain(s))),
            Some(_) => Some(FinishReason::Other),
        };
    }
    Ok(info)
}

fn type_error(field: &'static str, expected: &'static str) -> ChunkError {
    ChunkError::Type { field, expected }
}

fn opt_str(
    obj: &Map<String, Value>,
    name: &str,
    path: &'static str,
) -> Result<Option<JsonStr<'static>>, ChunkError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(JsonStr::decoded(s.clone()))),
        Some(_) => Err(type_error(path, "a string or null")),
    }
}

/// An element of `delta.tool_calls`.
fn tool_call_of(call: &Value) -> Result<ToolCallDelta<'static>, ChunkError> {
    let call = call
        .as_object()
        .ok_or(type_error("choices[0].delta.tool_calls[]", "an object"))?;
    // A non-string id is no id (the scanner gives it up to this decoder): lenient, as the
    // id only matters to a session that answers the call.
    let id = match call.get("id") {
        Some(Value::String(s)) => Some(JsonStr::decoded(s.clone())),
        _ => None,
    };
    let function = match call.get("function") {
        None | Some(Value::Null) => {
            return Ok(ToolCallDelta {
                id,
                ..ToolCallDelta::default()
            });
        }
        Some(Value::Object(f)) => f,
        Some(_) => {
            return Err(type_error(
                "choices[0].delta.tool_calls[].function",
                "an object or null",
            ));
        }
    };
    Ok(ToolCallDelta {
        id,
        name: opt_str(
            function,
            "name",
            "choices[0].delta.tool_calls[].function.name",
        )?,
        arguments: opt_str(
            function,
            "arguments",
            "choices[0].delta.tool_calls[].function.arguments",
        )?,
    })
}

fn usage_of(usage: Option<&Value>) -> Result<Option<Usage>, ChunkError> {
    let usage = match usage {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(u)) => u,
        Some(_) => return Err(type_error("usage", "an object or null")),
    };
    let count = |name, path| match usage.get(name) {
        None => Ok(0),
        Some(v) => v.as_u64().ok_or(type_error(path, "an unsigned integer")),
    };
    Ok(Some(Usage {
        prompt_tokens: count("prompt_tokens", "usage.prompt_tokens")?,
        completion_tokens: count("completion_tokens", "usage.completion_tokens")?,
        cached_tokens: usage
            .get("prompt_tokens_details")
            .and_then(Value::as_object)
            .and_then(|d| d.get("cached_tokens"))
            .and_then(Value::as_u64),
        reasoning_tokens: usage
            .get("completion_tokens_details")
            .and_then(Value::as_object)
            .and_then(|d| d.get("reasoning_tokens"))
            .and_then(Value::as_u64),
    }))
}

fn timings_of(t: &Map<String, Value>) -> ServerTimings {
    let uint = |name| t.get(name).and_then(Value::as_u64);
    let float = |name| t.get(name).and_then(Value::as_f64);
    ServerTimings {
        prompt_n: uint("prompt_n"),
        prompt_ms: float("prompt_ms"),
        predicted_n: uint("predicted_n"),
        predicted_ms: float("predicted_ms"),
        cache_n: uint("cache_n"),
        draft_n: uint("draft_n"),
        draft_n_accepted: uint("draft_n_accepted"),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
#[path = "chunk/memo_tests.rs"]
mod memo_tests;
