//! What a streamed chunk decodes into ([`ChunkInfo`], its strings as [`JsonStr`]), shared by
//! the scanner and the serde_json decoder so that neither imports the other.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;

use super::escape::unescape_into;

/// One streamed event, as an API kind decodes it.
// Boxing the chunk would allocate once per event on the hot path; the event lives on the
// stack for one decode, so its size costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    /// An event carrying (some of) the response.
    Chunk(ChunkInfo<'a>),
    /// The event that ends the stream (`[DONE]`).
    Done,
    /// An event that carries the last of the response and ends the stream: an API whose
    /// final event is data rather than a `[DONE]` marker (the Responses API's
    /// `response.completed`). Nothing after it is read.
    Last(ChunkInfo<'a>),
}

/// Which event [`ApiKind::decode_event_into`](super::super::ApiKind::decode_event_into)
/// decoded; its chunk, when it has one, is in the caller's [`ChunkInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// [`Event::Chunk`].
    Chunk,
    /// [`Event::Done`].
    Done,
    /// [`Event::Last`].
    Last,
}

/// Why the server stopped generating: the first choice's last `finish_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A stop sequence or the end-of-sequence token.
    Stop,
    /// `max_tokens` (or the context) ran out.
    Length,
    /// The model answered with tool calls (a success: the answer is the calls).
    ToolCalls,
    /// Any other reason (`content_filter`, a server's own).
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
    /// Draft tokens proposed for the request (speculative decoding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_n: Option<u64>,
    /// Of them, accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_n_accepted: Option<u64>,
}

/// What one chunk says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkInfo<'a> {
    /// Generated answer text (`delta.content` for chat, `text` for completions).
    pub answer: Option<JsonStr<'a>>,
    /// Generated reasoning text (`delta.reasoning_content` or `delta.reasoning`).
    pub reasoning: Option<JsonStr<'a>>,
    /// The first tool call of `delta.tool_calls`: what it adds to the call's function
    /// name and to its JSON arguments.
    pub tool_call: ToolCallDelta<'a>,
    /// The other tool calls of the same delta (parallel calls sent together), in order:
    /// their names and arguments are output too. Empty (no allocation) for the usual delta of
    /// one call; the scanner leaves a delta of several to the serde_json decoder.
    pub more_tool_calls: Vec<ToolCallDelta<'a>>,
    /// The first choice's `finish_reason`, when not `null`.
    pub finish_reason: Option<FinishReason>,
    pub usage: Option<Usage>,
    /// llama.cpp's per-request `timings` (its final chunk).
    pub timings: Option<ServerTimings>,
    /// The server reported an error inside the stream.
    pub error: bool,
    /// The server's id for the response (the Responses API's `response.id`, in its
    /// `response.created` and `response.completed` events), borrowed like the text.
    pub response_id: Option<JsonStr<'a>>,
}

impl ChunkInfo<'_> {
    /// A chunk counts as a token arrival only when it carries generated text: role-only first
    /// chunks and empty deltas with a `finish_reason` do not.
    pub fn has_output(&self) -> bool {
        self.has_answer() || self.reasoning.as_ref().is_some_and(|s| !s.is_empty())
    }
    /// Answer text or a tool call's name or arguments: a tool call is the model's answer.
    pub fn has_answer(&self) -> bool {
        self.answer.as_ref().is_some_and(|s| !s.is_empty())
            || self.tool_call.has_output()
            || self.more_tool_calls.iter().any(ToolCallDelta::has_output)
    }

    /// Every tool call the chunk carries: the first, then the others.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallDelta<'_>> {
        std::iter::once(&self.tool_call).chain(&self.more_tool_calls)
    }
}

/// What one streamed delta adds to a tool call it names (an element of `delta.tool_calls`):
/// the function's name (usually whole, in the call's first delta) and a fragment of its JSON
/// arguments, each borrowed from the chunk like the answer text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCallDelta<'a> {
    /// The call's `id` (chat) or `call_id` (the Responses API's function call item): in the
    /// call's first delta only; a tool result names the call by it. Not output.
    pub id: Option<JsonStr<'a>>,
    /// `function.name`.
    pub name: Option<JsonStr<'a>>,
    /// `function.arguments`: a fragment of the arguments' JSON text.
    pub arguments: Option<JsonStr<'a>>,
}

impl ToolCallDelta<'_> {
    /// A non-empty name or arguments fragment: generated output.
    pub fn has_output(&self) -> bool {
        let full = |s: &Option<JsonStr<'_>>| s.as_ref().is_some_and(|s| !s.is_empty());
        full(&self.name) || full(&self.arguments)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// `prompt_tokens_details.cached_tokens`: prompt tokens served from the server's prefix
    /// cache (vLLM, SGLang, llama.cpp, OpenAI).
    pub cached_tokens: Option<u64>,
    /// Output tokens the model spent reasoning, part of `completion_tokens`
    /// (`completion_tokens_details.reasoning_tokens`; the Responses API's
    /// `output_tokens_details.reasoning_tokens`), when the server said.
    pub reasoning_tokens: Option<u64>,
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
    pub(super) fn from_plain(raw: &'a str) -> Self {
        JsonStr(Repr::Plain(raw))
    }
    pub(super) fn from_escaped(raw: &'a str) -> Self {
        JsonStr(Repr::Escaped(raw))
    }
    pub(super) fn decoded(s: String) -> Self {
        JsonStr(Repr::Decoded(s))
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

/// `stop`, `length` and `tool_calls` are what the measurement tells apart; everything else
/// (`content_filter`, a server's own) is `Other`.
pub(super) fn finish_reason_of(s: &JsonStr<'_>) -> FinishReason {
    match &*s.decode() {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    }
}
