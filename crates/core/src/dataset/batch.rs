//! A pooling request's texts (an embeddings batch, rerank's query and documents): several
//! prompts of one request, each drawn as a request's prompt is, with its token count under
//! the plan's tokenizer. The first is the recipe's own prompt; the others are the data set's
//! next items, or for synthetic data texts of the same length from seeds derived from the
//! recipe's, so the same recipe always gives the same batch.

use super::compose::domain_seed;
use super::items::DatasetSource;
use super::prompt::PromptFactory;

/// Seed domain of a batch's later texts, so they differ from any request's first.
const BATCH_DOMAIN: u64 = 0xBA7C_0000_0000_0000;

impl PromptFactory {
    /// `n` texts for a request of data set `dataset` whose recipe drew `input_tokens` and
    /// `item`, each with its token count.
    pub fn texts(
        &self,
        dataset: usize,
        input_tokens: u32,
        item: u64,
        n: u32,
    ) -> Vec<(String, u32)> {
        let context = self.contexts.get(dataset).copied().unwrap_or_default();
        let extra = context.extra_tokens();
        (0..u64::from(n.max(1)))
            .map(|k| {
                let (item, tokens) = match self.datasets.get(dataset) {
                    Some(DatasetSource::Items { items, .. }) if !items.is_empty() => {
                        let i = item.wrapping_add(k) % items.len() as u64;
                        (i, items[i as usize].input_tokens.saturating_add(extra))
                    }
                    Some(DatasetSource::Trace { rows, .. }) if !rows.is_empty() => {
                        let i = item.wrapping_add(k) % rows.len() as u64;
                        (i, rows[i as usize].input_tokens)
                    }
                    _ if k == 0 => (item, input_tokens),
                    _ => (domain_seed(BATCH_DOMAIN ^ item, k), input_tokens),
                };
                let text = self.prompt(dataset, tokens, item).as_text().to_string();
                (text, tokens)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::dataset::{PromptFactory, Tokenizer};

    #[test]
    fn a_batch_is_distinct_texts_of_exact_lengths_and_the_same_each_time() {
        // No data set: synthetic text, as for a synthetic data set.
        let f = PromptFactory::with_tokenizer(Tokenizer::cl100k_base(), vec![]).unwrap();
        let texts = f.texts(0, 24, 7, 4);
        assert_eq!(texts.len(), 4);
        for (t, n) in &texts {
            assert_eq!(*n, 24);
            assert_eq!(f.tokenizer().count(t), 24, "{t}");
        }
        assert_eq!(texts[0].0, f.prompt(0, 24, 7).as_text());
        for i in 0..4 {
            for j in i + 1..4 {
                assert_ne!(texts[i].0, texts[j].0);
            }
        }
        assert_eq!(f.texts(0, 24, 7, 4), texts);
    }
}
