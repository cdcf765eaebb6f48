//! A session's tool round trips in its conversation: an earlier turn the server answered with
//! tool calls is sent as those calls (an assistant message carrying them), and the next turn's
//! message from the data set as their results (one tool message per call). The text a result
//! carries is the data set's text for that turn — the synthetic text of its drawn length, or a
//! ShareGPT conversation's next human message — so a tool-result turn keeps its planned length.

use super::{ChatMessage, History, Prompt};
use crate::protocol::{ToolCall, ToolPart};

/// Turn `k`'s conversation (`session_prompt`'s) with its tool round trips: `answered[j]` holds
/// the calls turn `j` was answered with (empty: a plain reply), already checked with
/// `protocol::usable_call`. Under `history "server"` the calls go back as received; under
/// `history "dataset"` as planned — ids from the session and turn, the data set's reply as
/// the first call's arguments — named as the server named them (the plan names no tools).
pub fn with_tool_results(
    prompt: Prompt,
    k: usize,
    answered: &[Vec<ToolCall>],
    (history, session): (History, u64),
) -> Prompt {
    let Prompt::Messages(ms) = prompt else {
        return prompt;
    };
    let Some(base) = ms.len().checked_sub(2 * k + 1) else {
        return Prompt::Messages(ms);
    };
    if !answered.iter().take(k).any(|c| !c.is_empty()) {
        return Prompt::Messages(ms);
    }
    let mut out = Vec::with_capacity(ms.len() + 2);
    let mut pending: Option<Vec<ToolCall>> = None;
    for (p, m) in ms.into_iter().enumerate() {
        let Some(p) = p.checked_sub(base) else {
            out.push(m);
            continue;
        };
        let j = p / 2;
        let calls = answered.get(j).filter(|c| !c.is_empty() && j < k);
        match (p % 2, calls, pending.take()) {
            (1, Some(calls), _) => {
                let sent = match history {
                    History::Server => calls.clone(),
                    History::Dataset => planned(calls, &m.content, session, j),
                };
                out.push(ChatMessage {
                    role: "assistant".into(),
                    content: String::new(),
                    tool: Some(ToolPart::Calls(sent.clone())),
                });
                pending = Some(sent);
            }
            (0, _, Some(calls)) => out.extend(tool_results(&m.content, &calls)),
            _ => out.push(m),
        }
    }
    Prompt::Messages(out)
}

/// One tool result per call, naming it, whose texts together are `text` (the data set's text
/// for the turn, cut between the results by words): what a turn answering `calls` sends in
/// place of its user message — after the calls in a resent conversation, alone in a session
/// the server keeps.
pub fn tool_results(text: &str, calls: &[ToolCall]) -> Vec<ChatMessage> {
    let parts = split(text, calls.len());
    calls
        .iter()
        .zip(parts)
        .map(|(call, content)| ChatMessage {
            role: "tool".into(),
            content,
            tool: Some(ToolPart::Result {
                call_id: call.call_id.clone(),
            }),
        })
        .collect()
}

/// The calls as the plan has them: one per call received, ids from the session and turn, the
/// data set's reply as the first one's arguments (`{"text": …}`), `{}` for the others.
fn planned(received: &[ToolCall], reply: &str, session: u64, turn: usize) -> Vec<ToolCall> {
    received
        .iter()
        .enumerate()
        .map(|(n, c)| ToolCall {
            call_id: format!("call-{session}-{turn}-{n}"),
            name: c.name.clone(),
            arguments: if n == 0 {
                serde_json::json!({ "text": reply }).to_string()
            } else {
                "{}".into()
            },
        })
        .collect()
}

/// `text` cut into `n` parts of about as many words each (every part a result; the first
/// takes the remainder), so the results together are the turn's planned text.
fn split(text: &str, n: usize) -> Vec<String> {
    if n <= 1 {
        return vec![text.to_string()];
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let each = words.len() / n;
    let first = words.len() - each * (n - 1);
    let mut parts = vec![words[..first].join(" ")];
    parts.extend(words[first..].chunks(each.max(1)).map(|c| c.join(" ")));
    parts.resize(n, String::new());
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(role: &str, content: &str) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
            tool: None,
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            name: "get".into(),
            arguments: "{\"q\":1}".into(),
        }
    }

    fn conversation() -> Prompt {
        Prompt::Messages(vec![
            m("system", "prefix"),
            m("user", "u0"),
            m("assistant", "get{\"q\":1}"),
            m("user", "forty two degrees"),
            m("assistant", "a1"),
            m("user", "u2"),
        ])
    }

    #[test]
    fn a_turn_answered_with_calls_is_followed_by_one_result_per_call() {
        let answered = [vec![call("c1"), call("c2")], vec![]];
        let Prompt::Messages(ms) =
            with_tool_results(conversation(), 2, &answered, (History::Server, 7))
        else {
            panic!()
        };
        let roles: Vec<&str> = ms.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(
            roles,
            [
                "system",
                "user",
                "assistant",
                "tool",
                "tool",
                "assistant",
                "user"
            ]
        );
        assert_eq!(
            ms[2].tool,
            Some(ToolPart::Calls(vec![call("c1"), call("c2")])),
            "as received"
        );
        let ids: Vec<_> = ms[3..5]
            .iter()
            .map(|m| match &m.tool {
                Some(ToolPart::Result { call_id }) => call_id.as_str(),
                _ => "",
            })
            .collect();
        assert_eq!(ids, ["c1", "c2"]);
        assert_eq!(
            format!("{} {}", ms[3].content, ms[4].content),
            "forty two degrees"
        );
        assert_eq!(ms[5].content, "a1");
    }

    #[test]
    fn planned_calls_take_their_ids_from_the_session_and_the_reply_from_the_data_set() {
        let answered = [vec![call("server-id")]];
        let Prompt::Messages(mut all) = conversation() else {
            panic!()
        };
        all.truncate(4);
        let Prompt::Messages(ms) =
            with_tool_results(Prompt::Messages(all), 1, &answered, (History::Dataset, 7))
        else {
            panic!()
        };
        let Some(ToolPart::Calls(calls)) = &ms[2].tool else {
            panic!("{ms:?}")
        };
        assert_eq!(calls[0].call_id, "call-7-0-0");
        assert_eq!(calls[0].arguments, r#"{"text":"get{\"q\":1}"}"#);
        // Turn 1 is the last turn here: its message is the result.
        assert_eq!(ms.len(), 4);
        assert_eq!(ms[3].role, "tool");
    }

    #[test]
    fn without_calls_the_conversation_is_unchanged() {
        let p = with_tool_results(conversation(), 2, &[vec![], vec![]], (History::Server, 1));
        assert_eq!(p, conversation());
        assert_eq!(split("a b c d e", 2), ["a b c", "d e"]);
        assert_eq!(split("a", 3), ["a", "", ""]);
    }
}
