//! The built-in word list synthetic prompts are made of: 2,048 common English words (and word
//! stems) that are each exactly one token, with and without a leading space, under both
//! cl100k_base and o200k_base. A loaded tokenizer filters it again, so any tokenizer works.

use super::{DatasetError, Tokenizer};

const WORDS: &str = include_str!("words.txt");

/// Fewer words than this and the first words of a prompt cannot tell requests apart.
pub(crate) const MIN_WORDS: usize = 256;

/// The built-in words that `tokenizer` encodes as one token both at the start of a text and
/// after a space, in list order (so equal tokenizers give equal lists).
pub(crate) fn single_token_words(tokenizer: &Tokenizer) -> Result<Vec<&'static str>, DatasetError> {
    let mut spaced = String::new();
    let mut words = Vec::new();
    for word in WORDS.lines().map(str::trim).filter(|w| !w.is_empty()) {
        spaced.clear();
        spaced.push(' ');
        spaced.push_str(word);
        if tokenizer.try_count(word)? == 1 && tokenizer.try_count(&spaced)? == 1 {
            words.push(word);
        }
    }
    if words.len() < MIN_WORDS {
        return Err(DatasetError::TooFewWords {
            tokenizer: tokenizer.name().to_string(),
            found: words.len(),
            needed: MIN_WORDS,
        });
    }
    Ok(words)
}

/// A word-level `tokenizer.json` over the built-in words, for tests of the Hugging Face path.
#[cfg(all(test, feature = "hf-tokenizers"))]
pub(crate) fn test_hf_json() -> String {
    let vocab: serde_json::Map<String, serde_json::Value> = std::iter::once("[UNK]")
        .chain(WORDS.lines())
        .enumerate()
        .map(|(i, w)| (w.to_string(), serde_json::Value::from(i)))
        .collect();
    serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": { "type": "Whitespace" },
        "post_processor": null,
        "decoder": null,
        "model": { "type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]" }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_word_is_one_token_under_both_encodings() {
        let total = WORDS.lines().count();
        assert_eq!(total, 2048);
        for tok in [Tokenizer::cl100k_base(), Tokenizer::o200k_base()] {
            assert_eq!(
                single_token_words(&tok).unwrap().len(),
                total,
                "{}",
                tok.name()
            );
        }
    }
}
