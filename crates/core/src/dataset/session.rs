//! Multi-turn sessions' content: a ShareGPT conversation cut into turns when it is sampled,
//! and turn `k`'s messages (the history so far, then the new user message) at send time.

use super::compose::domain_seed;
use super::{ChatMessage, DataItem, DatasetSource, ItemPrompt, TurnTokens};
use super::{DatasetError, Prompt, PromptFactory, Tokenizer};

/// Seed domains of later turns' user messages and of synthetic replies.
const USER_DOMAIN: u64 = 0x7553_0000_0000_0000;
const REPLY_DOMAIN: u64 = 0x4E50_0000_0000_0000;

fn is_user(from: &str) -> bool {
    matches!(from, "human" | "user")
}

/// A sampled conversation as a session item: its first turn as vLLM's rules accepted it
/// (`first`), then every later human/gpt pair until the alternation breaks or a message is
/// empty. `kept` is the conversation's `(from, value)` turns.
pub(super) fn conversation(
    kept: Vec<(String, String)>,
    first: TurnTokens,
    output_override: Option<u32>,
    tokenizer: &Tokenizer,
) -> Result<DataItem, DatasetError> {
    let mut messages = Vec::with_capacity(kept.len());
    let mut turns = vec![first];
    let mut it = kept.into_iter();
    let (user, reply) = (it.next(), it.next());
    messages.push(message("user", user.map(|t| t.1).unwrap_or_default()));
    messages.push(message("assistant", reply.map(|t| t.1).unwrap_or_default()));
    while let (Some(u), Some(a)) = (it.next(), it.next()) {
        if !is_user(&u.0) || is_user(&a.0) {
            break;
        }
        let user_tokens = tokenizer.try_count(&u.1)? as u32;
        let reply_tokens = tokenizer.try_count(&a.1)? as u32;
        if user_tokens == 0 || reply_tokens == 0 {
            break;
        }
        turns.push(TurnTokens {
            user_tokens,
            output_tokens: output_override.unwrap_or(reply_tokens),
            reply_tokens,
        });
        messages.push(message("user", u.1));
        messages.push(message("assistant", a.1));
    }
    Ok(DataItem {
        prompt: ItemPrompt::Messages(messages),
        input_tokens: first.user_tokens,
        output_tokens: first.output_tokens,
        extra: Default::default(),
        images: Vec::new(),
        turns,
        agent: None,
        reference: None,
    })
}

fn message(role: &str, content: String) -> ChatMessage {
    ChatMessage {
        role: role.into(),
        content,
        tool: None,
    }
}

impl PromptFactory {
    /// Turn `k` of a session: user 0, assistant 0, …, user `k`, with the dataset's context.
    /// Earlier replies are `replies` when given (`history "server"`), else the data set's.
    /// `item` and `turns` are the session's (see `plan::SessionRecipe`).
    pub fn session_prompt(
        &self,
        dataset: usize,
        item: u64,
        turns: &[TurnTokens],
        k: usize,
        replies: Option<&[String]>,
    ) -> Prompt {
        let k = k.min(turns.len().saturating_sub(1));
        let items = match self.datasets.get(dataset) {
            Some(DatasetSource::Items { items, .. }) => items.get(item as usize),
            _ => None,
        };
        let conv = match items.map(|i| &i.prompt) {
            Some(ItemPrompt::Messages(ms)) => Some(ms.as_slice()),
            _ => None,
        };
        let mut ms = Vec::with_capacity(2 * k + 1);
        for (j, t) in turns.iter().enumerate().take(k + 1) {
            let user = match conv.and_then(|c| c.get(2 * j)) {
                Some(m) => m.content.clone(),
                None if j == 0 => match items.map(|i| &i.prompt) {
                    Some(ItemPrompt::Text(text)) => text.clone(),
                    _ => self.synthetic(t.user_tokens, self.keyed(dataset, item)),
                },
                None => self.synthetic(t.user_tokens, domain_seed(USER_DOMAIN ^ item, j as u64)),
            };
            ms.push(message("user", user));
            if j == k {
                break;
            }
            let reply = match (
                replies.and_then(|r| r.get(j)),
                conv.and_then(|c| c.get(2 * j + 1)),
            ) {
                (Some(r), _) => r.clone(),
                (None, Some(m)) => m.content.clone(),
                (None, None) => {
                    self.synthetic(t.reply_tokens, domain_seed(REPLY_DOMAIN ^ item, j as u64))
                }
            };
            ms.push(message("assistant", reply));
        }
        let context = self.contexts.get(dataset).copied().unwrap_or_default();
        self.with_context(Prompt::Messages(ms), &context, item)
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
