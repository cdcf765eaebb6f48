//! The OpenAI wire format as vLLM speaks it: request decoding (lenient, unknown fields
//! accepted), prompt token counting, and the pre-serialized SSE chunk pieces the scheduler
//! writes tokens into without building JSON per token.

use bytes::{BufMut, BytesMut};
use serde::{Deserialize, Serialize};

use super::tokens::PromptSink;
pub(crate) use super::usage::{Finish, Timings};

/// Tokens added per chat message (role and separators) on top of its content, and once for the
/// assistant reply's priming, following OpenAI's published counting recipe for cl100k models.
pub(crate) const PER_MESSAGE_TOKENS: u64 = 3;
pub(crate) const REPLY_PRIMING_TOKENS: u64 = 3;

/// Which OpenAI endpoint a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Endpoint {
    Chat,
    Completions,
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinishReason {
    Length,
    Stop,
}

impl FinishReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FinishReason::Length => "length",
            FinishReason::Stop => "stop",
        }
    }
}

#[derive(Deserialize)]
struct RawRequest {
    messages: Option<Vec<RawMessage>>,
    prompt: Option<RawPrompt>,
    max_tokens: Option<u64>,
    max_completion_tokens: Option<u64>,
    stream: Option<bool>,
    stream_options: Option<RawStreamOptions>,
    ignore_eos: Option<bool>,
    min_tokens: Option<u64>,
    /// llama.cpp's per-request switch for its prompt cache.
    cache_prompt: Option<bool>,
}

#[derive(Deserialize)]
pub(crate) struct RawMessage {
    role: Option<RawRole>,
    content: Option<RawContent>,
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
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum RawPrompt {
    Text(String),
    Texts(Vec<String>),
    Ids(Vec<u64>),
}

#[derive(Deserialize)]
struct RawStreamOptions {
    include_usage: Option<bool>,
}

/// What the simulator needs from a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GenRequest {
    pub prompt_tokens: u64,
    pub max_tokens: Option<u64>,
    pub min_tokens: u64,
    pub ignore_eos: bool,
    pub stream: bool,
    pub include_usage: bool,
    /// The prompt's token ids, collected only when asked (prefix cache).
    pub prompt_ids: Vec<u32>,
    /// llama.cpp's `cache_prompt` (default true): false keeps the request out of the prefix
    /// cache.
    pub cache_prompt: bool,
}

/// A 400 answer: the message and the offending parameter, if one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BadRequest {
    pub message: String,
    pub param: Option<&'static str>,
}

/// Feeds a chat conversation into `sink`: each message's formatting tokens and text, then the
/// reply's priming (unless `add_generation_prompt` is false, as vLLM's `/tokenize` allows).
pub(crate) fn chat_tokens(
    messages: &[RawMessage],
    add_generation_prompt: bool,
    sink: &mut PromptSink,
) {
    const _: () = assert!(PER_MESSAGE_TOKENS == 3 && REPLY_PRIMING_TOKENS == 3);
    for m in messages {
        sink.message_start(match &m.role {
            Some(RawRole::Text(r)) => r,
            _ => "user",
        });
        match &m.content {
            Some(RawContent::Text(t)) => sink.text(t),
            Some(RawContent::Parts(parts)) => {
                for t in parts.iter().filter_map(|p| p.text.as_deref()) {
                    sink.text(t);
                }
            }
            None => {}
        }
    }
    if add_generation_prompt {
        sink.message_start("assistant");
    }
}

/// Feeds a completions prompt into `sink`.
pub(crate) fn prompt_tokens(prompt: &RawPrompt, sink: &mut PromptSink) {
    match prompt {
        RawPrompt::Text(t) => sink.text(t),
        RawPrompt::Texts(ts) => ts.iter().for_each(|t| sink.text(t)),
        RawPrompt::Ids(ids) => sink.ids(ids),
    }
}

/// Decodes a request body for `endpoint`; with `collect_ids` the prompt's token ids are kept.
pub(crate) fn parse(
    endpoint: Endpoint,
    body: &[u8],
    collect_ids: bool,
) -> Result<GenRequest, BadRequest> {
    let raw: RawRequest = serde_json::from_slice(body).map_err(|e| BadRequest {
        message: format!("invalid request body: {e}"),
        param: None,
    })?;
    let mut sink = if collect_ids {
        PromptSink::collecting()
    } else {
        PromptSink::counting()
    };
    match endpoint {
        Endpoint::Chat => {
            let messages = raw.messages.ok_or(BadRequest {
                message: "missing required field `messages`".into(),
                param: Some("messages"),
            })?;
            chat_tokens(&messages, true, &mut sink);
        }
        Endpoint::Completions => match &raw.prompt {
            Some(p) => prompt_tokens(p, &mut sink),
            None => {
                return Err(BadRequest {
                    message: "missing required field `prompt`".into(),
                    param: Some("prompt"),
                });
            }
        },
    }
    Ok(GenRequest {
        prompt_tokens: sink.count(),
        max_tokens: raw.max_completion_tokens.or(raw.max_tokens),
        min_tokens: raw.min_tokens.unwrap_or(0),
        ignore_eos: raw.ignore_eos.unwrap_or(false),
        stream: raw.stream.unwrap_or(false),
        include_usage: raw
            .stream_options
            .and_then(|o| o.include_usage)
            .unwrap_or(false),
        prompt_ids: sink.into_ids(),
        cache_prompt: raw.cache_prompt.unwrap_or(true),
    })
}

/// An OpenAI-style error body: `{"error":{"message","type","param","code"}}`.
pub(crate) fn error_body(status: u16, kind: &str, message: &str, param: Option<&str>) -> String {
    serde_json::json!({
        "error": { "message": message, "type": kind, "param": param, "code": status }
    })
    .to_string()
}

/// Pre-serialized pieces of one response's SSE chunks. The `head` (`data: {"id":…,"model":…,`)
/// is built once per request; per token only the word and a static suffix are appended.
pub(crate) struct Framing {
    endpoint: Endpoint,
    stream: bool,
    include_usage: bool,
    /// Usage carries `prompt_tokens_details` (`prefix-cache`).
    usage_details: bool,
    /// `data: {"id":"…","object":"…","created":N,"model":"…",` then the choice opening up to
    /// the content's opening quote; `head_len` marks where the shared head ends.
    prefix: Box<[u8]>,
    head_len: usize,
}

const CHAT_OPEN: &[u8] = br#""choices":[{"index":0,"delta":{"content":""#;
const TEXT_OPEN: &[u8] = br#""choices":[{"index":0,"text":""#;
const CHAT_CLOSE: &[u8] = br#""},"logprobs":null,"finish_reason":"#;
const TEXT_CLOSE: &[u8] = br#"","logprobs":null,"finish_reason":"#;
const ROLE_CHOICE: &[u8] = br#""choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#;
const DONE: &[u8] = b"data: [DONE]\n\n";

impl Framing {
    pub(crate) fn new(
        endpoint: Endpoint,
        id: u64,
        created: u64,
        model: &str,
        req: &GenRequest,
        usage_details: bool,
    ) -> Framing {
        let (id_prefix, object, open) = match endpoint {
            Endpoint::Chat => ("chatcmpl-sim-", "chat.completion.chunk", CHAT_OPEN),
            Endpoint::Completions => ("cmpl-sim-", "text_completion", TEXT_OPEN),
        };
        let model = serde_json::to_string(model).unwrap_or_else(|_| "\"\"".into());
        let head = format!(
            r#"data: {{"id":"{id_prefix}{id}","object":"{object}","created":{created},"model":{model},"#
        );
        let mut prefix = head.clone().into_bytes();
        prefix.extend_from_slice(open);
        Framing {
            endpoint,
            stream: req.stream,
            include_usage: req.include_usage,
            usage_details,
            prefix: prefix.into_boxed_slice(),
            head_len: head.len(),
        }
    }

    pub(crate) fn is_stream(&self) -> bool {
        self.stream
    }

    /// Writes the bytes for one emitted token: for a stream, the role chunk before the first
    /// token (chat), the token's chunk, and after the last one the usage chunk (if asked) and
    /// `[DONE]`; `timings` go on the last JSON chunk, as llama-server puts them. For a
    /// non-streaming response, only the word.
    pub(crate) fn write_token(
        &self,
        buf: &mut BytesMut,
        word: &str,
        first: bool,
        finish: Option<&Finish>,
    ) {
        if !self.stream {
            buf.put_slice(word.as_bytes());
            return;
        }
        let head = &self.prefix[..self.head_len];
        if first && self.endpoint == Endpoint::Chat {
            buf.put_slice(head);
            buf.put_slice(ROLE_CHOICE);
            buf.put_slice(b"\n\n");
        }
        buf.put_slice(&self.prefix);
        buf.put_slice(word.as_bytes());
        buf.put_slice(match self.endpoint {
            Endpoint::Chat => CHAT_CLOSE,
            Endpoint::Completions => TEXT_CLOSE,
        });
        let Some(finish) = finish else {
            buf.put_slice(b"null}]}\n\n");
            return;
        };
        buf.put_u8(b'"');
        buf.put_slice(finish.reason.as_str().as_bytes());
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
        if self.stream {
            buf.put_slice(&self.prefix[..self.head_len]);
            buf.put_slice(b"\"choices\":[{\"index\":0,<<garbage\n\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(stream: bool, include_usage: bool) -> GenRequest {
        GenRequest {
            prompt_tokens: 7,
            max_tokens: Some(2),
            min_tokens: 0,
            ignore_eos: true,
            stream,
            include_usage,
            prompt_ids: Vec::new(),
            cache_prompt: true,
        }
    }

    fn finish(reason: FinishReason, prompt: u64, completion: u64) -> Finish {
        Finish {
            reason,
            prompt,
            completion,
            cached: 0,
            timings: None,
        }
    }

    fn events(buf: &[u8]) -> Vec<String> {
        std::str::from_utf8(buf)
            .unwrap()
            .split_terminator("\n\n")
            .map(|e| e.strip_prefix("data: ").unwrap().to_string())
            .collect()
    }

    #[test]
    fn chat_stream_chunks_are_valid_json() {
        let f = Framing::new(Endpoint::Chat, 5, 100, "m\"q", &req(true, true), false);
        let mut buf = BytesMut::new();
        f.write_token(&mut buf, " the", true, None);
        f.write_token(
            &mut buf,
            " of",
            false,
            Some(&finish(FinishReason::Length, 7, 2)),
        );
        let ev = events(&buf);
        assert_eq!(ev.len(), 5);
        let v: Vec<serde_json::Value> = ev[..4]
            .iter()
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        assert_eq!(v[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(v[0]["model"], "m\"q");
        assert_eq!(v[1]["choices"][0]["delta"]["content"], " the");
        assert_eq!(v[1]["object"], "chat.completion.chunk");
        assert_eq!(v[1]["id"], "chatcmpl-sim-5");
        assert!(v[1]["choices"][0]["finish_reason"].is_null());
        assert_eq!(v[2]["choices"][0]["finish_reason"], "length");
        assert_eq!(v[3]["choices"].as_array().unwrap().len(), 0);
        assert_eq!(v[3]["usage"]["total_tokens"], 9);
        assert_eq!(ev[4], "[DONE]");
    }

    #[test]
    fn completions_and_plain_framing() {
        let f = Framing::new(Endpoint::Completions, 1, 1, "m", &req(true, false), false);
        let mut buf = BytesMut::new();
        f.write_token(
            &mut buf,
            " a",
            true,
            Some(&finish(FinishReason::Stop, 1, 1)),
        );
        let ev = events(&buf);
        assert_eq!(ev.len(), 2);
        let v: serde_json::Value = serde_json::from_str(&ev[0]).unwrap();
        assert_eq!(v["choices"][0]["text"], " a");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        let mut garbage = BytesMut::new();
        f.write_garbage(&mut garbage);
        assert!(serde_json::from_str::<serde_json::Value>(&events(&garbage)[0]).is_err());

        let plain = Framing::new(Endpoint::Completions, 1, 1, "m", &req(false, false), false);
        let mut buf = BytesMut::new();
        plain.write_token(
            &mut buf,
            " a",
            true,
            Some(&finish(FinishReason::Stop, 1, 1)),
        );
        assert_eq!(&buf[..], b" a");
    }

    fn parse_counting(endpoint: Endpoint, body: &[u8]) -> Result<GenRequest, BadRequest> {
        parse(endpoint, body, false)
    }

    #[test]
    fn stream_tail_with_cached_tokens_and_timings() {
        let timings = Timings {
            cache_n: 16,
            prompt_n: 8,
            prompt_ms: 12.0,
            predicted_n: 5,
            predicted_ms: 20.0,
        };
        let done = Finish {
            cached: 16,
            timings: Some(timings.clone()),
            ..finish(FinishReason::Length, 24, 5)
        };
        for include_usage in [true, false] {
            let f = Framing::new(Endpoint::Chat, 1, 1, "m", &req(true, include_usage), true);
            let mut buf = BytesMut::new();
            f.write_token(&mut buf, " a", false, Some(&done));
            let ev = events(&buf);
            assert_eq!(ev.last().unwrap(), "[DONE]");
            let last: serde_json::Value = serde_json::from_str(&ev[ev.len() - 2]).unwrap();
            let t = &last["timings"];
            assert_eq!(t["cache_n"], 16);
            assert_eq!(t["prompt_n"], 8);
            assert_eq!(t["prompt_per_token_ms"], 1.5);
            assert_eq!(t["prompt_per_second"], 8.0 / 12.0 * 1e3);
            assert_eq!(t["predicted_per_token_ms"], 5.0);
            assert_eq!(t["predicted_per_second"], 200.0);
            if include_usage {
                assert_eq!(
                    last["usage"],
                    serde_json::json!({"prompt_tokens": 24, "completion_tokens": 5,
                        "total_tokens": 29, "prompt_tokens_details": {"cached_tokens": 16}})
                );
                let fin: serde_json::Value = serde_json::from_str(&ev[0]).unwrap();
                assert!(fin.get("timings").is_none());
            } else {
                assert_eq!(ev.len(), 2);
            }
        }
    }

    #[test]
    fn collected_ids_match_the_count() {
        let body = br#"{"messages":[{"role":"system","content":"be brief"},{"role":7,"content":[{"type":"text","text":"hello"}]}],"cache_prompt":false}"#;
        let counted = parse(Endpoint::Chat, body, false).unwrap();
        let collected = parse(Endpoint::Chat, body, true).unwrap();
        assert!(counted.prompt_ids.is_empty());
        assert_eq!(collected.prompt_ids.len() as u64, counted.prompt_tokens);
        assert_eq!(collected.prompt_tokens, counted.prompt_tokens);
        assert!(!collected.cache_prompt);
        let c = parse(Endpoint::Completions, br#"{"prompt":["ab cd","ef"]}"#, true).unwrap();
        assert_eq!(c.prompt_ids.len() as u64, c.prompt_tokens);
        assert!(c.cache_prompt);
    }

    #[test]
    fn parsing_counts_tokens_and_reports_missing_fields() {
        let r = parse_counting(
            Endpoint::Chat,
            br#"{"messages":[{"role":"user","content":"hello world"},{"role":"user","content":[{"type":"text","text":"hello"}]}],"max_completion_tokens":5,"max_tokens":9,"stream":true,"stream_options":{"include_usage":true},"temperature":0.3,"whatever":{}}"#,
        )
        .unwrap();
        assert_eq!(
            r.prompt_tokens,
            2 + 1 + 2 * PER_MESSAGE_TOKENS + REPLY_PRIMING_TOKENS
        );
        assert_eq!(r.max_tokens, Some(5));
        assert!(r.stream && r.include_usage);
        let c = parse_counting(Endpoint::Completions, br#"{"prompt":[1,2,3]}"#).unwrap();
        assert_eq!(c.prompt_tokens, 3);
        assert!(!c.stream);
        assert_eq!(
            parse_counting(Endpoint::Chat, br#"{"prompt":"x"}"#)
                .unwrap_err()
                .param,
            Some("messages")
        );
        assert_eq!(
            parse_counting(Endpoint::Completions, b"{}")
                .unwrap_err()
                .param,
            Some("prompt")
        );
        assert!(parse_counting(Endpoint::Chat, b"{not json").is_err());
        assert!(parse_counting(Endpoint::Chat, br#"{"messages":[],"max_tokens":"x"}"#).is_err());
    }
}
