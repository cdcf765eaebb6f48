//! Answering with tool calls (`tool-calls #true`): a chat request that offers `tools` is
//! answered with one call of its first tool, streamed as vLLM streams one — a first delta with
//! the call's id, type and whole function name, then the arguments' JSON text a token at a
//! time (`{"text":"` before the first word, `"}` after the last, so the arguments parse), and
//! `finish_reason: "tool_calls"` when the model stops on its own (`length` when `max_tokens`
//! ran out, as vLLM says). A non-streamed answer is the same call whole ([`whole_call`]):
//! chat's `message.tool_calls`, the Responses API's `function_call` output item. The stream's
//! fixed pieces are chat's (`apis/chat.rs`); the first choice is built per request here, since
//! it names the tool.

use serde::Deserialize;

/// Written into the arguments before the first word and after the last: the words become the
/// JSON object `{"text":"…"}` (escaped, inside the arguments string).
pub(crate) const ARGUMENTS_OPEN: &[u8] = br#"{\"text\":\""#;
pub(crate) const ARGUMENTS_CLOSE: &[u8] = br#"\"}"#;

/// The first choice of a tool-calling answer: the assistant's role, the call's id and the
/// function's name, with empty arguments.
pub(crate) fn first_choice(id: u64, name: &str) -> Box<[u8]> {
    let name = serde_json::to_string(name).unwrap_or_else(|_| "\"\"".into());
    format!(
        r#""choices":[{{"index":0,"delta":{{"role":"assistant","content":null,"tool_calls":[{{"index":0,"id":"call-sim-{id}","type":"function","function":{{"name":{name},"arguments":""}}}}]}},"logprobs":null,"finish_reason":null}}]}}"#
    )
    .into_bytes()
    .into_boxed_slice()
}

/// A whole (non-streamed) answer's call of `name`: its id (`call-sim-N`, as streamed) and its
/// arguments, the answer's `words` inside `{"text":"…"}` exactly as a stream of them
/// decodes.
pub(crate) fn whole_call(id: u64, words: &str) -> (String, String) {
    let arguments = serde_json::json!({ "text": words }).to_string();
    (format!("call-sim-{id}"), arguments)
}

/// A request's `tools`, read leniently: the first function tool's name, if any — chat's
/// `{"type":"function","function":{"name"}}` or the Responses API's flat
/// `{"type":"function","name"}`.
#[derive(Deserialize)]
pub(crate) struct RawTools(Vec<RawTool>);

#[derive(Deserialize)]
struct RawTool {
    function: Option<RawFunction>,
    name: Option<String>,
}

#[derive(Deserialize)]
struct RawFunction {
    name: Option<String>,
}

impl RawTools {
    /// The first tool's function name.
    pub(crate) fn first_name(self) -> Option<String> {
        self.0
            .into_iter()
            .find_map(|t| t.function.and_then(|f| f.name).or(t.name))
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use crate::apis::chat::Chat;
    use crate::framing::Framing;
    use crate::protocol::{FinishReason as Reason, parse_chunk};
    use crate::wire::{Finish, FinishReason, GenRequest, SimApi, Stream};

    fn stream(reason: FinishReason) -> Vec<String> {
        let req = GenRequest {
            prompt_tokens: 7,
            max_tokens: Some(3),
            min_tokens: 0,
            ignore_eos: false,
            stream: true,
            include_usage: true,
            prompt_ids: Vec::new(),
            cache_prompt: true,
            tool: Some("get_\"weather".into()),
            inputs: 0,
            reasoning_effort: None,
            model: None,
            priority: 0,
            tool_results: Default::default(),
            store: false,
            previous_response_id: None,
            answered: Vec::new(),
        };
        let shape = Chat.tool_stream().unwrap();
        let f = Framing::new(
            Stream::Choices(shape),
            9,
            1,
            "m",
            &req,
            false,
            req.tool.as_deref(),
        );
        let mut buf = BytesMut::new();
        let end = Finish {
            reason,
            prompt: 7,
            completion: 3,
            cached: 0,
            reasoning: 0,
            timings: None,
        };
        for (i, w) in [" the", " cat", " sat"].iter().enumerate() {
            f.write_token(&mut buf, w, i as u64, (i == 2).then_some(&end));
        }
        std::str::from_utf8(&buf)
            .unwrap()
            .split_terminator("\n\n")
            .map(|e| e.strip_prefix("data: ").unwrap().to_string())
            .collect()
    }

    #[test]
    fn a_tool_call_streams_its_name_then_json_arguments() {
        let events = stream(FinishReason::Stop);
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
        let chunks: Vec<_> = events[..events.len() - 1]
            .iter()
            .map(|e| parse_chunk(e).unwrap())
            .collect();
        let name = chunks[0].tool_call.name.as_ref().unwrap().decode();
        assert_eq!(name, "get_\"weather");
        assert!(chunks[0].has_answer(), "the name is the first token");
        let mut args = String::new();
        for c in &chunks[1..] {
            if let Some(a) = &c.tool_call.arguments {
                a.push_to(&mut args);
            }
        }
        let v: serde_json::Value = serde_json::from_str(&args).unwrap();
        assert_eq!(v["text"], " the cat sat");
        assert_eq!(chunks[3].finish_reason, Some(Reason::ToolCalls));
        assert!(chunks[4].usage.is_some());
        // Cut off by max_tokens, it says so.
        let events = stream(FinishReason::Length);
        assert_eq!(
            parse_chunk(&events[3]).unwrap().finish_reason,
            Some(Reason::Length)
        );
    }
}
