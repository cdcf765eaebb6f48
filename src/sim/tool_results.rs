//! Tool results in a request (a session answering tool calls): chat's `tool` messages, each
//! naming an earlier assistant message's call by `tool_call_id`, and the Responses API's
//! `function_call_output` items naming an earlier `function_call` item's `call_id`. Their text
//! is prompt like any message's (and so are the calls sent back: names and arguments); a
//! result that names no earlier call of the request is refused with 400, as vLLM's and
//! OpenAI's request validation refuse it. A request whose last message is a tool result is
//! answered with text, not another call, so a session's tool round trip ends.

use std::collections::HashSet;

use serde::Deserialize;

use super::apis::chat::{RawMessage, RawRole};
use super::tokens::PromptSink;
use super::wire::BadRequest;

/// The prefix of the call ids the simulator gives (`call-sim-N`, see `tools.rs`).
const SIM_ID_PREFIX: &str = "call-sim-";

/// What a request's tool results are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ToolResults {
    /// Tool results the request carries.
    pub count: u32,
    /// Of them, those naming a call id of the simulator's own form (`call-sim-N`): the
    /// client sent back the id it was given.
    pub sim_ids: u32,
    /// The request's last message is a tool result: the model answers it with text.
    pub last: bool,
}

/// An assistant message's tool call (`tool_calls[]`): its id and function.
#[derive(Deserialize)]
pub(crate) struct RawCall {
    id: Option<String>,
    function: Option<RawFunction>,
}

#[derive(Deserialize)]
struct RawFunction {
    name: Option<String>,
    arguments: Option<String>,
}

impl RawMessage {
    /// The role a Responses API item of a tool round trip takes in the chat template.
    pub(crate) fn item_role(&self) -> Option<&'static str> {
        match self.kind.as_deref() {
            Some("function_call") => Some("assistant"),
            Some("function_call_output") => Some("tool"),
            _ => None,
        }
    }

    /// The calls a message sends back (an assistant's `tool_calls`, a `function_call` item):
    /// their names and arguments are prompt text.
    pub(crate) fn feed_calls(&self, sink: &mut PromptSink) {
        for f in self.tool_calls.iter().flatten().filter_map(|c| c.function.as_ref()) {
            for t in [&f.name, &f.arguments].into_iter().flatten() {
                sink.text(t);
            }
        }
        if self.kind.as_deref() == Some("function_call") {
            for t in [&self.name, &self.arguments].into_iter().flatten() {
                sink.text(t);
            }
        }
    }

    /// The id of the call this message is the result of, when it is a tool result.
    fn result_of(&self) -> Option<Option<&str>> {
        let tool_role = matches!(&self.role, Some(RawRole::Text(r)) if r == "tool");
        if tool_role {
            Some(self.tool_call_id.as_deref())
        } else if self.kind.as_deref() == Some("function_call_output") {
            Some(self.call_id.as_deref())
        } else {
            None
        }
    }
}

/// Checks every tool result of `messages` against the calls before it.
pub(crate) fn check(messages: &[RawMessage]) -> Result<ToolResults, BadRequest> {
    let mut calls: HashSet<&str> = HashSet::new();
    let mut out = ToolResults::default();
    for (i, m) in messages.iter().enumerate() {
        calls.extend(m.tool_calls.iter().flatten().filter_map(|c| c.id.as_deref()));
        if m.kind.as_deref() == Some("function_call") {
            calls.extend(m.call_id.as_deref());
        }
        out.last = false;
        let Some(id) = m.result_of() else {
            continue;
        };
        match id {
            Some(id) if calls.contains(id) => {
                out.count += 1;
                out.sim_ids += u32::from(is_sim_id(id));
                out.last = true;
            }
            Some(id) => return Err(unknown_call(m, i, id)),
            None => return Err(missing_id(m, i)),
        }
    }
    Ok(out)
}

fn is_sim_id(id: &str) -> bool {
    id.strip_prefix(SIM_ID_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A result naming a call no earlier message made (OpenAI's wording, the id cut short).
fn unknown_call(m: &RawMessage, i: usize, id: &str) -> BadRequest {
    let id: String = id.chars().take(64).collect();
    if m.kind.is_some() {
        BadRequest {
            message: format!("No tool call found for function call output with call_id {id:?}."),
            param: Some("input"),
        }
    } else {
        BadRequest {
            message: format!(
                "Invalid parameter: messages[{i}] with role 'tool' names tool_call_id {id:?}, \
                 which no preceding message with 'tool_calls' made."
            ),
            param: Some("messages"),
        }
    }
}

fn missing_id(m: &RawMessage, i: usize) -> BadRequest {
    if m.kind.is_some() {
        BadRequest {
            message: format!("Missing required parameter: 'input[{i}].call_id'."),
            param: Some("input"),
        }
    } else {
        BadRequest {
            message: format!("Missing required parameter: 'messages[{i}].tool_call_id'."),
            param: Some("messages"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_json(messages: &str) -> Result<ToolResults, BadRequest> {
        let ms: Vec<RawMessage> = serde_json::from_str(messages).unwrap();
        check(&ms)
    }

    #[test]
    fn a_result_must_name_an_earlier_call_of_the_request() {
        let ok = check_json(
            r#"[{"role":"user","content":"q"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"call-sim-3","type":"function","function":{"name":"get","arguments":"{}"}}]},
                {"role":"tool","tool_call_id":"call-sim-3","content":"42"}]"#,
        )
        .unwrap();
        assert_eq!(ok, ToolResults { count: 1, sim_ids: 1, last: true });
        let e = check_json(
            r#"[{"role":"tool","tool_call_id":"x","content":"42"},
                {"role":"assistant","tool_calls":[{"id":"x"}]}]"#,
        )
        .unwrap_err();
        assert!(e.message.contains("tool_call_id \"x\""), "{}", e.message);
        let e = check_json(r#"[{"role":"tool","content":"42"}]"#).unwrap_err();
        assert!(e.message.contains("messages[0].tool_call_id"), "{}", e.message);
        let items = check_json(
            r#"[{"role":"user","content":"q"},
                {"type":"function_call","call_id":"c1","name":"get","arguments":"{}"},
                {"type":"function_call_output","call_id":"c1","output":"42"},
                {"role":"user","content":"and now?"}]"#,
        )
        .unwrap();
        assert_eq!(items, ToolResults { count: 1, sim_ids: 0, last: false });
        let e = check_json(r#"[{"type":"function_call_output","call_id":"c9","output":"42"}]"#)
            .unwrap_err();
        assert_eq!(e.param, Some("input"));
    }

    #[test]
    fn results_and_calls_sent_back_are_prompt_tokens() {
        let count = |json: &str| {
            let ms: Vec<RawMessage> = serde_json::from_str(json).unwrap();
            let mut sink = PromptSink::counting();
            super::super::apis::chat::tokens(&ms, true, &mut sink);
            sink.count()
        };
        let plain = count(r#"[{"role":"user","content":"q"}]"#);
        let round_trip = count(
            r#"[{"role":"user","content":"q"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"get","arguments":"{\"city\":\"Paris\"}"}}]},
                {"role":"tool","tool_call_id":"c","content":"sunny and warm today"}]"#,
        );
        assert!(round_trip >= plain + 2 * 3 + 4 + 4, "{plain} {round_trip}");
        let items = count(
            r#"[{"role":"user","content":"q"},
                {"type":"function_call","call_id":"c","name":"get","arguments":"{\"city\":\"Paris\"}"},
                {"type":"function_call_output","call_id":"c","output":"sunny and warm today"}]"#,
        );
        assert_eq!(items, round_trip, "the same conversation, either API");
    }
}
