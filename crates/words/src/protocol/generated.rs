//! A generation API's whole answer (`stream #false` in a target): what the client reads of one
//! JSON body of generated text, as an API kind decodes it ([`super::ApiKind::decode_generated`]).
//! Unlike a streamed event it is owned: it is read once per request, after the clock stops.

use super::chunk::{FinishReason, Usage};

/// What a whole generated answer says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Generated {
    /// The answer's text (every output text part, in order).
    pub answer: String,
    /// The reasoning's text (reasoning items' text, else their summaries).
    pub reasoning: String,
    /// The tool calls the model answered with, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why generation ended (`None` when the answer does not say).
    pub finish_reason: Option<FinishReason>,
    pub usage: Option<Usage>,
    /// The server's id for the response (the Responses API's `id`), when it gave one (not
    /// yet judged: see `ResponseId`).
    pub id: Option<String>,
}

/// One tool call of a whole answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolCall {
    /// The id a tool result names it by (`call_id`, chat's `id`).
    pub call_id: String,
    /// The function's name.
    pub name: String,
    /// Its arguments as the model wrote them (JSON text, not checked).
    pub arguments: String,
}

impl Generated {
    /// Whether it holds any generated output: answer text, reasoning or a tool call.
    pub fn has_output(&self) -> bool {
        !self.answer.is_empty() || !self.reasoning.is_empty() || !self.tool_calls.is_empty()
    }

    /// Whether it holds an answer: text or a tool call (a reasoning model cut off while it
    /// reasoned has neither).
    pub fn has_answer(&self) -> bool {
        !self.answer.is_empty() || !self.tool_calls.is_empty()
    }

    /// Every generated text, for a count of its tokens: the reasoning, the answer, and each
    /// call's name and arguments.
    pub fn push_text(&self, out: &mut String) {
        out.push_str(&self.reasoning);
        out.push_str(&self.answer);
        for c in &self.tool_calls {
            out.push_str(&c.name);
            out.push_str(&c.arguments);
        }
    }
}

/// What a message of a session carries besides text: it is a tool round trip's half.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolPart {
    /// An assistant message that answered with these calls (its text is empty).
    Calls(Vec<ToolCall>),
    /// The result of the call named `call_id` (the message's text is the result).
    Result { call_id: String },
}
