//! Synthetic prompts of an exact token length. A prompt is N space-separated words from a list
//! of single-token words: tiktoken's pre-tokenizer splits before every ` word`, so N words are
//! N tokens, with no tokenizer call per prompt once the list is verified. The first words spell
//! the request's item seed in base `len(words)`, so prompts differ from their first tokens on
//! and a server's prefix cache cannot flatter the results; the rest follow from the same seed.
//! The seed mixes in the prompt's length and its data set's definition: the same item at
//! another length, or in another data set (another stage, another scenario file of the same
//! seed), shares no prefix with it. Prefixes shared on purpose (a context's shared prefix, a
//! trace's `hash_ids`, a session's history) are drawn from their own seeds.

use std::sync::Arc;

use super::words::single_token_words;
use super::{ChatMessage, ContextSpec, DatasetError, DatasetSource, Tokenizer};

/// How many leading words spell the item seed (4 words of a 2,048-word list = 44 bits).
const KEY_WORDS: u32 = 4;

/// Seed domains of a synthetic text's length and of its data set's definition.
const LENGTH_DOMAIN: u64 = 0x1E46_0000_0000_0000;
const DATASET_DOMAIN: u64 = 0xDA7A_0000_0000_0000;

/// What is sent as the request's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// A single user message (chat API) or the `prompt` string (completions API).
    Text(String),
    /// A conversation (chat API); the completions API is sent the last message.
    Messages(Vec<ChatMessage>),
}

impl Prompt {
    /// The text, or a conversation's last message.
    pub fn as_text(&self) -> &str {
        match self {
            Prompt::Text(t) => t,
            Prompt::Messages(m) => m.last().map_or("", |m| m.content.as_str()),
        }
    }
}

/// Turns recipes into prompts. Build once per run (it loads the tokenizer) and share it: it is
/// `Send + Sync` and cheap to clone.
#[derive(Debug, Clone)]
pub struct PromptFactory {
    pub(super) tokenizer: Tokenizer,
    words: Arc<[&'static str]>,
    pub(super) datasets: Arc<[DatasetSource]>,
    /// Per dataset (empty: no context anywhere).
    pub(super) contexts: Arc<[ContextSpec]>,
    /// Per dataset: what its synthetic texts' seeds are mixed with (see [`dataset_key`]).
    keys: Arc<[u64]>,
    /// True when N words are known to be N tokens (verified at construction).
    exact_by_construction: bool,
}

impl PromptFactory {
    /// Prompts for `datasets` (each with the context added to its prompts), under `tokenizer`.
    pub fn new(
        tokenizer: Tokenizer,
        datasets: Vec<(DatasetSource, ContextSpec)>,
    ) -> Result<PromptFactory, DatasetError> {
        let (sources, contexts): (Vec<_>, Vec<_>) = datasets.into_iter().unzip();
        let mut f = PromptFactory::with_tokenizer(tokenizer, sources)?;
        f.contexts = contexts.into();
        Ok(f)
    }

    /// Like [`new`](Self::new), with no context on any data set.
    pub fn with_tokenizer(
        tokenizer: Tokenizer,
        datasets: Vec<DatasetSource>,
    ) -> Result<PromptFactory, DatasetError> {
        let words: Arc<[&'static str]> = single_token_words(&tokenizer)?.into();
        // One whole-list check stands in for a check per prompt: every word, every neighbour.
        let exact_by_construction =
            tokenizer.splits_words() && tokenizer.try_count(&words.join(" "))? == words.len();
        let keys = datasets.iter().map(dataset_key).collect();
        Ok(PromptFactory {
            tokenizer,
            words,
            datasets: datasets.into(),
            contexts: Arc::new([]),
            keys,
            exact_by_construction,
        })
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The prompt of one request of data set `dataset`: exactly `input_tokens` tokens under
    /// the scenario's tokenizer, and the same text for the same `item` (see
    /// `plan::RequestRecipe`).
    pub fn prompt(&self, dataset: usize, input_tokens: u32, item: u64) -> Prompt {
        let context = self.contexts.get(dataset).copied().unwrap_or_default();
        let question = input_tokens.saturating_sub(context.extra_tokens());
        let core = match self.datasets.get(dataset) {
            Some(DatasetSource::Synthetic { .. }) | None => {
                Prompt::Text(self.synthetic(question, self.keyed(dataset, item)))
            }
            Some(DatasetSource::Items { items, .. }) => match items.get(item as usize) {
                Some(it) => it.prompt.clone().into(),
                None => Prompt::Text(self.synthetic(question, item)),
            },
            Some(DatasetSource::Trace {
                rows, block_tokens, ..
            }) => match rows.get(item as usize) {
                Some(row) => Prompt::Text(self.blocks(row, *block_tokens, item)),
                None => Prompt::Text(self.synthetic(question, item)),
            },
        };
        self.with_context(core, &context, item)
    }

    /// `item` mixed with data set `dataset`'s key: the seed of its synthetic texts.
    pub(super) fn keyed(&self, dataset: usize, item: u64) -> u64 {
        item ^ self.keys.get(dataset).copied().unwrap_or(0)
    }

    /// `tokens` words derived from `item` and `tokens` (texts of other lengths share no
    /// prefix with it); for tokenizers whose word boundaries are not known (Hugging Face
    /// files) the word count is corrected until the token count matches.
    pub fn synthetic(&self, tokens: u32, item: u64) -> String {
        // XOR with a function of the length: still a bijection of the item at each length.
        let item = item ^ splitmix64(&mut (LENGTH_DOMAIN ^ u64::from(tokens)));
        let text = self.words_text(tokens, item);
        if self.exact_by_construction || tokens == 0 {
            return text;
        }
        let target = i64::from(tokens);
        let (mut words, mut text) = (target, text);
        let mut best: Option<(i64, String)> = None;
        for _ in 0..8 {
            let Ok(count) = self.tokenizer.try_count(&text) else {
                break;
            };
            let miss = target - count as i64;
            if miss == 0 {
                return text;
            }
            if best.as_ref().is_none_or(|(m, _)| miss.abs() < m.abs()) {
                best = Some((miss, text));
            }
            words = (words + miss).max(1);
            text = self.words_text(words as u32, item);
        }
        // A tokenizer that merges across spaces may have no exact answer; the closest wins.
        best.map(|(_, t)| t).unwrap_or(text)
    }

    pub(super) fn words_text(&self, count: u32, item: u64) -> String {
        let n = self.words.len() as u64;
        let mut text = String::with_capacity(count as usize * 8);
        let mut key = item;
        let mut state = item;
        for i in 0..count {
            let index = if i < KEY_WORDS {
                let digit = key % n;
                key /= n;
                digit
            } else {
                // Modulo bias is irrelevant for filler text.
                splitmix64(&mut state) % n
            };
            if i > 0 {
                text.push(' ');
            }
            text.push_str(self.words[index as usize]);
        }
        text
    }
}

/// What a data set's synthetic seeds are mixed with: a hash of its definition (its length
/// distributions), so that two data sets drawn from the same stage seed (the same stage of two
/// scenario files) give different texts; 0 for file data sets, whose texts are their own.
fn dataset_key(source: &DatasetSource) -> u64 {
    let DatasetSource::Synthetic {
        input_tokens,
        output_tokens,
    } = source
    else {
        return 0;
    };
    let text = serde_json::to_string(&(input_tokens, output_tokens)).unwrap_or_default();
    let mut h = DATASET_DOMAIN;
    for b in text.bytes() {
        // FNV-1a over the canonical JSON, then mixed.
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    splitmix64(&mut h)
}

/// SplitMix64: a fast, well-mixed stream for filler words (not for anything statistical).
pub(super) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
