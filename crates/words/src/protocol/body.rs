//! What every API's request body is made of, and the pieces API kinds write it with: a JSON
//! string written byte for byte as serde_json would, the opening `{"model":…`, and the
//! streaming-generation fields the OpenAI APIs share. Bodies are written as bytes (no JSON
//! tree per request): prompts are long and the client builds one body per request.

use std::collections::BTreeMap;
use std::io::Write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::chunk::plain_run;

/// A chat message as sent on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message<'a> {
    pub role: &'a str,
    pub content: &'a str,
    /// A session's tool calls or tool result (see `tool_turn.rs`); `None` for a plain message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<&'a super::generated::ToolPart>,
}

/// What to send as the prompt.
#[derive(Debug, Clone, Copy)]
pub enum PromptRef<'a> {
    Text(&'a str),
    Messages(&'a [Message<'a>]),
}

impl PromptRef<'_> {
    /// The prompt's bytes and a little for its framing, for sizing the body up front.
    pub fn size_hint(self) -> usize {
        match self {
            PromptRef::Text(t) => t.len(),
            PromptRef::Messages(m) => m.iter().map(|m| m.content.len() + m.role.len() + 32).sum(),
        }
    }
}

/// How hard a reasoning model should think: OpenAI's `reasoning_effort` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    /// Every name a scenario may write.
    pub const NAMES: [&'static str; 3] = ["low", "medium", "high"];

    /// The name a scenario writes and the request carries.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }

    pub fn from_name(name: &str) -> Option<ReasoningEffort> {
        Some(match name {
            "low" => ReasoningEffort::Low,
            "medium" => ReasoningEffort::Medium,
            "high" => ReasoningEffort::High,
            _ => return None,
        })
    }
}

/// One request, as an API kind writes its body.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub model: &'a str,
    pub prompt: PromptRef<'a>,
    /// The output tokens asked for.
    pub max_tokens: u32,
    /// Ask the server to ignore the end-of-sequence token (exact output lengths).
    pub ignore_eos: bool,
    /// Ask for a stream of events (the default), or for the whole answer in one body
    /// (`stream #false`, only for an API that [answers whole](super::ApiKind::answers_whole)).
    pub stream: bool,
    /// How hard a reasoning model should think, for the APIs that carry it.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The target's `body { … }` fields.
    pub extra: &'a BTreeMap<String, serde_json::Value>,
    /// A data set item's own fields, which win over the target's.
    pub item: Option<&'a BTreeMap<String, serde_json::Value>>,
    /// Images sent with the prompt (each a `data:` URI or a URL), in the last message's
    /// content parts after its text; APIs without messages have nowhere to put them (the plan
    /// refuses images on them).
    pub images: &'a [&'a str],
    /// A pooling request's texts after the prompt (the rest of an embeddings batch, rerank's
    /// documents after its query); empty for the generation APIs.
    pub batch: &'a [String],
}

/// `{"model":"…"`: the start of every body.
pub fn open(out: &mut Vec<u8>, model: &str) {
    out.extend_from_slice(b"{\"model\":");
    json_str(out, model);
}

/// The rest of a streamed generation request, closing the body: `max_tokens`, `stream` with
/// usage in the stream, `ignore_eos` when asked, then the extra fields (an item's over the
/// target's, each key once).
pub fn streamed_generation(out: &mut Vec<u8>, req: &Request<'_>) {
    out.extend_from_slice(b",\"max_tokens\":");
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{}", req.max_tokens);
    out.extend_from_slice(b",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    if req.ignore_eos {
        out.extend_from_slice(b",\"ignore_eos\":true");
    }
    extra_fields(out, req);
    out.push(b'}');
}

/// The extra fields, each key once: an item's over the target's.
pub fn extra_fields(out: &mut Vec<u8>, req: &Request<'_>) {
    let template = req
        .extra
        .iter()
        .filter(|(k, _)| !req.item.is_some_and(|i| i.contains_key(*k)));
    for (k, v) in template.chain(req.item.into_iter().flatten()) {
        out.push(b',');
        json_str(out, k);
        out.push(b':');
        // Writing a JSON value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, v);
    }
}

/// A message's `content`: its text as a string, or with images, content parts (the text, then
/// one `image_url` part per image), as OpenAI's vision requests carry them.
pub fn content(out: &mut Vec<u8>, text: &str, images: &[&str]) {
    if images.is_empty() {
        json_str(out, text);
        return;
    }
    out.extend_from_slice(b"[{\"type\":\"text\",\"text\":");
    json_str(out, text);
    out.push(b'}');
    for url in images {
        out.extend_from_slice(b",{\"type\":\"image_url\",\"image_url\":{\"url\":");
        json_str(out, url);
        out.extend_from_slice(b"}}");
    }
    out.push(b']');
}

/// `s` as a JSON string, escaped exactly as serde_json escapes it (the quote, the backslash
/// and control characters; `\n`-style escapes where JSON has them, `\u00XX` for the rest).
/// Plain runs are found eight bytes at a time and copied whole: prompts are long and rarely
/// need an escape.
pub fn json_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut from = 0;
    loop {
        let end = plain_run(bytes, from);
        out.extend_from_slice(&bytes[from..end]);
        let Some(&b) = bytes.get(end) else { break };
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
        }
        from = end + 1;
    }
    out.push(b'"');
}
