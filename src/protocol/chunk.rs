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
//! - `usage` is `null` or an object whose `prompt_tokens` and `completion_tokens` (0 when
//!   absent) are unsigned integers; `usage.prompt_tokens_details.cached_tokens` is read when
//!   present as one;
//! - `finish_reason`, `timings` and `cached_tokens` are informational: a value of an unexpected
//!   type leaves them absent (`Other` for a `finish_reason`) rather than failing the request;
//! - any non-null top-level `error` marks the chunk as an error.

mod scan;

pub(super) use scan::plain_run;

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

/// One streamed event, as an API kind decodes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// An event carrying (some of) the response.
    Chunk(ChunkInfo<'a>),
    /// The event that ends the stream (`[DONE]`).
    Done,
}

/// An OpenAI streaming event: `[DONE]`, or a chunk.
pub(super) fn openai_event(data: &str) -> Result<Event<'_>, ChunkError> {
    if data == "[DONE]" {
        return Ok(Event::Done);
    }
    parse_chunk(data).map(Event::Chunk)
}

/// Why the server stopped generating: the first choice's last `finish_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A stop sequence or the end-of-sequence token.
    Stop,
    /// `max_tokens` (or the context) ran out.
    Length,
    /// Any other reason (`tool_calls`, `content_filter`, a server's own).
    Other,
}

/// llama.cpp's own per-request timings (the `timings` object of its final chunk).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ServerTimings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_n: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_n: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_ms: Option<f64>,
    /// Prompt tokens reused from the server's cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_n: Option<u64>,
}

/// What one chunk says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkInfo<'a> {
    /// Generated answer text (`delta.content` for chat, `text` for completions).
    pub answer: Option<JsonStr<'a>>,
    /// Generated reasoning text (`delta.reasoning_content` or `delta.reasoning`).
    pub reasoning: Option<JsonStr<'a>>,
    /// The first choice's `finish_reason`, when not `null`.
    pub finish_reason: Option<FinishReason>,
    pub usage: Option<Usage>,
    /// llama.cpp's per-request `timings` (its final chunk).
    pub timings: Option<ServerTimings>,
    /// The server reported an error inside the stream.
    pub error: bool,
}

impl ChunkInfo<'_> {
    /// A chunk counts as a token arrival only when it carries generated text: role-only first
    /// chunks and empty deltas with a `finish_reason` do not.
    pub fn has_output(&self) -> bool {
        self.has_answer() || self.reasoning.as_ref().is_some_and(|s| !s.is_empty())
    }
    pub fn has_answer(&self) -> bool {
        self.answer.as_ref().is_some_and(|s| !s.is_empty())
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `prompt_tokens_details.cached_tokens`: prompt tokens served from the server's prefix
    /// cache (vLLM, SGLang, llama.cpp, OpenAI).
    pub cached_tokens: Option<u64>,
}

/// Why a chunk could not be decoded (the request counts as `malformed`).
#[derive(Debug, thiserror::Error)]
pub enum ChunkError {
    #[error("chunk is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("chunk is not a JSON object")]
    NotAnObject,
    #[error("`{field}` is not {expected}")]
    Type {
        field: &'static str,
        expected: &'static str,
    },
}

/// A JSON string from a chunk. Borrowed from the chunk with its escapes still in place when the
/// scanner read it; decoded (owned) when serde_json did.
#[derive(Clone)]
pub struct JsonStr<'a>(Repr<'a>);

#[derive(Clone)]
enum Repr<'a> {
    /// The text between the quotes, without escapes: the string itself.
    Plain(&'a str),
    /// The text between the quotes, with escapes the scanner has validated.
    Escaped(&'a str),
    /// Decoded by serde_json.
    Decoded(String),
}

impl<'a> JsonStr<'a> {
    fn from_plain(raw: &'a str) -> Self {
        JsonStr(Repr::Plain(raw))
    }
    fn from_escaped(raw: &'a str) -> Self {
        JsonStr(Repr::Escaped(raw))
    }

    /// Every escape decodes to at least one character, so the raw text tells emptiness.
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            Repr::Plain(s) | Repr::Escaped(s) => s.is_empty(),
            Repr::Decoded(s) => s.is_empty(),
        }
    }

    /// The JSON text between the quotes (escapes not decoded), when borrowed from the chunk.
    pub fn raw(&self) -> Option<&'a str> {
        match self.0 {
            Repr::Plain(s) | Repr::Escaped(s) => Some(s),
            Repr::Decoded(_) => None,
        }
    }

    /// Appends the decoded string to `out` (a buffer the caller reuses).
    pub fn push_to(&self, out: &mut String) {
        match &self.0 {
            Repr::Plain(s) => out.push_str(s),
            Repr::Escaped(s) => unescape_into(s, out),
            Repr::Decoded(s) => out.push_str(s),
        }
    }

    /// The decoded string; allocates only when it has escapes.
    pub fn decode(&self) -> Cow<'_, str> {
        match &self.0 {
            Repr::Plain(s) => Cow::Borrowed(s),
            Repr::Escaped(s) => {
                let mut out = String::with_capacity(s.len());
                unescape_into(s, &mut out);
                Cow::Owned(out)
            }
            Repr::Decoded(s) => Cow::Borrowed(s),
        }
    }
}

/// Equal when they decode to the same string, however each was read.
impl PartialEq for JsonStr<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.decode() == other.decode()
    }
}

impl fmt::Debug for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.decode(), f)
    }
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
        Some(Value::String(s)) => Ok(Some(JsonStr(Repr::Decoded(s.clone())))),
        Some(_) => Err(type_error(path, "a string or null")),
    }
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
    }
}

/// `stop` and `length` are what the measurement tells apart; everything else (`tool_calls`,
/// `content_filter`, a server's own) is `Other`.
fn finish_reason_of(s: &JsonStr<'_>) -> FinishReason {
    match &*s.decode() {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        _ => FinishReason::Other,
    }
}

/// Decodes the escapes of a string the scanner validated. Should the text be invalid anyway,
/// the bad escape becomes U+FFFD rather than a panic.
fn unescape_into(raw: &str, out: &mut String) {
    let mut rest = raw;
    while let Some(i) = memchr::memchr(b'\\', rest.as_bytes()) {
        out.push_str(&rest[..i]);
        let (ch, used) = unescape_one(&rest.as_bytes()[i + 1..]);
        out.push(ch);
        rest = rest.get(i + 1 + used..).unwrap_or_default();
    }
    out.push_str(rest);
}

/// The character an escape (the bytes after its backslash) stands for, and the bytes it used.
fn unescape_one(esc: &[u8]) -> (char, usize) {
    let simple = match esc.first() {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => return unescape_unicode(esc),
        _ => return (char::REPLACEMENT_CHARACTER, 0),
    };
    (simple, 1)
}

/// `u` and four hex digits, and for a leading surrogate the `\u` of its trailing half.
fn unescape_unicode(esc: &[u8]) -> (char, usize) {
    let hex = |at: usize| {
        esc.get(at..at + 4)?
            .iter()
            .try_fold(0u32, |n, &d| Some(n << 4 | u32::from(scan::hex_digit(d)?)))
    };
    let Some(first) = hex(1) else {
        return (char::REPLACEMENT_CHARACTER, 1);
    };
    if (0xD800..0xDC00).contains(&first)
        && esc.get(5..7) == Some(b"\\u")
        && let Some(second @ 0xDC00..0xE000) = hex(7)
    {
        let code = 0x1_0000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return (
            char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
            11,
        );
    }
    (
        char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER),
        5,
    )
}

#[cfg(test)]
mod tests;
