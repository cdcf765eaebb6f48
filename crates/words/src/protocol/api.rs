//! What an API kind is: the [`ApiKind`] trait each API's file implements, and [`Api`], the
//! small copyable handle to one registered kind that scenarios, plans, results and the client
//! carry. The registry itself, and everything that reads it (names, parsing, the JSON Schema),
//! is in `protocol.rs`.

use std::fmt;
use std::hash::{Hash, Hasher};

use super::body::Request;
use super::chunk::{ChunkError, ChunkInfo, ChunkMemo, Event, EventKind};
use super::generated::Generated;
use super::pooled::{Pooled, WholeError};

/// One API a target may speak: everything about it that is not the same for every API. Each
/// implementation is one file beside this one, registered once in [`super::REGISTRY`]; the
/// simulator's side of it is a file of its own under `crates/sim/src/`, found by [`name`](Self::name).
pub trait ApiKind: Send + Sync + 'static {
    /// The name a scenario writes (`api "chat"`), `--api` takes and results record.
    fn name(&self) -> &'static str;

    /// What is posted where, one line: the JSON Schema's description of the name.
    fn help(&self) -> &'static str;

    /// The path below the base URL requests are posted to (`/chat/completions`).
    fn path(&self) -> &'static str;

    /// Whether a request carries a conversation (roles, several messages): multi-turn
    /// sessions and data set lines with `messages` need one.
    fn conversation(&self) -> bool;

    /// The OpenTelemetry GenAI operation name of its requests (`gen_ai.operation.name` on
    /// every exported span): `chat`, `text_completion`, `embeddings`…
    fn otlp_operation(&self) -> &'static str;

    /// Whether the server can keep the conversation itself, continued by the id of its last
    /// answer (`store`, `previous_response_id`): sessions may then send only the new turn
    /// (`state="previous-response-id"`), and the simulator keeps what it answered.
    fn keeps_responses(&self) -> bool {
        false
    }

    /// Tokens a server may add around one request's prompt (a chat template, a BOS token)
    /// before its prompt count is taken to disagree with ours.
    fn template_tokens(&self) -> u32;

    /// Whether requests send `ignore_eos` unless the scenario says otherwise. Exact output
    /// lengths make runs comparable, but not every API has the field, and reasoning models
    /// (gpt-oss's Harmony format) fail when their end-of-sequence token is ignored.
    fn ignore_eos_default(&self) -> bool {
        true
    }

    /// Whether the API carries a reasoning effort (`reasoning-effort` in a target).
    fn reasoning_effort(&self) -> bool {
        false
    }

    /// Writes one request's JSON body. Off the hot path (a request's body is built while it
    /// waits for its send time), but once per request: write bytes, build no JSON tree.
    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>);

    /// Decodes one streamed event's data: what it carries, or that the stream is over. Once
    /// per event on the hot path: borrow from `data`, allocate nothing.
    fn decode_event<'a>(&self, data: &'a str) -> Result<Event<'a>, ChunkError>;

    /// [`decode_event`](Self::decode_event) into the caller's `info` (as the caller made it:
    /// default), the client's way: a chunk is a few hundred bytes, and returning it by value
    /// copied it twice per event. `prefix` is kept by the caller for one stream: a decoder may
    /// remember there what the stream's chunks begin with (see [`ChunkMemo`]). The same
    /// answer as `decode_event`, which the default implementation moves into `info`; an API
    /// whose decoder can fill `info` in place overrides it.
    fn decode_event_into<'a>(
        &self,
        data: &'a str,
        info: &mut ChunkInfo<'a>,
        _prefix: &mut ChunkMemo,
    ) -> Result<EventKind, ChunkError> {
        Ok(match self.decode_event(data)? {
            Event::Chunk(c) => {
                *info = c;
                EventKind::Chunk
            }
            Event::Last(c) => {
                *info = c;
                EventKind::Last
            }
            Event::Done => EventKind::Done,
        })
    }

    /// How the API answers: a stream of generated text (the default), or one JSON body with
    /// no generated text (the pooling APIs: embeddings, rerank, score). The metrics an API
    /// has follow from it (`metrics::Metric::applies_to`).
    fn answer(&self) -> Answer {
        Answer::Stream
    }

    /// Decodes a whole (non-streamed) answer's body to a request of `inputs` inputs: how many
    /// results it holds (none, or exactly one per input: else [`WholeError::Incomplete`]) and
    /// the server's prompt count. Only asked of an API whose [`answer`](Self::answer) is
    /// [`Answer::Pooled`]; the others have no such answer.
    fn decode_whole(&self, _body: &[u8], _inputs: u32) -> Result<Pooled, WholeError> {
        Err(WholeError::NotPooled)
    }

    /// Whether a streaming API can be asked for its whole answer in one JSON body instead
    /// (`stream #false` in a target): then [`decode_generated`](Self::decode_generated)
    /// reads it.
    fn answers_whole(&self) -> bool {
        false
    }

    /// Decodes a whole generated answer (`stream #false`): its text, reasoning, tool calls,
    /// finish reason and usage. Only asked of an API that [`answers_whole`](Self::answers_whole).
    fn decode_generated(&self, _body: &[u8]) -> Result<Generated, WholeError> {
        Err(WholeError::NotPooled)
    }
}

/// How an API answers, and so which metrics it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Server-sent events of generated text, decoded one by one
    /// ([`ApiKind::decode_event`]): every latency and token metric.
    Stream,
    /// One JSON body without generated text, decoded whole ([`ApiKind::decode_whole`]): E2E
    /// latency, inputs and prompt tokens per second; no TTFT, ITL, TPOT or output tokens.
    Pooled(Inputs),
    /// One JSON body of generated text: a streaming API asked for its whole answer
    /// (`stream #false`, [`ApiKind::decode_generated`]): E2E latency and output tokens; no
    /// TTFT, TTFA, ITL or TPOT, which need the tokens to arrive one by one.
    Whole,
}

impl Answer {
    /// Whether the API streams generated text.
    pub fn streams(self) -> bool {
        self == Answer::Stream
    }

    /// Whether the answer is generated text, streamed or whole (it has output tokens).
    pub fn generates(self) -> bool {
        matches!(self, Answer::Stream | Answer::Whole)
    }
}

/// What one request of a pooling API carries, given its `batch` (the target's inputs per
/// request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inputs {
    /// `batch` texts, each an input of its own (embeddings).
    Batch,
    /// A query and `batch` texts, each paired with the query (rerank's documents, score's
    /// `text_2`): a server encodes and counts each pair.
    Pairs,
}

impl Inputs {
    /// How many texts one request sends.
    pub fn texts(self, batch: u32) -> u32 {
        match self {
            Inputs::Batch => batch.max(1),
            Inputs::Pairs => batch.max(1).saturating_add(1),
        }
    }

    /// The prompt tokens a server counts for texts of these lengths (in the order sent): their
    /// sum, or for pairs the query's tokens once per pair.
    pub fn served_tokens(self, lengths: &[u32]) -> u32 {
        let sum = |l: &[u32]| l.iter().fold(0u32, |a, &n| a.saturating_add(n));
        match (self, lengths.split_first()) {
            (Inputs::Pairs, Some((&query, docs))) if !docs.is_empty() => {
                let pairs = u32::try_from(docs.len()).unwrap_or(u32::MAX);
                query.saturating_mul(pairs).saturating_add(sum(docs))
            }
            _ => sum(lengths),
        }
    }
}

/// A registered API kind: `Copy`, compared and hashed by name, serialised as its name.
#[derive(Clone, Copy)]
pub struct Api(&'static dyn ApiKind);

impl Api {
    /// A handle to `kind`: how `protocol.rs` lists the registry.
    pub(super) const fn of(kind: &'static dyn ApiKind) -> Api {
        Api(kind)
    }

    /// What the API does, through its trait.
    pub fn kind(self) -> &'static dyn ApiKind {
        self.0
    }

    /// The name a scenario writes (`api "completions"`) and results record.
    pub fn as_str(self) -> &'static str {
        self.0.name()
    }

    /// The path below the base URL this API posts to.
    pub fn path(self) -> &'static str {
        self.0.path()
    }
}

impl PartialEq for Api {
    fn eq(&self, other: &Api) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Api {}

impl Hash for Api {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.as_str().hash(h);
    }
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Api({})", self.as_str())
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
