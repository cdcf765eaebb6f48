//! The runner's side of a session's tool round trips: which calls a server sent may be
//! answered, and a tool-result turn's prompt counted as sent.

use crate::dataset::{Prompt, Tokenizer};
use crate::protocol::{ToolCall, ToolPart, usable_call};

/// The calls of a turn's answer that the next turn answers: those with a usable id and name
/// (`protocol::usable_call`: not empty, not over-long, no control characters, arguments
/// within the bytes kept), each id once (a result could not tell two calls of one id apart:
/// the first is answered). A call refused is not answered; when none is left the next turn is
/// a plain one, and the turn that got them stays a success (its answer was measured).
/// Nothing of a refused call is logged but counts.
pub(super) fn answerable(calls: Vec<ToolCall>, session: u64, turn: usize) -> Vec<ToolCall> {
    let received = calls.len();
    let mut kept: Vec<ToolCall> = Vec::with_capacity(received);
    // At most `MAX_KEPT_CALLS` calls: a quadratic look for an earlier id is cheap.
    for c in calls.into_iter().filter(usable_call) {
        if !kept.iter().any(|k| k.call_id == c.call_id) {
            kept.push(c);
        }
    }
    if kept.len() < received {
        tracing::debug!(
            session,
            turn,
            refused = received - kept.len(),
            "tool calls with an unusable id or name are not answered"
        );
    }
    kept
}

/// The tokens of a prompt as sent: every message's text, and each call's name and arguments.
pub(super) fn count(tokenizer: &Tokenizer, prompt: &Prompt) -> u32 {
    let n: usize = match prompt {
        Prompt::Text(t) => tokenizer.count(t),
        Prompt::Messages(ms) => ms
            .iter()
            .map(|m| {
                let calls = match &m.tool {
                    Some(ToolPart::Calls(calls)) => calls
                        .iter()
                        .map(|c| tokenizer.count(&c.name) + tokenizer.count(&c.arguments))
                        .sum(),
                    _ => 0,
                };
                tokenizer.count(&m.content) + calls
            })
            .sum(),
    };
    n.min(u32::MAX as usize) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            name: "get".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn duplicate_and_unusable_ids_are_not_answered() {
        let calls = vec![
            call("a"),
            call("a"),
            call("<b>\u{7}"),
            call(""),
            call("b"),
            ToolCall {
                arguments: "x".repeat(crate::protocol::MAX_KEPT_CALL_BYTES + 1),
                ..call("c")
            },
        ];
        let ids: Vec<String> = answerable(calls, 1, 0)
            .into_iter()
            .map(|c| c.call_id)
            .collect();
        assert_eq!(ids, ["a", "b"]);
    }
}
