//! Prompts built from parts: a trace row's prefix blocks (equal `hash_ids` give byte-identical
//! text, so a server's prefix cache behaves as in production), a group's shared system prefix,
//! and retrieved chunks appended to the question (the RAG case). Parts are runs of single-token
//! words joined by single spaces, so under tiktoken the token counts add up exactly.

use super::prompt::{Prompt, PromptFactory, splitmix64};
use super::{ChatMessage, ContextSpec, DatasetSource, ItemPrompt, TraceRow};

/// Seed domains, so a block, a prefix and a chunk with the same number differ.
const BLOCK_DOMAIN: u64 = 0xB10C_0000_0000_0000;
const PREFIX_DOMAIN: u64 = 0x5EED_0000_0000_0000;
const CHUNK_DOMAIN: u64 = 0xC4C4_0000_0000_0000;

impl From<ItemPrompt> for Prompt {
    fn from(p: ItemPrompt) -> Prompt {
        match p {
            ItemPrompt::Text(t) => Prompt::Text(t),
            ItemPrompt::Messages(m) => Prompt::Messages(m),
        }
    }
}

pub(super) fn domain_seed(domain: u64, id: u64) -> u64 {
    let mut s = domain ^ id;
    splitmix64(&mut s)
}

impl PromptFactory {
    /// A trace row's text: block `j` (of `block_tokens`, the last one shorter) is derived from
    /// `hash_ids[j]` alone; blocks beyond the ids come from the row's own seed.
    pub(super) fn blocks(&self, row: &TraceRow, block_tokens: u32, item: u64) -> String {
        let block = block_tokens.max(1);
        let mut left = row.input_tokens;
        let mut parts = Vec::new();
        let mut j = 0usize;
        while left > 0 {
            let n = left.min(block);
            let seed = match row.hash_ids.get(j) {
                Some(id) => domain_seed(BLOCK_DOMAIN, *id),
                None => domain_seed(item, j as u64),
            };
            parts.push(self.words_text(n, seed));
            left -= n;
            j += 1;
        }
        parts.join(" ")
    }

    /// Adds the group's shared prefix in front and the retrieved chunks after the question.
    pub(super) fn with_context(&self, core: Prompt, ctx: &ContextSpec, item: u64) -> Prompt {
        if ctx.shared_prefix.is_none() && ctx.retrieved.is_none() {
            return core;
        }
        let prefix = ctx.shared_prefix.map(|p| {
            let group = item % u64::from(p.groups.max(1));
            self.words_text(p.tokens, domain_seed(PREFIX_DOMAIN, group))
        });
        let chunks = ctx.retrieved.map(|r| {
            let mut state = item ^ CHUNK_DOMAIN;
            (0..r.chunks)
                .map(|_| {
                    let id = splitmix64(&mut state) % u64::from(r.corpus.max(1));
                    self.words_text(r.tokens, domain_seed(CHUNK_DOMAIN, id))
                })
                .collect::<Vec<_>>()
                .join(" ")
        });
        match core {
            Prompt::Text(q) => {
                let parts: Vec<&str> = prefix
                    .as_deref()
                    .into_iter()
                    .chain(std::iter::once(q.as_str()))
                    .chain(chunks.as_deref())
                    .filter(|s| !s.is_empty())
                    .collect();
                Prompt::Text(parts.join(" "))
            }
            Prompt::Messages(mut ms) => {
                if let Some(c) = chunks
                    && let Some(last) = ms.last_mut()
                {
                    last.content.push(' ');
                    last.content.push_str(&c);
                }
                if let Some(p) = prefix {
                    ms.insert(
                        0,
                        ChatMessage {
                            role: "system".into(),
                            content: p,
                            tool: None,
                        },
                    );
                }
                Prompt::Messages(ms)
            }
        }
    }
}

impl PromptFactory {
    /// Request-body fields a data set item carries (JSONL pass-through keys), if any.
    pub fn item_extra(
        &self,
        dataset: usize,
        item: u64,
    ) -> Option<&std::collections::BTreeMap<String, serde_json::Value>> {
        match self.datasets.get(dataset)? {
            DatasetSource::Items { items, .. } => items
                .get(item as usize)
                .map(|i| &i.extra)
                .filter(|e| !e.is_empty()),
            _ => None,
        }
    }
}

/// Words a run's prompt salt has: a few tokens, under any prefix cache's block size (16 tokens
/// on vLLM's GPUs), so the salt shared by one run's prompts is never a cached block itself.
pub const SALT_WORDS: u32 = 4;

/// Text a salt is measured against: enough of a prompt's start that what follows cannot
/// change how the salt and the first words tokenize.
const SALT_HEAD_BYTES: usize = 256;

/// `cache-salt`: a few words put in front of every prompt of one stage round, drawn afresh for
/// each run, so that a server's prompt cache cannot serve one run's prompts to the next. Every
/// prompt of the round has the same salt, so prefixes the plan shares stay shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Salt {
    text: String,
}

impl Salt {
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl PromptFactory {
    /// The salt for `seed`: [`SALT_WORDS`] single-token words spelling it.
    pub fn salt(&self, seed: u64) -> Salt {
        Salt {
            text: self.words_text(SALT_WORDS, seed),
        }
    }

    /// `prompt` with `salt` and a space in front of its first text (a conversation's first
    /// message), and the tokens that added under the scenario's tokenizer: counted on the
    /// prompt's first few hundred bytes, with and without the salt, so it is exact for
    /// tokenizers that split words at spaces (tiktoken's, and most byte-level BPE files).
    pub fn salted(&self, salt: &Salt, prompt: Prompt) -> (Prompt, u32) {
        let add = |text: &mut String| {
            let added = self.salt_tokens(salt, text);
            text.insert(0, ' ');
            text.insert_str(0, &salt.text);
            added
        };
        match prompt {
            Prompt::Text(mut t) => {
                let n = add(&mut t);
                (Prompt::Text(t), n)
            }
            Prompt::Messages(mut ms) => {
                let n = ms.first_mut().map_or(0, |m| add(&mut m.content));
                (Prompt::Messages(ms), n)
            }
        }
    }

    fn salt_tokens(&self, salt: &Salt, text: &str) -> u32 {
        let head = if text.len() <= SALT_HEAD_BYTES {
            text
        } else {
            // Cut before a space, so the head's last word is whole.
            let mut end = SALT_HEAD_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let cut = text[..end].rfind(char::is_whitespace).filter(|&c| c > 0);
            &text[..cut.unwrap_or(end)]
        };
        let salted = format!("{} {head}", salt.text);
        let with = self.tokenizer.count(&salted);
        let without = self.tokenizer.count(head);
        with.saturating_sub(without).min(u32::MAX as usize) as u32
    }
}

/// The salt seed of one stage round from the run's: distinct per stage and per round, since
/// rounds replay the same requests and a salt shared with the previous round would let the
/// cache serve them.
pub fn salt_domain(stage: &str, round: u32) -> u64 {
    let mut h = SALT_DOMAIN ^ u64::from(round);
    for b in stage.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    splitmix64(&mut h)
}

const SALT_DOMAIN: u64 = 0x5A17_0000_0000_0000;
