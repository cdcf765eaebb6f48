//! The OpenAI wire format as vLLM speaks it: request decoding (lenient, unknown fields
//! accepted) with each API's prompt under its own key, the [`SimApi`] trait each API's side of
//! the simulator implements (one file per API in `apis/`, listed in `apis.rs`), and the
//! pre-serialized SSE chunk pieces the scheduler writes tokens into without building JSON per
//! token (`Framing`, in `framing.rs`).

use std::fmt;
use std::marker::PhantomData;

use bytes::BytesMut;
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};

use super::tokens::PromptSink;
pub(crate) use super::tool_results::ToolResults;
use super::tools::RawTools;
pub(crate) use super::usage::{Finish, FinishReason, Timings};
use crate::protocol::ReasoningEffort;

/// The simulator's side of one API kind (see `protocol::ApiKind`): how its requests read and
/// its responses look. Found by the protocol's name for it.
pub(crate) trait SimApi: Sync {
    /// The API's name in the protocol registry.
    fn name(&self) -> &'static str;
    /// Decodes a request body; with `collect_ids` the prompt's token ids are kept.
    fn parse(&self, body: &[u8], collect_ids: bool) -> Result<GenRequest, BadRequest>;
    /// How its streamed events are written.
    fn stream(&self) -> Stream;
    /// A non-streamed answer's body.
    fn whole(&self, w: &Whole<'_>) -> serde_json::Value;
    /// The pieces of a streamed tool-calling answer, for an API that can give one.
    fn tool_stream(&self) -> Option<&'static ChoiceStream> {
        None
    }
    /// A streamed tool-calling answer as typed events, for an event-stream API that can give
    /// one (the Responses API's function call items).
    fn tool_events(&self) -> Option<&'static dyn EventStream> {
        None
    }
}

/// How an API's stream is written: OpenAI chunks from fixed pieces, or typed events the API
/// writes itself.
#[derive(Clone, Copy)]
pub(crate) enum Stream {
    /// Chunks carrying `choices[0]` (chat, completions), ended by `[DONE]`.
    Choices(&'static ChoiceStream),
    /// Typed events (the Responses API's), each written by the API.
    Events(&'static dyn EventStream),
}

/// An API whose stream is typed events: it writes the events of each token itself.
pub(crate) trait EventStream: Sync {
    /// Writes everything one emitted token adds to the stream: the events that open the
    /// response or a new output item before it, its delta, and after the last token the
    /// events that end the response.
    fn token(&self, buf: &mut BytesMut, t: &TokenEvent<'_>);
    /// An event whose JSON is cut off (the malformed-SSE fault).
    fn garbage(&self, buf: &mut BytesMut);
}

/// One emitted token, for an [`EventStream`].
pub(crate) struct TokenEvent<'a> {
    /// The request's number (its response's id).
    pub id: u64,
    /// Unix seconds the response was created.
    pub created: u64,
    /// The model's name as a JSON string, quotes included.
    pub model_json: &'a str,
    pub word: &'a str,
    /// The token's place in the output, from 0.
    pub index: u64,
    /// The response's reasoning tokens: those before `reasoning` are reasoning.
    pub reasoning: u64,
    /// Set on the last token.
    pub finish: Option<&'a Finish>,
    /// Usage carries the cached prompt tokens (`prefix-cache`).
    pub usage_details: bool,
    /// A tool-calling answer's function name, as a JSON string (quotes included).
    pub tool: Option<&'a str>,
}

/// The fixed pieces of an OpenAI-style stream whose events carry `choices[0]`.
pub(crate) struct ChoiceStream {
    /// Before the request's number in each event's `id` (`chatcmpl-sim-`).
    pub id_prefix: &'static str,
    /// Each event's `object`.
    pub object: &'static str,
    /// The choice up to the opening quote of the token's text.
    pub open: &'static [u8],
    /// After the token's text, up to the `finish_reason`'s value.
    pub close: &'static [u8],
    /// A choice sent once before the first token (chat's role announcement).
    pub first: Option<&'static [u8]>,
    /// The choice up to the opening quote of a reasoning token's text (chat's
    /// `delta.reasoning_content`); `None` streams reasoning as answer text.
    pub open_reasoning: Option<&'static [u8]>,
}

/// What a non-streamed answer says.
pub(crate) struct Whole<'a> {
    pub id: u64,
    pub created: u64,
    pub model: &'a str,
    /// The answer's text.
    pub text: &'a str,
    /// The reasoning's text (its first tokens, before the answer).
    pub reasoning: &'a str,
    /// Output tokens spent reasoning.
    pub reasoning_tokens: u64,
    pub finish: &'a str,
    pub usage: serde_json::Value,
    /// A pooling request's inputs: the results its answer holds.
    pub inputs: u32,
    /// The simulator's embedding size (`embedding-dim`).
    pub embedding_dim: u32,
    /// The function the answer calls, if it is a tool call (`tools.rs`): `text` is then its
    /// arguments' words, and the answer is the call (`tools::whole_call`).
    pub tool: Option<&'a str>,
}

/// An API's prompt as its requests carry it, under its own key.
pub(crate) trait PromptField: DeserializeOwned {
    /// The body's key for it (`messages`, `prompt`).
    const KEY: &'static str;
    /// A key whose text goes before the prompt as a system message (the Responses API's
    /// `instructions`), if the API has one.
    const CONTEXT_KEY: Option<&'static str> = None;
    /// Feeds its tokens into `sink`.
    fn feed(&self, sink: &mut PromptSink);
    /// The tool results the prompt carries, or why they are refused (a result naming no
    /// earlier call of the request).
    fn tool_results(&self) -> Result<ToolResults, BadRequest> {
        Ok(ToolResults::default())
    }
    /// [`tool_results`](Self::tool_results) of a request continuing a stored response: also
    /// the ids of results naming no call of the request (the stored response's, perhaps).
    fn tool_results_continuing(&self) -> Result<(ToolResults, Vec<String>), BadRequest> {
        self.tool_results().map(|r| (r, Vec::new()))
    }
}

#[derive(Deserialize)]
struct RawStreamOptions {
    include_usage: Option<bool>,
}

/// The Responses API's `reasoning` object.
#[derive(Deserialize)]
struct RawReasoning {
    effort: Option<String>,
}

/// A generation request's body: the fields every API shares, and the prompt under `P::KEY`.
/// Each field is `None` when absent or `null`; a repeated key is an error, as serde's derive
/// makes it.
struct RawRequest<P> {
    prompt: Option<P>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<RawStreamOptions>,
    ignore_eos: Option<bool>,
    min_tokens: Option<u64>,
    /// llama.cpp's per-request switch for its prompt cache.
    cache_prompt: Option<bool>,
    tools: Option<RawTools>,
    /// The Responses API's names for the length and the system prompt.
    max_output_tokens: Option<u64>,
    context: Option<String>,
    reasoning_effort: Option<String>,
    reasoning: Option<RawReasoning>,
    model: Option<String>,
    priority: Option<i64>,
    /// The Responses API's response store.
    store: Option<bool>,
    previous_response_id: Option<String>,
}

/// The keys a generation request's body is read by.
#[derive(Clone, Copy)]
enum Key {
    Prompt,
    MaxTokens,
    MaxCompletionTokens,
    Stream,
    StreamOptions,
    IgnoreEos,
    MinTokens,
    CachePrompt,
    Tools,
    MaxOutputTokens,
    Context,
    ReasoningEffort,
    Reasoning,
    Model,
    Priority,
    Store,
    PreviousResponseId,
    Other,
}

/// Reads a key without allocating, knowing the API's prompt key and context key.
struct KeySeed(&'static str, Option<&'static str>);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            k if k == self.0 => Key::Prompt,
            k if Some(k) == self.1 => Key::Context,
            "max_tokens" => Key::MaxTokens,
            "max_completion_tokens" => Key::MaxCompletionTokens,
            "stream" => Key::Stream,
            "stream_options" => Key::StreamOptions,
            "ignore_eos" => Key::IgnoreEos,
            "min_tokens" => Key::MinTokens,
            "cache_prompt" => Key::CachePrompt,
            "tools" => Key::Tools,
            "max_output_tokens" => Key::MaxOutputTokens,
            "reasoning_effort" => Key::ReasoningEffort,
            "reasoning" => Key::Reasoning,
            "model" => Key::Model,
            "priority" => Key::Priority,
            "store" => Key::Store,
            "previous_response_id" => Key::PreviousResponseId,
            _ => Key::Other,
        })
    }
}

impl<'de, P: PromptField> Deserialize<'de> for RawRequest<P> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RequestVisitor(PhantomData))
    }
}

struct RequestVisitor<P>(PhantomData<P>);

/// One field's value, once: a second occurrence of the key is an error.
fn once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<Option<T>>,
    map: &mut A,
    name: &'static str,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de, P: PromptField> Visitor<'de> for RequestVisitor<P> {
    type Value = RawRequest<P>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRequest<P>, A::Error> {
        let (mut prompt, mut max, mut max_completion, mut stream) = (None, None, None, None);
        let (mut options, mut ignore_eos, mut min, mut cache) = (None, None, None, None);
        let (mut tools, mut model, mut priority) = (None, None, None);
        let (mut max_output, mut context, mut effort, mut reasoning) = (None, None, None, None);
        let (mut store, mut previous) = (None, None);
        while let Some(key) = map.next_key_seed(KeySeed(P::KEY, P::CONTEXT_KEY))? {
            match key {
                Key::Prompt => once(&mut prompt, &mut map, P::KEY)?,
                Key::MaxTokens => once(&mut max, &mut map, "max_tokens")?,
                Key::MaxCompletionTokens => {
                    once(&mut max_completion, &mut map, "max_completion_tokens")?
                }
                Key::Stream => once(&mut stream, &mut map, "stream")?,
                Key::StreamOptions => once(&mut options, &mut map, "stream_options")?,
                Key::IgnoreEos => once(&mut ignore_eos, &mut map, "ignore_eos")?,
                Key::MinTokens => once(&mut min, &mut map, "min_tokens")?,
                Key::CachePrompt => once(&mut cache, &mut map, "cache_prompt")?,
                Key::Tools => once(&mut tools, &mut map, "tools")?,
                Key::MaxOutputTokens => once(&mut max_output, &mut map, "max_output_tokens")?,
                Key::Context => once(&mut context, &mut map, "instructions")?,
                Key::ReasoningEffort => once(&mut effort, &mut map, "reasoning_effort")?,
                Key::Reasoning => once(&mut reasoning, &mut map, "reasoning")?,
                Key::Model => once(&mut model, &mut map, "model")?,
                Key::Priority => once(&mut priority, &mut map, "priority")?,
                Key::Store => once(&mut store, &mut map, "store")?,
                Key::PreviousResponseId => once(&mut previous, &mut map, "previous_response_id")?,
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(RawRequest {
            prompt: prompt.flatten(),
            max_tokens: max.flatten(),
            max_completion_tokens: max_completion.flatten(),
            stream: stream.flatten(),
            stream_options: options.flatten(),
            ignore_eos: ignore_eos.flatten(),
            min_tokens: min.flatten(),
            cache_prompt: cache.flatten(),
            tools: tools.flatten(),
            max_output_tokens: max_output.flatten(),
            context: context.flatten(),
            reasoning_effort: effort.flatten(),
            reasoning: reasoning.flatten(),
            model: model.flatten(),
            priority: priority.flatten(),
            store: store.flatten(),
            previous_response_id: previous.flatten(),
        })
    }
}

/// What the simulator needs from a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GenRequest {
    pub prompt_tokens: u64,
    pub max_tokens: Option<u64>,
    pub min_tokens: u64,
    pub ignore_eos: bool,
    pub stream: bool,
    pub include_usage: bool,
    /// The prompt's token ids, collected only when asked (prefix cache).
    pub prompt_ids: Vec<u32>,
    /// llama.cpp's `cache_prompt` (default true): false keeps the request out of the prefix
    /// cache.
    pub cache_prompt: bool,
    /// The first function tool the request offers (`tools[…].function.name`).
    pub tool: Option<String>,
    /// A pooling request's inputs (texts, or documents paired with a query), one result each
    /// in its answer; 0 for a generation request.
    pub inputs: u32,
    /// The reasoning effort asked for (chat's `reasoning_effort`, the Responses API's
    /// `reasoning.effort`); an unknown value is ignored.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The model the request names, when it names one.
    pub model: Option<String>,
    /// vLLM's `priority`: lower is served first (default 0).
    pub priority: i64,
    /// The tool results the prompt carries (chat's `tool` messages, the Responses API's
    /// `function_call_output` items).
    pub tool_results: ToolResults,
    /// The Responses API's `store` (default false here; see `store.rs`), and the stored
    /// response the request continues.
    pub store: bool,
    pub previous_response_id: Option<String>,
    /// A request continuing a stored response: the call ids its `function_call_output` items
    /// name that no call of the request made, each to be a call of the stored response
    /// (checked by `store::asked`).
    pub answered: Vec<String>,
}

/// A 400 answer: the message and the offending parameter, if one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BadRequest {
    pub message: String,
    pub param: Option<&'static str>,
}

/// Decodes a generation request whose prompt is a `P`; with `collect_ids` the prompt's token
/// ids are kept.
pub(crate) fn parse<P: PromptField>(
    body: &[u8],
    collect_ids: bool,
) -> Result<GenRequest, BadRequest> {
    let raw: RawRequest<P> = serde_json::from_slice(body).map_err(|e| BadRequest {
        message: format!("invalid request body: {e}"),
        param: None,
    })?;
    let mut sink = if collect_ids {
        PromptSink::collecting()
    } else {
        PromptSink::counting()
    };
    let prompt = raw.prompt.ok_or(BadRequest {
        message: format!("missing required field `{}`", P::KEY),
        param: Some(P::KEY),
    })?;
    if let Some(context) = &raw.context {
        sink.message_start("system");
        sink.text(context);
    }
    let (tool_results, answered) = if raw.previous_response_id.is_some() {
        prompt.tool_results_continuing()?
    } else {
        (prompt.tool_results()?, Vec::new())
    };
    prompt.feed(&mut sink);
    let effort = raw
        .reasoning_effort
        .or(raw.reasoning.and_then(|r| r.effort));
    Ok(GenRequest {
        prompt_tokens: sink.count(),
        max_tokens: raw
            .max_completion_tokens
            .or(raw.max_output_tokens)
            .or(raw.max_tokens),
        min_tokens: raw.min_tokens.unwrap_or(0),
        ignore_eos: raw.ignore_eos.unwrap_or(false),
        stream: raw.stream.unwrap_or(false),
        include_usage: raw
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        prompt_ids: sink.into_ids(),
        cache_prompt: raw.cache_prompt.unwrap_or(true),
        tool: raw.tools.and_then(RawTools::first_name),
        inputs: 0,
        reasoning_effort: effort.as_deref().and_then(ReasoningEffort::from_name),
        model: raw.model,
        priority: raw.priority.unwrap_or(0),
        tool_results,
        store: raw.store.unwrap_or(false),
        previous_response_id: raw.previous_response_id,
        answered,
    })
}

/// An OpenAI-style error body: `{"error":{"message","type","param","code"}}`.
pub(crate) fn error_body(status: u16, kind: &str, message: &str, param: Option<&str>) -> String {
    serde_json::json!({
        "error": { "message": message, "type": kind, "param": param, "code": status }
    })
    .to_string()
}

#[cfg(test)]
mod tests;
