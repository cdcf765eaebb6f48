//! How verdicts are reached: the confidence of intervals, and what an untrusted stage's
//! numbers count for. Both the evaluator and a change against a baseline read it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How verdicts are reached: the confidence of intervals, and what an untrusted stage's
/// numbers count for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Confidence of the intervals an assertion is decided on (0.95).
    pub confidence: f64,
    pub untrusted: Untrusted,
    /// Decide on the value's interval (true), or on the value alone: a search probe is one
    /// step of a bisection whose answer is a bracket, not a verdict, so it takes the best
    /// guess (the intervals of the stages judged after the run still apply).
    pub intervals: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            confidence: 0.95,
            untrusted: Untrusted::Inconclusive,
            intervals: true,
        }
    }
}

impl Policy {
    /// Values alone, untrusted stages judged too: the old point verdict.
    pub fn point(self) -> Policy {
        Policy {
            untrusted: Untrusted::Judge,
            intervals: false,
            ..self
        }
    }
}

/// What an assertion on an untrusted stage (its validity verdict says the client, the machine
/// or the GPU distorted the numbers) comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Untrusted {
    /// Inconclusive, whatever the numbers say: they cannot be relied on either way.
    #[default]
    Inconclusive,
    /// Judged on the numbers as they are.
    Judge,
}

impl Untrusted {
    pub fn as_str(self) -> &'static str {
        match self {
            Untrusted::Inconclusive => "inconclusive",
            Untrusted::Judge => "judge",
        }
    }
}
