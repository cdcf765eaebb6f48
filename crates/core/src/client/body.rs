//! The request body of one request: what does not change between requests (the API, the
//! model, `ignore_eos`, the reasoning effort, the target's extra fields), with each request's
//! prompt and length written by the API kind (see `protocol`). Built off the hot path (the scheduler prepares
//! the next body while it waits for the send time).

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::protocol::{Api, PromptRef, ReasoningEffort, Request};

/// Everything about the request body that does not change from request to request.
#[derive(Debug, Clone)]
pub struct BodyTemplate {
    pub api: Api,
    pub model: String,
    pub ignore_eos: bool,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub extra: BTreeMap<String, serde_json::Value>,
    /// Ask for a stream (the default), or the whole answer (`stream #false`).
    pub stream: bool,
}

impl BodyTemplate {
    /// The JSON body for one streaming request asking for `max_tokens` output tokens.
    pub fn build(&self, prompt: PromptRef<'_>, max_tokens: u32) -> Bytes {
        self.build_with(prompt, max_tokens, None, &[])
    }

    /// Like [`build`](Self::build), with a data set item's pass-through fields merged over
    /// the template's (without copying the template), and images (`data:` URIs or URLs) sent
    /// with the prompt.
    pub fn build_with(
        &self,
        prompt: PromptRef<'_>,
        max_tokens: u32,
        item: Option<&BTreeMap<String, serde_json::Value>>,
        images: &[&str],
    ) -> Bytes {
        self.write(prompt, max_tokens, item, images, &[])
    }

    /// Like [`build_with`](Self::build_with), with a pooling request's texts after the
    /// prompt (the rest of its batch, or its documents).
    pub fn build_batch(
        &self,
        prompt: PromptRef<'_>,
        batch: &[String],
        max_tokens: u32,
        item: Option<&BTreeMap<String, serde_json::Value>>,
    ) -> Bytes {
        self.write(prompt, max_tokens, item, &[], batch)
    }

    fn write(
        &self,
        prompt: PromptRef<'_>,
        max_tokens: u32,
        item: Option<&BTreeMap<String, serde_json::Value>>,
        images: &[&str],
        batch: &[String],
    ) -> Bytes {
        let images_len: usize = images.iter().map(|i| i.len() + 64).sum();
        let more: usize = batch.iter().map(|t| t.len() + 8).sum();
        let mut out =
            Vec::with_capacity(prompt.size_hint() + self.model.len() + 160 + images_len + more);
        self.api.kind().write_body(
            &mut out,
            &Request {
                model: &self.model,
                prompt,
                max_tokens,
                ignore_eos: self.ignore_eos,
                stream: self.stream,
                reasoning_effort: self.reasoning_effort,
                extra: &self.extra,
                item,
                images,
                batch,
            },
        );
        Bytes::from(out)
    }

    /// The path below the base URL this API posts to.
    pub fn path(&self) -> &'static str {
        self.api.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Message;
    use serde::Serialize;

    // The serde_json form of the body, the oracle the hand-written writer is checked against.
    #[derive(Serialize)]
    struct StreamOptions {
        include_usage: bool,
    }

    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        messages: Option<MessagesRef<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        prompt: Option<&'a str>,
        max_tokens: u32,
        stream: bool,
        stream_options: StreamOptions,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        ignore_eos: bool,
        #[serde(flatten)]
        extra: Extra<'a>,
    }

    /// The template's extra fields, with a data set item's own fields over them (item wins).
    struct Extra<'a> {
        template: &'a BTreeMap<String, serde_json::Value>,
        item: Option<&'a BTreeMap<String, serde_json::Value>>,
    }

    impl Serialize for Extra<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(None)?;
            for (k, v) in self.template {
                if !self.item.is_some_and(|i| i.contains_key(k)) {
                    map.serialize_entry(k, v)?;
                }
            }
            for (k, v) in self.item.into_iter().flatten() {
                map.serialize_entry(k, v)?;
            }
            map.end()
        }
    }

    enum MessagesRef<'a> {
        One([Message<'a>; 1]),
        Many(&'a [Message<'a>]),
    }

    impl Serialize for MessagesRef<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                MessagesRef::One(m) => m.serialize(s),
                MessagesRef::Many(m) => m.serialize(s),
            }
        }
    }

    /// The body as serde_json writes it.
    fn oracle(
        t: &BodyTemplate,
        prompt: PromptRef<'_>,
        max_tokens: u32,
        item: Option<&BTreeMap<String, serde_json::Value>>,
    ) -> Vec<u8> {
        let joined: String;
        let (messages, prompt) = match (t.api.as_str(), prompt) {
            ("chat", PromptRef::Text(t)) => (
                Some(MessagesRef::One([Message {
                    role: "user",
                    content: t,
                    tool: None,
                }])),
                None,
            ),
            ("chat", PromptRef::Messages(m)) => (Some(MessagesRef::Many(m)), None),
            (_, PromptRef::Text(t)) => (None, Some(t)),
            (_, PromptRef::Messages([one])) => (None, Some(one.content)),
            (_, PromptRef::Messages(m)) => {
                joined = m.iter().map(|m| m.content).collect::<Vec<_>>().join(" ");
                (None, Some(joined.as_str()))
            }
        };
        let body = Body {
            model: &t.model,
            messages,
            prompt,
            max_tokens,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            ignore_eos: t.ignore_eos,
            extra: Extra {
                template: &t.extra,
                item,
            },
        };
        serde_json::to_vec(&body).unwrap()
    }

    #[test]
    fn the_body_is_byte_for_byte_what_serde_json_writes() {
        let texts = [
            "",
            "plain words only",
            "quote \" backslash \\ slash / tab \t nl \n cr \r",
            "\u{0}\u{1}\u{8}\u{b}\u{c}\u{1f}\u{7f} é 日本 🎉",
            "a long run of plain text before an escape at the end\"",
        ];
        let mut item = BTreeMap::new();
        item.insert("temperature".to_string(), serde_json::json!(0.7));
        item.insert("we\"ird".to_string(), serde_json::json!({"a": [1, "x\n"]}));
        for api in [Api::CHAT, Api::COMPLETIONS] {
            for ignore_eos in [false, true] {
                let mut t = template(api);
                t.ignore_eos = ignore_eos;
                t.model = "m\"odel".into();
                for text in texts {
                    for it in [None, Some(&item)] {
                        let p = PromptRef::Text(text);
                        assert_eq!(t.build_with(p, 7, it, &[]).to_vec(), oracle(&t, p, 7, it));
                        let ms = [
                            Message {
                                role: "system",
                                content: text,
                                tool: None,
                            },
                            Message {
                                role: "user",
                                content: "q\u{2}",
                                tool: None,
                            },
                        ];
                        for m in [&ms[..], &ms[..1]] {
                            let p = PromptRef::Messages(m);
                            assert_eq!(t.build_with(p, 9, it, &[]).to_vec(), oracle(&t, p, 9, it));
                        }
                    }
                }
            }
        }
    }

    fn template(api: Api) -> BodyTemplate {
        let mut extra = BTreeMap::new();
        extra.insert("temperature".to_string(), serde_json::json!(0.0));
        BodyTemplate {
            api,
            model: "m".into(),
            ignore_eos: true,
            reasoning_effort: None,
            extra,
            stream: true,
        }
    }

    #[test]
    fn chat_body() {
        let b = template(Api::CHAT).build(PromptRef::Text("hello \"you\""), 32);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["messages"][0]["content"], "hello \"you\"");
        assert_eq!(v["messages"][0]["role"], "user");
        assert_eq!(v["max_tokens"], 32);
        assert_eq!(v["stream"], true);
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["ignore_eos"], true);
        assert_eq!(v["temperature"], 0.0);
        assert!(v.get("prompt").is_none());
    }

    #[test]
    fn completions_body() {
        let mut t = template(Api::COMPLETIONS);
        t.ignore_eos = false;
        let b = t.build(PromptRef::Text("abc"), 5);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["prompt"], "abc");
        assert!(v.get("messages").is_none());
        assert!(v.get("ignore_eos").is_none());
        assert_eq!(t.path(), "/completions");
    }

    #[test]
    fn completions_join_a_prefix_message_with_the_prompt() {
        let t = template(Api::COMPLETIONS);
        let ms = [
            Message {
                role: "system",
                content: "shared prefix",
                tool: None,
            },
            Message {
                role: "user",
                content: "question",
                tool: None,
            },
        ];
        let b = t.build(PromptRef::Messages(&ms), 4);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["prompt"], "shared prefix question");
        let b = t.build(PromptRef::Messages(&ms[1..]), 4);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["prompt"], "question");
    }

    #[test]
    fn an_items_fields_override_the_templates() {
        let mut item = BTreeMap::new();
        item.insert("temperature".to_string(), serde_json::json!(0.7));
        item.insert("top_p".to_string(), serde_json::json!(0.9));
        let t = template(Api::CHAT);
        let b = t.build_with(PromptRef::Text("x"), 4, Some(&item), &[]);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["temperature"], 0.7);
        assert_eq!(v["top_p"], 0.9);
        // Exactly one `temperature` key on the wire.
        assert_eq!(
            String::from_utf8_lossy(&b).matches("temperature").count(),
            1
        );
        assert_eq!(t.extra["temperature"], 0.0, "the template is untouched");
    }

    #[test]
    fn images_go_in_the_last_messages_content_parts() {
        let t = template(Api::CHAT);
        let images = ["data:image/png;base64,iVBO\"R", "https://h/x.jpg"];
        let b = t.build_with(PromptRef::Text("look \"here\""), 4, None, &images);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(
            v["messages"][0]["content"],
            serde_json::json!([
                {"type": "text", "text": "look \"here\""},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO\"R"}},
                {"type": "image_url", "image_url": {"url": "https://h/x.jpg"}},
            ])
        );
        let ms = [
            Message {
                role: "system",
                content: "prefix",
                tool: None,
            },
            Message {
                role: "user",
                content: "q",
                tool: None,
            },
        ];
        let b = t.build_with(PromptRef::Messages(&ms), 4, None, &images[1..]);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["messages"][0]["content"], "prefix");
        assert_eq!(v["messages"][1]["content"][0]["text"], "q");
        assert_eq!(
            v["messages"][1]["content"][1]["image_url"]["url"],
            "https://h/x.jpg"
        );
        // No images: plain string content, byte for byte as before.
        assert_eq!(
            t.build_with(PromptRef::Messages(&ms), 4, None, &[]),
            t.build(PromptRef::Messages(&ms), 4)
        );
    }
}
