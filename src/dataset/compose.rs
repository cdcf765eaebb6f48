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
