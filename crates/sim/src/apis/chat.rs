//! The simulator's side of `api "chat"`: `messages` counted as a chat template would (a few
//! tokens per message and for the reply's priming), and `chat.completion.chunk` events opened
//! by a chunk announcing the assistant's role, as vLLM streams them.

use serde::Deserialize;

use crate::tokens::PromptSink;
use crate::tool_results::{self, Checker, RawCall, ToolResults};
use crate::vision::ImageRef;
use crate::wire::{self, BadRequest, ChoiceStream, GenRequest, PromptField, SimApi, Stream, Whole};

/// Tokens added per chat message (role and separators) on top of its content, and once for the
/// assistant reply's priming, following OpenAI's published counting recipe for cl100k models.
pub(crate) const PER_MESSAGE_TOKENS: u64 = 3;
pub(crate) const REPLY_PRIMING_TOKENS: u64 = 3;

/// The chat API's side.
pub(crate) struct Chat;

const STREAM: ChoiceStream = ChoiceStream {
    id_prefix: "chatcmpl-sim-",
    object: "chat.completion.chunk",
    open: br#""choices":[{"index":0,"delta":{"content":""#,
    close: br#""},"logprobs":null,"finish_reason":"#,
    first: Some(
        br#""choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
    ),
    open_reasoning: Some(br#""choices":[{"index":0,"delta":{"reasoning_content":""#),
};

/// The pieces of a tool-calling answer (see `sim/tools.rs`): each token is a fragment of the
/// call's arguments; the first choice, naming the tool, is built per request.
const TOOL_STREAM: ChoiceStream = ChoiceStream {
    id_prefix: "chatcmpl-sim-",
    object: "chat.completion.chunk",
    open: br#""choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""#,
    close: br#""}}]},"logprobs":null,"finish_reason":"#,
    first: None,
    open_reasoning: None,
};

impl SimApi for Chat {
    fn name(&self) -> &'static str {
        "chat"
    }

    fn parse(&self, body: &[u8], collect_ids: bool) -> Result<GenRequest, BadRequest> {
        wire::parse::<Messages>(body, collect_ids)
    }

    fn stream(&self) -> Stream {
        Stream::Choices(&STREAM)
    }

    /// The reasoning, if any, as vLLM's reasoning parsers give it: `reasoning_content`; a
    /// tool call as `message.tool_calls` (no content).
    fn whole(&self, w: &Whole<'_>) -> serde_json::Value {
        let mut message = serde_json::json!({ "role": "assistant", "content": w.text });
        if let Some(name) = w.tool {
            let (id, arguments) = crate::tools::whole_call(w.id, w.text);
            message = serde_json::json!({
                "role": "assistant", "content": null,
                "tool_calls": [{ "id": id, "type": "function",
                                 "function": { "name": name, "arguments": arguments } }],
            });
        }
        if !w.reasoning.is_empty() {
            message["reasoning_content"] = w.reasoning.into();
        }
        serde_json::json!({
            "id": format!("chatcmpl-sim-{}", w.id), "object": "chat.completion",
            "created": w.created, "model": w.model,
            "choices": [{ "index": 0, "message": message,
                          "logprobs": null, "finish_reason": w.finish }],
            "usage": w.usage,
        })
    }

    fn tool_stream(&self) -> Option<&'static ChoiceStream> {
        Some(&TOOL_STREAM)
    }
}

/// A request's `messages`.
#[derive(Deserialize)]
pub(crate) struct Messages(Vec<RawMessage>);

impl PromptField for Messages {
    const KEY: &'static str = "messages";
    fn feed(&self, sink: &mut PromptSink) {
        tokens(&self.0, true, sink);
    }
    fn tool_results(&self) -> Result<ToolResults, BadRequest> {
        check_tools(&self.0)
    }
}

#[derive(Deserialize)]
pub(crate) struct RawMessage {
    role: Option<RawRole>,
    content: Option<RawContent>,
    /// A session's tool round trip (see `sim/tool_results.rs`): chat's assistant `tool_calls`
    /// and a tool message's `tool_call_id`; the Responses API's `function_call` and
    /// `function_call_output` items (`type`, `call_id`, `name`, `arguments`, `output`).
    tool_calls: Option<Vec<RawCall>>,
    tool_call_id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    output: Option<RawContent>,
}

/// A message's role: only a string one is used (for the chat-formatting tokens); anything else
/// is accepted and ignored, as before roles were read at all.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawRole {
    Text(String),
    Other(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawContent {
    Text(String),
    Parts(Vec<RawPart>),
}

#[derive(Deserialize)]
struct RawPart {
    text: Option<String>,
    /// An image part: its tokens are counted from its size (see `sim/vision.rs`).
    image_url: Option<ImageRef>,
}

/// Feeds a chat conversation into `sink`: each message's formatting tokens and text, then the
/// reply's priming (unless `add_generation_prompt` is false, as vLLM's `/tokenize` allows).
pub(crate) fn tokens(messages: &[RawMessage], add_generation_prompt: bool, sink: &mut PromptSink) {
    const _: () = assert!(PER_MESSAGE_TOKENS == 3 && REPLY_PRIMING_TOKENS == 3);
    for m in messages {
        sink.message_start(match (&m.role, m.item_role()) {
            (Some(RawRole::Text(r)), _) => r,
            (_, Some(role)) => role,
            _ => "user",
        });
        for content in [&m.content, &m.output].into_iter().flatten() {
            match content {
                RawContent::Text(t) => sink.text(t),
                RawContent::Parts(parts) => {
                    for p in parts {
                        if let Some(t) = &p.text {
                            sink.text(t);
                        }
                        if let Some(image) = p.image_url {
                            sink.image(image.tokens, image.key);
                        }
                    }
                }
            }
        }
        // Calls sent back are prompt text: their names and arguments.
        m.feed_calls(sink);
    }
    if add_generation_prompt {
        sink.message_start("assistant");
    }
}

impl RawMessage {
    /// The role a Responses API item of a tool round trip takes in the chat template.
    fn item_role(&self) -> Option<&'static str> {
        tool_results::item_role(self.kind.as_deref())
    }

    /// The calls a message sends back (an assistant's `tool_calls`, a `function_call` item).
    fn feed_calls(&self, sink: &mut PromptSink) {
        for c in self.tool_calls.iter().flatten() {
            c.feed(sink);
        }
        if self.kind.as_deref() == Some("function_call") {
            for t in [&self.name, &self.arguments].into_iter().flatten() {
                sink.text(t);
            }
        }
    }

    /// The id of the call this message is the result of, when it is a tool result (`None`
    /// inside when it names none).
    fn result_of(&self) -> Option<Option<&str>> {
        if matches!(&self.role, Some(RawRole::Text(r)) if r == "tool") {
            Some(self.tool_call_id.as_deref())
        } else if self.kind.as_deref() == Some("function_call_output") {
            Some(self.call_id.as_deref())
        } else {
            None
        }
    }
}

/// The tool results of a request's messages (chat's or the Responses API's items), each
/// checked against the calls before it (see `sim/tool_results.rs`).
pub(crate) fn check_tools(messages: &[RawMessage]) -> Result<ToolResults, BadRequest> {
    walk(messages, Checker::default()).map(Checker::finish)
}

/// [`check_tools`] for a request continuing a stored response (`previous_response_id`): a
/// `function_call_output` item may name a call of the stored response; the ids such results
/// name are returned, for `store::asked` to check against the response it finds.
pub(crate) fn check_tools_continuing(
    messages: &[RawMessage],
) -> Result<(ToolResults, Vec<String>), BadRequest> {
    walk(messages, Checker::continuing()).map(Checker::finish_continuing)
}

fn walk<'a>(
    messages: &'a [RawMessage],
    mut checker: Checker<'a>,
) -> Result<Checker<'a>, BadRequest> {
    for (i, m) in messages.iter().enumerate() {
        for id in m.tool_calls.iter().flatten().filter_map(RawCall::id) {
            checker.call(id);
        }
        if m.kind.as_deref() == Some("function_call")
            && let Some(id) = m.call_id.as_deref()
        {
            checker.call(id);
        }
        checker
            .message(i, m.result_of(), m.kind.is_some())
            .map_err(|r| BadRequest {
                message: r.message,
                param: Some(r.param),
            })?;
    }
    Ok(checker)
}
