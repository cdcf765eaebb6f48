//! A request's body from its prompt: plain text, a conversation, and the pass-through fields a
//! data set item adds to the target's `body { … }`.

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::client::{BodyTemplate, Message, PromptRef};
use crate::dataset::Prompt;

/// The body of one request. `extra`, when given, is merged over the template's fields
/// (without copying the template).
pub(super) fn build_body(
    template: &BodyTemplate,
    prompt: &Prompt,
    max_tokens: u32,
    extra: Option<&BTreeMap<String, serde_json::Value>>,
) -> Bytes {
    match prompt {
        Prompt::Text(text) => template.build_with(PromptRef::Text(text), max_tokens, extra),
        Prompt::Messages(ms) => {
            let msgs: Vec<Message<'_>> = ms
                .iter()
                .map(|m| Message {
                    role: &m.role,
                    content: &m.content,
                })
                .collect();
            template.build_with(PromptRef::Messages(&msgs), max_tokens, extra)
        }
    }
}
