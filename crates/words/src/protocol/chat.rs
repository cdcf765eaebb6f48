//! `api "chat"`: OpenAI's chat completions, `POST {base}/chat/completions` with `messages`,
//! streamed as `chat.completion.chunk` events (see `chunk.rs`). The default API.

use super::api::ApiKind;
use super::body::{self, PromptRef, Request};
use super::chunk::{self, ChunkError, ChunkInfo, ChunkMemo, Event, EventKind};

/// The chat completions API.
pub struct Chat;

impl ApiKind for Chat {
    fn otlp_operation(&self) -> &'static str {
        "chat"
    }

    fn name(&self) -> &'static str {
        "chat"
    }

    fn help(&self) -> &'static str {
        "`POST {base}/chat/completions` with `messages`."
    }

    fn path(&self) -> &'static str {
        "/chat/completions"
    }

    fn conversation(&self) -> bool {
        true
    }

    /// `reasoning_effort`, as OpenAI's reasoning models and vLLM's reasoning parsers read it.
    fn reasoning_effort(&self) -> bool {
        true
    }

    /// A chat template's role markers and separators around one message, generously.
    fn template_tokens(&self) -> u32 {
        16
    }

    /// `{"model","messages":[{"role","content"}…],"max_tokens","stream",…}`; a text prompt is
    /// one user message. Images go in the last message's content parts.
    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>) {
        body::open(out, req.model);
        match req.prompt {
            PromptRef::Text(t) => {
                out.extend_from_slice(b",\"messages\":[{\"role\":\"user\",\"content\":");
                body::content(out, t, req.images);
                out.extend_from_slice(b"}]");
            }
            PromptRef::Messages(m) => {
                let m_len = m.len();
                out.extend_from_slice(b",\"messages\":[");
                for (i, m) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    if let Some(part) = m.tool {
                        super::tool_turn::write_chat(out, m, part);
                        continue;
                    }
                    out.extend_from_slice(b"{\"role\":");
                    body::json_str(out, m.role);
                    out.extend_from_slice(b",\"content\":");
                    let images = if i + 1 == m_len { req.images } else { &[] };
                    body::content(out, m.content, images);
                    out.push(b'}');
                }
                out.push(b']');
            }
        }
        if let Some(effort) = req.reasoning_effort {
            out.extend_from_slice(b",\"reasoning_effort\":");
            body::json_str(out, effort.as_str());
        }
        body::streamed_generation(out, req);
    }

    /// OpenAI chunks (`choices[0].delta.content`, `delta.reasoning_content`), ended by
    /// `[DONE]`.
    fn decode_event<'a>(&self, data: &'a str) -> Result<Event<'a>, ChunkError> {
        chunk::openai_event(data)
    }

    fn decode_event_into<'a>(
        &self,
        data: &'a str,
        info: &mut ChunkInfo<'a>,
        prefix: &mut ChunkMemo,
    ) -> Result<EventKind, ChunkError> {
        chunk::openai_event_into(data, info, prefix)
    }
}
