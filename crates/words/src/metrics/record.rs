//! One request's measurements, as the client produced them. Records stream from the request
//! tasks to the aggregator and are dropped once aggregated (and optionally written to
//! `requests.jsonl`), so memory does not grow with the length of a run.

use serde::Serialize;

/// Why a request failed. The names are public (they key `requests.errors` in results.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No connection could be made (refused, unreachable, DNS, TLS).
    Connect,
    /// The request exceeded the target's `timeout`.
    Timeout,
    /// The server answered with a non-2xx status.
    Http(u16),
    /// The stream ended (or the connection dropped) before `data: [DONE]`.
    StreamBroken,
    /// The stream did finish, but what it carried was not what the OpenAI API defines: a chunk
    /// that is not JSON, text that is not UTF-8, or an event larger than the target's
    /// `max-event-size`.
    Malformed,
    /// The server answered with what is not HTTP/1.1 the client can read without guessing: a
    /// response head it cannot parse or past its bounds, an HTTP/2 answer, endless interim
    /// (`1xx`) responses, lengths that disagree, a broken chunked encoding.
    Protocol,
    /// The stream finished (`[DONE]`) without a single chunk of generated content: only
    /// `[DONE]`, or only usage chunks with `choices: []`.
    Empty,
    /// A pooling API's answer (embeddings, rerank, score) that does not answer every input
    /// sent exactly once: fewer or more results than inputs, an index outside them, an input
    /// answered twice. None of its inputs is credited.
    Incomplete,
    /// A rhai hook failed for this request.
    Hook,
    /// A `validate` hook rejected the response.
    Invalid,
    /// Still in flight when the stage's drain time ran out or the run was interrupted.
    Cancelled,
    /// A turn of a session the server keeps (`session state="previous-response-id"`) whose
    /// response carried no id a later turn can send back: none, one too long, or one that
    /// is not printable ASCII. The session ends there.
    ResponseId(IdProblem),
}

/// What was wrong with a response's id (see [`ErrorKind::ResponseId`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdProblem {
    /// The response carried none.
    Missing,
    /// Longer than `protocol::MAX_ID_BYTES`.
    TooLong,
    /// Empty, or holding a character other than printable ASCII.
    Unprintable,
}

impl ErrorKind {
    /// Declared by the client itself, so a starved client can cause it: its own deadline
    /// passed (`timeout`: a client too slow to read sees it pass too), or the drain ran out
    /// with the request still in flight (`cancelled`). Every other kind is the server's
    /// answer (or a connection it refused).
    pub fn client_side(self) -> bool {
        Self::CLIENT_SIDE.contains(&self)
    }

    /// The kinds a starved client can cause (see [`ErrorKind::client_side`]).
    pub const CLIENT_SIDE: [ErrorKind; 2] = [ErrorKind::Timeout, ErrorKind::Cancelled];

    /// The key used in `requests.errors`: `connect`, `timeout`, `http_429`, `stream_broken`…
    pub fn key(self) -> String {
        match self {
            ErrorKind::Connect => "connect".into(),
            ErrorKind::Timeout => "timeout".into(),
            ErrorKind::Http(code) => format!("http_{code}"),
            ErrorKind::StreamBroken => "stream_broken".into(),
            ErrorKind::Malformed => "malformed".into(),
            ErrorKind::Protocol => "protocol".into(),
            ErrorKind::Empty => "empty".into(),
            ErrorKind::Incomplete => "incomplete".into(),
            ErrorKind::Hook => "hook".into(),
            ErrorKind::Invalid => "invalid".into(),
            ErrorKind::Cancelled => "cancelled".into(),
            ErrorKind::ResponseId(IdProblem::Missing) => "response_id_missing".into(),
            ErrorKind::ResponseId(IdProblem::TooLong) => "response_id_too_long".into(),
            ErrorKind::ResponseId(IdProblem::Unprintable) => "response_id_unprintable".into(),
        }
    }
}

/// Where a request's output token count came from, most trustworthy first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage` object.
    #[default]
    Usage,
    /// The server's own per-request timings (llama.cpp's `timings.predicted_n`), because it
    /// sent no usable `usage`.
    Timings,
    /// An estimate: the server's `/tokenize` endpoint counting the text it streamed (its own
    /// tokenizer, but re-tokenising generated text does not always give back its tokens).
    Tokenize,
    /// An estimate: the scenario's tokenizer counting the text the server streamed.
    Tokenizer,
}

impl TokenSource {
    /// The count is an estimate rather than the server's own count.
    pub fn is_estimate(self) -> bool {
        matches!(self, TokenSource::Tokenize | TokenSource::Tokenizer)
    }
}

// What a server's chunk says; the protocol vocabulary decodes it, a record keeps it.
pub use crate::protocol::{FinishReason, ServerTimings};

/// All times are nanoseconds from the stage start on a monotonic clock. Latencies start at the
/// **scheduled** send time, so a late client cannot hide queueing (no coordinated omission).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RequestRecord {
    /// Position in the stage's plan (a session's index, for every turn of a session).
    pub index: u64,
    /// Turn of a multi-turn session (0: its first request, and every single-turn request); for
    /// an agentic subagent, its turn in its own session (its `depth` says whose).
    pub turn: u32,
    /// An agentic task's session depth: 0 for its root session (and every request outside
    /// agentic tasks), 1 for a subagent the root forked, 2 for one that subagent forked, …
    /// Subagents' turns are kept out of `per_turn` and folded by depth (`per_depth`).
    #[serde(skip_serializing_if = "is_zero_u8")]
    pub depth: u8,
    pub scheduled_ns: u64,
    /// When the request actually left; `sent_ns - scheduled_ns` is the send lag.
    pub sent_ns: u64,
    /// When the last byte of the response arrived (or the failure was seen).
    pub done_ns: u64,
    /// First chunk carrying generated content (answer or reasoning).
    pub first_token_ns: Option<u64>,
    /// First chunk carrying answer content (differs from the first token for reasoning models).
    pub first_answer_ns: Option<u64>,
    /// A whole (non-streamed) answer's first byte: when its response head arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_byte_ns: Option<u64>,
    /// A whole generated answer (`stream #false`): whether it held an answer (text or a tool
    /// call). `None` for a streamed answer, whose first answer token says, and a pooling one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered: Option<bool>,
    /// Gaps between consecutive content chunks, in microseconds.
    #[serde(skip)]
    pub itl_us: Vec<u32>,
    /// Content-carrying chunks received.
    pub chunks: u32,
    /// The server's prompt token count (`usage.prompt_tokens`; without usage, llama.cpp's
    /// `timings.prompt_n + cache_n`), else the planned one.
    pub input_tokens: u32,
    /// A pooling request's inputs (embeddings' texts, rerank's documents: the target's
    /// `batch`); 0 for a generation request.
    #[serde(skip_serializing_if = "is_zero")]
    pub inputs: u32,
    pub output_tokens: u32,
    /// The prompt's length as the plan counted it (with the run's cache salt, if any).
    pub planned_input_tokens: u32,
    /// `max_tokens` as sent: with `ignore_eos`, the output length the plan expects.
    pub planned_output_tokens: u32,
    pub token_source: TokenSource,
    /// The server's prompt token count differs from ours by more than 5 %.
    pub token_mismatch: bool,
    /// The server's `usage.completion_tokens` was implausible (above `max_tokens`, or under
    /// half the content chunks received) and was replaced by the next source's count.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub implausible_usage: bool,
    /// Times the request was sent again on a fresh connection because the first attempt
    /// provably never reached the server (a reused connection that the server had closed).
    #[serde(skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// Serialized by `requests.jsonl` as its `error` key (`http_503`…).
    #[serde(skip)]
    pub error: Option<ErrorKind>,
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// Chat messages sent (0 or 1: a single prompt); widens the chat-template allowance of
    /// the token-count check.
    #[serde(skip)]
    pub messages: u32,
    /// The simulator's request id (`x-infermeter-sim-id`), to join with its ground-truth trace.
    pub sim_id: Option<u64>,
    /// Which of the target's URLs the request went to (its index in `results.urls`), when
    /// the target lists several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<u16>,
    /// The W3C trace context the request carried (`traceparent`, `x-request-id`), when the
    /// run sends one; `requests.jsonl` writes its trace id as `trace_id`.
    #[serde(skip)]
    pub trace: Option<crate::protocol::TraceContext>,
    /// Prompt tokens the server served from its prefix cache
    /// (`usage.prompt_tokens_details.cached_tokens`), when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u32>,
    /// On the request whose end completed an agentic task (every turn of its sessions and
    /// subagents succeeded): the task's completion time, from its first turn's scheduled
    /// instant to this request's end, in nanoseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_ns: Option<u64>,
    /// Output tokens the model spent reasoning (`completion_tokens_details.reasoning_tokens`,
    /// the Responses API's `output_tokens_details.reasoning_tokens`), when the server said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// llama.cpp's `timings`, when the server sent them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_timings: Option<ServerTimings>,
    /// The request body's size as sent, in bytes (0 when it was never built).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub request_bytes: u64,
    /// Images the request carried, their pixels and their encoded bytes (before base64).
    #[serde(skip_serializing_if = "is_zero")]
    pub images: u32,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub image_pixels: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub image_bytes: u64,
    /// The request's model and class (indices into its stage's groups); `requests.jsonl`
    /// writes their names.
    #[serde(skip)]
    pub labels: crate::protocol::Labels,
    /// A session turn that answered the previous turn's tool calls with tool results.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tool_result: bool,
    /// How many tool calls the answer held (counted whether or not they are kept), for the
    /// stage's tool-call figures; not written to `requests.jsonl`.
    #[serde(skip)]
    pub calls: u16,
    /// The tool calls the answer held (id, name, arguments as received), for the session's
    /// next turn (kept only with `keep_tool_calls`, at most `protocol::MAX_KEPT_CALLS`); the
    /// runner takes them before the record goes to the collector.
    #[serde(skip)]
    pub tool_calls: Vec<crate::protocol::ToolCall>,
    /// Whether the client keeps the answer's tool calls in `tool_calls`: only for a session
    /// turn whose next turn can answer them, so a plain request allocates nothing per
    /// tool-call delta beyond its text.
    #[serde(skip)]
    pub keep_tool_calls: bool,
    /// The server's id for the response (the Responses API's), judged; a later turn of a
    /// session the server keeps sends it back. Never written: it is the server's text.
    #[serde(skip)]
    pub response_id: Option<crate::protocol::ResponseId>,
    /// A turn of a session the server keeps: the prompt tokens the request itself carried
    /// (the new message only, after the first turn), where `planned_input_tokens` is the
    /// whole conversation the server is to process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_input_tokens: Option<u32>,
    /// Where the answer begins in the text the client collected (reasoning streamed before
    /// it is skipped): a byte offset, set once, when the first answer chunk arrives.
    #[serde(skip)]
    pub answer_at: u32,
    /// What the data set's `quality` block found in the answer, once the whole answer was
    /// read; `None` when the data set checks nothing (or the request failed otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<QualityMark>,
}

/// The scorers a data set's `quality { score … }` may name, as KDL writes them and
/// results.json's `quality.scorer` holds them (docs/quality.md), in the docs' order.
pub const SCORERS: [&str; 7] = [
    "exact", "contains", "regex", "number", "choice", "json", "rouge-l",
];

/// What the checks of a data set's `quality` block found in one answer (docs/quality.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct QualityMark {
    /// The scorer's judgement: `None` when the answer was not scored (its record has no
    /// reference and the scorer needs one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// No answer text (whitespace only, or only reasoning).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub empty: bool,
    /// The answer stopped at its token budget (`finish_reason: length`, or as many tokens as
    /// `max_tokens`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// Its repeated n-grams passed the data set's share (`repetition`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repetitive: bool,
    /// It holds one of the data set's refusal markers.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub refusal: bool,
    /// Its output tokens against the record's `reference_tokens` band (`tokens-band`):
    /// `Some(true)` outside it, `None` when the record gives no reference count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_band: Option<bool>,
    /// Longer than the bytes scored: judged on its first `quality::MAX_SCORED_BYTES`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub clipped: bool,
    /// The whole answer is the baseline's answer to the same prompt (`agreement`): `None`
    /// when the run has no baseline answers, or the baseline did not answer this prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u8(n: &u8) -> bool {
    *n == 0
}

impl RequestRecord {
    /// The request opened an arrival: a session's (an agentic task root's) first turn, or a
    /// request without sessions. Later turns and subagents follow replies, not the schedule.
    pub fn opens_arrival(&self) -> bool {
        self.turn == 0 && self.depth == 0
    }

    pub fn ok(&self) -> bool {
        self.error.is_none()
    }
    pub fn send_lag_ns(&self) -> u64 {
        self.sent_ns.saturating_sub(self.scheduled_ns)
    }
    pub fn ttft_ns(&self) -> Option<u64> {
        self.first_token_ns
            .map(|t| t.saturating_sub(self.scheduled_ns))
    }
    pub fn e2e_ns(&self) -> u64 {
        self.done_ns.saturating_sub(self.scheduled_ns)
    }
    /// A reasoning model spent the whole output budget thinking: the request succeeded, the
    /// server stopped at `max_tokens`, and no answer text came, only reasoning. Such a
    /// response is no answer, so goodput does not count it.
    pub fn answer_starved(&self) -> bool {
        // A whole answer has no answer token to time: `answered` says whether it held one.
        self.ok()
            && self.finish_reason == Some(FinishReason::Length)
            && self.first_answer_ns.is_none()
            && self.answered != Some(true)
            && (self.first_token_ns.is_some() || self.reasoning_tokens.is_some_and(|n| n > 0))
    }
}
