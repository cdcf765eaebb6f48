//! A session's tool round trip as a conversation carries it: the assistant's tool calls and a
//! tool result per call (`ToolPart`, in `generated.rs`, on a message), written the way each API takes them —
//! chat's `{"role":"assistant","content":null,"tool_calls":[…]}` and
//! `{"role":"tool","tool_call_id","content"}`, the Responses API's `function_call` and
//! `function_call_output` input items — and the checks a call id from a server passes before
//! it is sent back ([`usable_call`]).

use super::body::{self, Message};
use super::generated::{ToolCall, ToolPart};

/// The longest call id or function name sent back to a server, in bytes: OpenAI's and vLLM's
/// ids are under 64; anything much longer is a server's garbage, not an id.
pub const MAX_CALL_ID_LEN: usize = 128;

/// The most tool calls of one answer a client keeps for the next turn; a server's later calls
/// are not kept (nor answered). Agents' models make a handful per turn.
pub const MAX_KEPT_CALLS: usize = 128;

/// The most bytes of arguments kept over one answer's calls (1 MiB): a call whose arguments
/// would pass it is not kept whole, and so not answered (it is not sent back cut short).
pub const MAX_KEPT_CALL_BYTES: usize = 1 << 20;

/// Whether a call a server sent may be answered: an id and a name, neither longer than
/// [`MAX_CALL_ID_LEN`] nor holding a control character (they go back to the server in the
/// next request and into logs), and arguments of at most [`MAX_KEPT_CALL_BYTES`]. Arguments
/// are sent back as received, whatever they are: the server wrote them, and they are a JSON
/// string on the wire.
pub fn usable_call(call: &ToolCall) -> bool {
    let fine =
        |s: &str| !s.is_empty() && s.len() <= MAX_CALL_ID_LEN && !s.chars().any(char::is_control);
    fine(&call.call_id) && fine(&call.name) && call.arguments.len() <= MAX_KEPT_CALL_BYTES
}

/// A whole answer's calls as a client keeps them: the first [`MAX_KEPT_CALLS`], and of them
/// only those within [`MAX_KEPT_CALL_BYTES`] of arguments together (a call past it is left
/// out: it could not be answered whole).
pub fn kept_calls(calls: &[ToolCall]) -> Vec<ToolCall> {
    let mut bytes = 0usize;
    calls
        .iter()
        .take(MAX_KEPT_CALLS)
        .filter(|c| {
            bytes = bytes.saturating_add(c.arguments.len());
            bytes <= MAX_KEPT_CALL_BYTES
        })
        .cloned()
        .collect()
}

/// Chat's form of message `m` carrying `part`.
pub(super) fn write_chat(out: &mut Vec<u8>, m: &Message<'_>, part: &ToolPart) {
    match part {
        ToolPart::Calls(calls) => {
            out.extend_from_slice(b"{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[");
            for (i, c) in calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"id\":");
                body::json_str(out, &c.call_id);
                out.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
                body::json_str(out, &c.name);
                out.extend_from_slice(b",\"arguments\":");
                body::json_str(out, &c.arguments);
                out.extend_from_slice(b"}}");
            }
            out.extend_from_slice(b"]}");
        }
        ToolPart::Result { call_id } => {
            out.extend_from_slice(b"{\"role\":\"tool\",\"tool_call_id\":");
            body::json_str(out, call_id);
            out.extend_from_slice(b",\"content\":");
            body::json_str(out, m.content);
            out.push(b'}');
        }
    }
}

/// The Responses API's input items for message `m` carrying `part`: one `function_call` item
/// per call, or a `function_call_output` item.
pub(super) fn write_items(out: &mut Vec<u8>, m: &Message<'_>, part: &ToolPart) {
    match part {
        ToolPart::Calls(calls) => {
            for (i, c) in calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"type\":\"function_call\",\"call_id\":");
                body::json_str(out, &c.call_id);
                out.extend_from_slice(b",\"name\":");
                body::json_str(out, &c.name);
                out.extend_from_slice(b",\"arguments\":");
                body::json_str(out, &c.arguments);
                out.push(b'}');
            }
        }
        ToolPart::Result { call_id } => {
            out.extend_from_slice(b"{\"type\":\"function_call_output\",\"call_id\":");
            body::json_str(out, call_id);
            out.extend_from_slice(b",\"output\":");
            body::json_str(out, m.content);
            out.push(b'}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            name: name.into(),
            arguments: "{\"a\":\"<b>\"".into(),
        }
    }

    #[test]
    fn calls_and_results_are_written_as_each_api_takes_them() {
        let part = ToolPart::Calls(vec![call("c1", "get"), call("c2", "put")]);
        let m = Message {
            role: "assistant",
            content: "",
            tool: Some(&part),
        };
        let mut out = Vec::new();
        write_chat(&mut out, &m, &part);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["content"], serde_json::Value::Null);
        assert_eq!(v["tool_calls"][1]["id"], "c2");
        assert_eq!(
            v["tool_calls"][0]["function"]["arguments"],
            "{\"a\":\"<b>\""
        );
        let result = ToolPart::Result {
            call_id: "c1".into(),
        };
        let m = Message {
            role: "user",
            content: "42 °C",
            tool: Some(&result),
        };
        let mut out = Vec::new();
        write_chat(&mut out, &m, &result);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            (v["role"].as_str(), v["tool_call_id"].as_str()),
            (Some("tool"), Some("c1"))
        );
        assert_eq!(v["content"], "42 °C");
        let mut out = b"[".to_vec();
        write_items(&mut out, &m, &result);
        out.push(b',');
        write_items(&mut out, &m, &part);
        out.push(b']');
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v[0]["type"], "function_call_output");
        assert_eq!(v[0]["output"], "42 °C");
        assert_eq!(
            (v[2]["type"].as_str(), v[2]["call_id"].as_str()),
            (Some("function_call"), Some("c2"))
        );
    }

    #[test]
    fn a_call_id_that_is_long_empty_or_holds_control_characters_is_not_answered() {
        assert!(usable_call(&call("call_1", "get")));
        assert!(!usable_call(&call("", "get")));
        assert!(!usable_call(&call("a\u{1b}[31m", "get")));
        assert!(!usable_call(&call("c\n", "get")));
        assert!(!usable_call(&call(&"x".repeat(MAX_CALL_ID_LEN + 1), "get")));
        assert!(!usable_call(&call("c", "")));
        assert!(usable_call(&call(&"x".repeat(MAX_CALL_ID_LEN), "g")));
    }
}
