//! A stage's token counts (`results.json`'s `tokens`): how many went in and out, and where
//! each request's counts came from.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    /// A pooling API's inputs in the ok requests (texts embedded, documents scored; the
    /// target's `batch` per request); absent for the generation APIs. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inputs: u64,
    /// Requests whose counts came from the server's `usage`.
    pub from_usage: u64,
    /// Requests whose counts came from our tokenizer (the server sent no usage).
    pub from_tokenizer: u64,
    /// Requests where the server's prompt count differs from ours by more than 5 %.
    pub mismatched: u64,
    /// Requests counted by the server's per-request timings (llama.cpp `predicted_n`) for
    /// want of a usable `usage`. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from_timings: u64,
    /// Requests counted by the server's `/tokenize` on the streamed text (an estimate).
    /// *Added in schema 2.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from_tokenize: u64,
    /// Requests whose output count is an estimate (`from_tokenize` + `from_tokenizer`): their
    /// TPOT, NTPOT and token throughput rest on it. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub estimated: u64,
    /// Of the requests in `latency.tpot_ms` (and `ntpot_ms`), those whose output count is an
    /// estimate: that many of the TPOT figures rest on re-tokenized text, not on the server's
    /// count. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tpot_estimated: u64,
    /// Requests whose `usage.completion_tokens` was implausible (above `max_tokens`, or under
    /// half the content chunks) and was replaced by the next source's count.
    /// *Added in schema 2.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub implausible: u64,
    /// With `ignore_eos`: requests whose server-counted output length differs from the
    /// planned `max_tokens`. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub off_plan_output: u64,
    /// Prompt tokens the server said it served from its prefix cache
    /// (`usage.prompt_tokens_details.cached_tokens`), summed over ok requests.
    /// *Added in schema 2.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached: u64,
    /// Ok requests whose response said how many prompt tokens were cached (0 included).
    /// *Added in schema 2.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_reported: u64,
    /// `cached` over the prompt tokens of every ok request (`input`), 0..=1; absent when no
    /// response said. *Added in schema 2.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_share: Option<f64>,
    /// Output tokens spent reasoning, as the servers said
    /// (`completion_tokens_details.reasoning_tokens`, the Responses API's
    /// `output_tokens_details.reasoning_tokens`), summed over ok requests; part of `output`.
    /// *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
    /// Ok requests whose response said how many output tokens were reasoning (0 included).
    /// *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_reported: u64,
    /// Ok requests that reasoned until `max_tokens` ran out and gave no answer
    /// (answer-starved): goodput does not count them. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub answer_starved: u64,
    /// Ok session turns that answered the previous turn's tool calls with tool results: the
    /// stage's completed tool round trips. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_round_trips: u64,
    /// Ok requests whose answer held at least one tool call. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_answers: u64,
    /// The tool calls those answers held, summed. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_calls: u64,
}

impl Tokens {
    /// Adds another summary's counts (the rounds of one stage).
    pub fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.inputs += o.inputs;
        self.output += o.output;
        self.from_usage += o.from_usage;
        self.from_tokenizer += o.from_tokenizer;
        self.mismatched += o.mismatched;
        self.from_timings += o.from_timings;
        self.from_tokenize += o.from_tokenize;
        self.estimated += o.estimated;
        self.tpot_estimated += o.tpot_estimated;
        self.implausible += o.implausible;
        self.off_plan_output += o.off_plan_output;
        self.cached += o.cached;
        self.cache_reported += o.cache_reported;
        self.cached_share = self.cache_share();
        self.reasoning += o.reasoning;
        self.reasoning_reported += o.reasoning_reported;
        self.answer_starved += o.answer_starved;
        self.tool_round_trips += o.tool_round_trips;
        self.tool_answers += o.tool_answers;
        self.tool_calls += o.tool_calls;
    }

    /// `cached` over every ok request's prompt tokens, when any response reported it.
    pub fn cache_share(&self) -> Option<f64> {
        (self.cache_reported > 0 && self.input > 0).then(|| self.cached as f64 / self.input as f64)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
