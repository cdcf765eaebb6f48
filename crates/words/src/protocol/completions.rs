//! `api "completions"`: OpenAI's (legacy) completions, `POST {base}/completions` with one
//! `prompt` string, streamed as `text_completion` events (see `chunk.rs`).

use super::api::ApiKind;
use super::body::{self, PromptRef, Request};
use super::chunk::{self, ChunkError, ChunkInfo, ChunkMemo, Event, EventKind};

/// The completions API.
pub struct Completions;

impl ApiKind for Completions {
    fn otlp_operation(&self) -> &'static str {
        "text_completion"
    }

    fn name(&self) -> &'static str {
        "completions"
    }

    fn help(&self) -> &'static str {
        "`POST {base}/completions` with `prompt`."
    }

    fn path(&self) -> &'static str {
        "/completions"
    }

    /// One prompt string: a conversation's roles and turns cannot be carried.
    fn conversation(&self) -> bool {
        false
    }

    /// A BOS token, and one to spare.
    fn template_tokens(&self) -> u32 {
        2
    }

    /// `{"model","prompt","max_tokens","stream",…}`.
    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>) {
        body::open(out, req.model);
        let joined: String;
        let text = match req.prompt {
            PromptRef::Text(t) => t,
            PromptRef::Messages([one]) => one.content,
            // The plan refuses conversations on this API (sessions, JSONL `messages`); what
            // remains is a shared prefix's system message before a one-message prompt,
            // joined as the text form of the same prompt is.
            PromptRef::Messages(m) => {
                joined = m.iter().map(|m| m.content).collect::<Vec<_>>().join(" ");
                joined.as_str()
            }
        };
        out.extend_from_slice(b",\"prompt\":");
        body::json_str(out, text);
        body::streamed_generation(out, req);
    }

    /// OpenAI chunks (`choices[0].text`), ended by `[DONE]`.
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
