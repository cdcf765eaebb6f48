//! A request's body from its prompt: plain text, a conversation, and the pass-through fields a
//! data set item adds to the target's `body { … }`.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::client::{BodyTemplate, Message, PromptRef};
use crate::dataset::Prompt;

/// The body of one request. `extra`, when given, is merged over the template's fields.
pub(super) fn build_body(
    template: &BodyTemplate,
    prompt: &Prompt,
    max_tokens: u32,
    extra: Option<&BTreeMap<String, serde_json::Value>>,
) -> Bytes {
    let merged;
    let template = match extra {
        Some(e) => {
            let mut t = template.clone();
            t.extra
                .extend(e.iter().map(|(k, v)| (k.clone(), v.clone())));
            merged = t;
            &merged
        }
        None => template,
    };
    match prompt {
        Prompt::Text(text) => template.build(PromptRef::Text(text), max_tokens),
        Prompt::Messages(ms) => {
            let msgs: Vec<Message<'_>> = ms
                .iter()
                .map(|m| Message {
                    role: &m.role,
                    content: &m.content,
                })
                .collect();
            template.build(PromptRef::Messages(&msgs), max_tokens)
        }
    }
}
