//! The pre-serialized SSE chunk pieces the scheduler writes tokens into, without building
//! JSON per token: one response's [`Framing`].

use bytes::{BufMut, BytesMut};

use crate::tools;
use crate::wire::{
    ChoiceStream, EventStream, Finish, FinishReason, GenRequest, Stream, Timings, TokenEvent,
};

/// Pre-serialized pieces of one response's SSE chunks. The `head` (`data: {"id":…,"model":…,`)
/// is built once per request; per token only the word and a static suffix are appended. An
/// API of typed events writes its own (see [`EventStream`]).
pub(crate) struct Framing {
    stream: bool,
    include_usage: bool,
    /// Usage carries `prompt_tokens_details` (`prefix-cache`).
    usage_details: bool,
    /// The response's first `reasoning` tokens are reasoning.
    reasoning: u64,
    /// The choice sent once before the first token (chat's role, a tool call's name).
    first: Option<Box<[u8]>>,
    /// The tokens are a tool call's arguments (see `tools.rs`).
    tool: bool,
    shape: Shape,
}

enum Shape {
    Choices {
        shape: &'static ChoiceStream,
        /// `data: {"id":"…","object":"…","created":N,"model":"…",` then the choice opening up
        /// to the content's opening quote; `head_len` marks where the shared head ends.
        prefix: Box<[u8]>,
        head_len: usize,
    },
    Events {
        api: &'static dyn EventStream,
        id: u64,
        created: u64,
        model_json: Box<str>,
        /// A tool-calling answer's function name, as a JSON string.
        tool: Option<Box<str>>,
    },
}

const DONE: &[u8] = b"data: [DONE]\n\n";

impl Framing {
    pub(crate) fn new(
        stream: Stream,
        id: u64,
        created: u64,
        model: &str,
        req: &GenRequest,
        usage_details: bool,
        tool: Option<&str>,
    ) -> Framing {
        let model = serde_json::to_string(model).unwrap_or_else(|_| "\"\"".into());
        let first = match (tool, stream) {
            (Some(name), _) => Some(tools::first_choice(id, name)),
            (None, Stream::Choices(shape)) => shape.first.map(Box::from),
            (None, Stream::Events(_)) => None,
        };
        let tool_json = tool.map(|name| {
            serde_json::to_string(name)
                .unwrap_or_else(|_| "\"\"".into())
                .into_boxed_str()
        });
        let shape = match stream {
            Stream::Choices(shape) => {
                let (id_prefix, object) = (shape.id_prefix, shape.object);
                let head = format!(
                    r#"data: {{"id":"{id_prefix}{id}","object":"{object}","created":{created},"model":{model},"#
                );
                let mut prefix = head.clone().into_bytes();
                prefix.extend_from_slice(shape.open);
                Shape::Choices {
                    shape,
                    prefix: prefix.into_boxed_slice(),
                    head_len: head.len(),
                }
            }
            Stream::Events(api) => Shape::Events {
                api,
                id,
                created,
                model_json: model.into_boxed_str(),
                tool: tool_json,
            },
        };
        Framing {
            stream: req.stream,
            include_usage: req.include_usage,
            usage_details,
            reasoning: 0,
            first,
            tool: tool.is_some(),
            shape,
        }
    }

    /// The response's first `n` tokens are reasoning.
    pub(crate) fn with_reasoning(mut self, n: u64) -> Framing {
        self.reasoning = n;
        self
    }

    /// Tokens of reasoning before the answer.
    pub(crate) fn reasoning(&self) -> u64 {
        self.reasoning
    }

    pub(crate) fn is_stream(&self) -> bool {
        self.stream
    }

    /// Writes the bytes for the token at `index`: for a stream, the API's first choice (chat's
    /// role) before the first token, the token's chunk (reasoning or answer), and after the
    /// last one the usage chunk (if asked) and `[DONE]`; `timings` go on the last JSON chunk,
    /// as llama-server puts them. For a non-streaming response, only the word.
    pub(crate) fn write_token(
        &self,
        buf: &mut BytesMut,
        word: &str,
        index: u64,
        finish: Option<&Finish>,
    ) {
        if !self.stream {
            buf.put_slice(word.as_bytes());
            return;
        }
        let (shape, prefix, head_len) = match &self.shape {
            Shape::Choices {
                shape,
                prefix,
                head_len,
            } => (*shape, prefix, *head_len),
            Shape::Events {
                api,
                id,
                created,
                model_json,
                tool,
            } => {
                let t = TokenEvent {
                    id: *id,
                    created: *created,
                    model_json,
                    word,
                    index,
                    reasoning: self.reasoning,
                    finish,
                    usage_details: self.usage_details,
                    tool: tool.as_deref(),
                };
                return api.token(buf, &t);
            }
        };
        let head = &prefix[..head_len];
        if index == 0
            && let Some(choice) = &self.first
        {
            buf.put_slice(head);
            buf.put_slice(choice);
            buf.put_slice(b"\n\n");
        }
        match shape.open_reasoning {
            Some(open) if index < self.reasoning && !self.tool => {
                buf.put_slice(head);
                buf.put_slice(open);
            }
            _ => buf.put_slice(prefix),
        }
        if self.tool && index == 0 {
            buf.put_slice(tools::ARGUMENTS_OPEN);
        }
        buf.put_slice(word.as_bytes());
        if self.tool && finish.is_some() {
            buf.put_slice(tools::ARGUMENTS_CLOSE);
        }
        buf.put_slice(shape.close);
        match finish {
            None => buf.put_slice(b"null}]}\n\n"),
            Some(finish) => self.write_end(buf, head, finish),
        }
    }

    /// The last chunk's finish reason, the usage chunk, `[DONE]`.
    fn write_end(&self, buf: &mut BytesMut, head: &[u8], finish: &Finish) {
        buf.put_u8(b'"');
        let reason = match finish.reason {
            FinishReason::Stop if self.tool => "tool_calls",
            r => r.as_str(),
        };
        buf.put_slice(reason.as_bytes());
        buf.put_slice(b"\"}]");
        let timings = finish.timings.as_ref().map(Timings::to_json);
        let put_timings = |buf: &mut BytesMut| {
            if let Some(t) = &timings {
                buf.put_slice(b",\"timings\":");
                buf.put_slice(t.as_bytes());
            }
        };
        if !self.include_usage {
            put_timings(buf);
        }
        buf.put_slice(b"}\n\n");
        if self.include_usage {
            buf.put_slice(head);
            buf.put_slice(br#""choices":[],"usage":"#);
            finish.write_usage(buf, self.usage_details);
            put_timings(buf);
            buf.put_slice(b"}\n\n");
        }
        buf.put_slice(DONE);
    }

    /// A `data:` line whose JSON is cut off: the malformed-SSE fault.
    pub(crate) fn write_garbage(&self, buf: &mut BytesMut) {
        if !self.stream {
            return;
        }
        match &self.shape {
            Shape::Choices {
                prefix, head_len, ..
            } => {
                buf.put_slice(&prefix[..*head_len]);
                buf.put_slice(b"\"choices\":[{\"index\":0,<<garbage\n\n");
            }
            Shape::Events { api, .. } => api.garbage(buf),
        }
    }
}
