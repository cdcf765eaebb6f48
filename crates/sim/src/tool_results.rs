//! Tool results in a request (a session answering tool calls): chat's `tool` messages, each
//! naming an earlier assistant message's call by `tool_call_id`, and the Responses API's
//! `function_call_output` items naming an earlier `function_call` item's `call_id`. Their text
//! is prompt like any message's (and so are the calls sent back: names and arguments); a
//! result that names no earlier call of the request is refused with 400, as vLLM's and
//! OpenAI's request validation refuse it. A request whose last message is a tool result is
//! answered with text, not another call, so a session's tool round trip ends. The messages
//! themselves are chat's (`apis/chat.rs`, `check_tools`), which walks them through a
//! [`Checker`].

use std::collections::HashSet;

use serde::Deserialize;

use super::tokens::PromptSink;

/// The prefix of the call ids the simulator gives (`call-sim-N`, see `tools.rs`).
pub(crate) const SIM_ID_PREFIX: &str = "call-sim-";

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

impl RawCall {
    pub(crate) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// A call sent back is prompt text: its name and arguments.
    pub(crate) fn feed(&self, sink: &mut PromptSink) {
        let Some(f) = &self.function else {
            return;
        };
        for t in [&f.name, &f.arguments].into_iter().flatten() {
            sink.text(t);
        }
    }
}

/// The role a Responses API item of a tool round trip (its `type`) takes in the chat
/// template.
pub(crate) fn item_role(kind: Option<&str>) -> Option<&'static str> {
    match kind {
        Some("function_call") => Some("assistant"),
        Some("function_call_output") => Some("tool"),
        _ => None,
    }
}

/// Why a request's tool result is refused (a 400).
pub(crate) struct Refused {
    pub message: String,
    pub param: &'static str,
}

/// The most results naming no call of the request that a continued request
/// (`previous_response_id`) may carry: each is looked up in the stored response's calls.
pub(crate) const MAX_CONTINUED_RESULTS: usize = 1024;

/// Reads a request's messages in order: the calls each makes, then whether it is a result of
/// one made before it.
#[derive(Default)]
pub(crate) struct Checker<'a> {
    calls: HashSet<&'a str>,
    out: ToolResults,
    /// A request continuing a stored response (`previous_response_id`): a result naming no
    /// call of the request may name one of the stored response's, checked against the store
    /// once it is found (`store::asked`); its id is kept here until then.
    continuing: Option<Vec<String>>,
}

impl<'a> Checker<'a> {
    /// A checker for a request continuing a stored response: see [`Checker::continuing`].
    pub(crate) fn continuing() -> Self {
        Checker {
            continuing: Some(Vec::new()),
            ..Checker::default()
        }
    }

    /// A call made (its id), by an assistant message or a `function_call` item.
    pub(crate) fn call(&mut self, id: &'a str) {
        self.calls.insert(id);
    }

    /// Message `i`: `result` is `None` for a message that is no tool result, else the id it
    /// names (`None` when it names none); `item` when it is a Responses API item.
    pub(crate) fn message(
        &mut self,
        i: usize,
        result: Option<Option<&str>>,
        item: bool,
    ) -> Result<(), Refused> {
        self.out.last = false;
        let Some(id) = result else {
            return Ok(());
        };
        let known = |id: &str| self.calls.contains(id);
        match (id, &mut self.continuing) {
            (Some(id), _) if known(id) => {}
            (Some(id), Some(later)) if item && later.len() < MAX_CONTINUED_RESULTS => {
                later.push(id.to_string());
            }
            (Some(id), _) => return Err(unknown_call(i, id, item)),
            (None, _) => return Err(missing_id(i, item)),
        }
        let id = id.unwrap_or_default();
        self.out.count += 1;
        self.out.sim_ids += u32::from(is_sim_id(id));
        self.out.last = true;
        Ok(())
    }

    pub(crate) fn finish(self) -> ToolResults {
        self.out
    }

    /// The results and, for a continuing request, the ids its results name that no call of
    /// the request made (each must be a call of the stored response).
    pub(crate) fn finish_continuing(self) -> (ToolResults, Vec<String>) {
        (self.out, self.continuing.unwrap_or_default())
    }
}

fn is_sim_id(id: &str) -> bool {
    id.strip_prefix(SIM_ID_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A result naming a call no earlier message made (OpenAI's wording, the id cut short).
pub(crate) fn unknown_call(i: usize, id: &str, item: bool) -> Refused {
    let id: String = id.chars().take(64).collect();
    if item {
        Refused {
            message: format!("No tool call found for function call output with call_id {id:?}."),
            param: "input",
        }
    } else {
        Refused {
            message: format!(
                "Invalid parameter: messages[{i}] with role 'tool' names tool_call_id {id:?}, \
                 which no preceding message with 'tool_calls' made."
            ),
            param: "messages",
        }
    }
}

fn missing_id(i: usize, item: bool) -> Refused {
    if item {
        Refused {
            message: format!("Missing required parameter: 'input[{i}].call_id'."),
            param: "input",
        }
    } else {
        Refused {
            message: format!("Missing required parameter: 'messages[{i}].tool_call_id'."),
            param: "messages",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::chat::{RawMessage, check_tools, tokens};
    use crate::wire::BadRequest;

    fn check_json(messages: &str) -> Result<ToolResults, BadRequest> {
        let ms: Vec<RawMessage> = serde_json::from_str(messages).unwrap();
        check_tools(&ms)
    }

    #[test]
    fn a_result_must_name_an_earlier_call_of_the_request() {
        let ok = check_json(
            r#"[{"role":"user","content":"q"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"call-sim-3","type":"function","function":{"name":"get","arguments":"{}"}}]},
                {"role":"tool","tool_call_id":"call-sim-3","content":"42"}]"#,
        )
        .unwrap();
        assert_eq!(
            ok,
            ToolResults {
                count: 1,
                sim_ids: 1,
                last: true
            }
        );
        let e = check_json(
            r#"[{"role":"tool","tool_call_id":"x","content":"42"},
                {"role":"assistant","tool_calls":[{"id":"x"}]}]"#,
        )
        .unwrap_err();
        assert!(e.message.contains("tool_call_id \"x\""), "{}", e.message);
        let e = check_json(r#"[{"role":"tool","content":"42"}]"#).unwrap_err();
        assert!(
            e.message.contains("messages[0].tool_call_id"),
            "{}",
            e.message
        );
        let items = check_json(
            r#"[{"role":"user","content":"q"},
                {"type":"function_call","call_id":"c1","name":"get","arguments":"{}"},
                {"type":"function_call_output","call_id":"c1","output":"42"},
                {"role":"user","content":"and now?"}]"#,
        )
        .unwrap();
        assert_eq!(
            items,
            ToolResults {
                count: 1,
                sim_ids: 0,
                last: false
            }
        );
        let e = check_json(r#"[{"type":"function_call_output","call_id":"c9","output":"42"}]"#)
            .unwrap_err();
        assert_eq!(e.param, Some("input"));
    }

    #[test]
    fn results_and_calls_sent_back_are_prompt_tokens() {
        let count = |json: &str| {
            let ms: Vec<RawMessage> = serde_json::from_str(json).unwrap();
            let mut sink = PromptSink::counting();
            tokens(&ms, true, &mut sink);
            sink.count()
        };
        let plain = count(r#"[{"role":"user","content":"q"}]"#);
        let round_trip = count(
            r#"[{"role":"user","content":"q"},
                {"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"get","arguments":"{\"city\":\"Paris\"}"}}]},
                {"role":"tool","tool_call_id":"c","content":"sunny and warm today"}]"#,
        );
        assert!(round_trip > plain + 2 * 3, "{plain} {round_trip}");
        let items = count(
            r#"[{"role":"user","content":"q"},
                {"type":"function_call","call_id":"c","name":"get","arguments":"{\"city\":\"Paris\"}"},
                {"type":"function_call_output","call_id":"c","output":"sunny and warm today"}]"#,
        );
        assert_eq!(items, round_trip, "the same conversation, either API");
    }
}
