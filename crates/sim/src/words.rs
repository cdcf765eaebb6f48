//! The simulator's output vocabulary: words that are each exactly one cl100k token (leading
//! space included) and stay one token when concatenated, so a client re-tokenizing the text
//! counts the same number of tokens the server reports.

/// Every entry is a single cl100k_base token, checked by a test. None needs JSON escaping.
pub(crate) const WORDS: &[&str] = &[
    " the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " with", " was",
    " on", " be", " at", " by", " this", " had", " not", " are", " but", " from", " or", " have",
    " an", " they", " which", " one", " you", " were", " her", " all", " she", " there", " would",
    " their", " we", " him", " been", " has", " when", " who", " will", " more", " no", " if",
    " out", " so", " said", " what", " up", " its", " about", " into", " than", " them", " can",
    " only", " other", " new", " some", " could", " time", " these", " two", " may", " then",
    " do", " first", " any", " my", " now", " such", " like", " our", " over", " man", " me",
    " even", " most", " made", " after", " also", " did", " many", " before", " must", " through",
    " back", " years", " where", " much", " your", " way", " well", " down", " should", " because",
    " each", " just", " those", " people", " how", " too", " little", " state", " good", " very",
    " make", " world", " still", " own", " see", " men", " work", " long", " get", " here",
    " between", " both", " life", " being", " under", " never", " day", " same", " another",
    " know", " while", " last",
];

/// The word emitted as token `index` of request `id`: deterministic, varied across requests.
pub(crate) fn word(id: u64, index: u64) -> &'static str {
    WORDS[word_index(id, index)]
}

/// Which of [`WORDS`] token `index` of request `id` is.
pub(crate) fn word_index(id: u64, index: u64) -> usize {
    ((id.wrapping_mul(7)).wrapping_add(index) % WORDS.len() as u64) as usize
}

/// The cl100k token id of each of [`WORDS`] (each is one token), computed once.
pub(crate) fn word_ids() -> &'static [u32] {
    static IDS: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    IDS.get_or_init(|| {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        WORDS
            .iter()
            .map(|w| bpe.encode_ordinary(w).first().copied().unwrap_or(0))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_is_one_token_alone_and_in_a_run() {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        for w in WORDS {
            assert_eq!(bpe.encode_ordinary(w).len(), 1, "{w:?} is not one token");
            assert!(!w.contains(['"', '\\']));
        }
        let text: String = (0..500).map(|i| word(3, i)).collect();
        assert_eq!(bpe.encode_ordinary(&text).len(), 500);
    }
}
