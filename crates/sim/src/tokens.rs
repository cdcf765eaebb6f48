//! The prompt as a token stream: counted (the hot path) or collected as token ids, for the
//! prefix cache's block hashes and the `/tokenize` endpoints. Text is cl100k_base; a chat
//! message adds three formatting tokens (`<|im_start|>`, its role's first token, `<|im_sep|>`)
//! and the reply's priming three more, so the ids always number exactly the `prompt_tokens`
//! the simulator reports.

/// cl100k's ChatML markers (OpenAI's chat extension of cl100k_base; the base vocabulary
/// decoder does not know them, so [`detokenize`] names them itself).
pub(crate) const IM_START: u32 = 100_264;
pub(crate) const IM_SEP: u32 = 100_266;

/// Where a prompt's tokens go.
#[derive(Debug, Default)]
pub(crate) struct PromptSink {
    count: u64,
    /// `Some` when the ids are wanted.
    ids: Option<Vec<u32>>,
}

impl PromptSink {
    /// A sink that only counts.
    pub(crate) fn counting() -> Self {
        PromptSink::default()
    }

    /// A sink that also keeps every token id.
    pub(crate) fn collecting() -> Self {
        PromptSink {
            count: 0,
            ids: Some(Vec::new()),
        }
    }

    pub(crate) fn text(&mut self, text: &str) {
        let ids = tiktoken_rs::cl100k_base_singleton().encode_ordinary(text);
        self.count = self.count.saturating_add(ids.len() as u64);
        if let Some(all) = &mut self.ids {
            all.extend_from_slice(&ids);
        }
    }

    /// Token ids given by the client (`prompt: [1, 2, 3]`); ids beyond u32 are clamped, which
    /// only affects which prefix blocks hash alike.
    pub(crate) fn ids(&mut self, ids: &[u64]) {
        self.count = self.count.saturating_add(ids.len() as u64);
        if let Some(all) = &mut self.ids {
            all.extend(ids.iter().map(|&i| u32::try_from(i).unwrap_or(u32::MAX)));
        }
    }

    /// An image's `tokens`, as ids derived from its `key` (ordinary cl100k ids, so that
    /// different images hash apart in the prefix cache and the ids still detokenize).
    pub(crate) fn image(&mut self, tokens: u64, key: u64) {
        self.count = self.count.saturating_add(tokens);
        if let Some(all) = &mut self.ids {
            // A hostile header's size is refused later by the context-length check; the ids
            // kept are bounded by what such a check lets through.
            let kept = tokens.min(1 << 20);
            all.extend((0..kept).map(|i| (mix(key ^ i) % 100_000) as u32));
        }
    }

    /// The formatting tokens opening a chat message (or the reply) from `role`.
    pub(crate) fn message_start(&mut self, role: &str) {
        self.count = self.count.saturating_add(3);
        if let Some(all) = &mut self.ids {
            let role_token = tiktoken_rs::cl100k_base_singleton()
                .encode_ordinary(role)
                .first()
                .copied()
                .unwrap_or(IM_SEP);
            all.extend_from_slice(&[IM_START, role_token, IM_SEP]);
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The collected ids (empty for a counting sink).
    pub(crate) fn into_ids(self) -> Vec<u32> {
        self.ids.unwrap_or_default()
    }
}

/// Chained hashes of the whole `block`-token blocks of `ids`, as vLLM keys its prefix cache:
/// block k's hash covers every token of blocks 0..=k, so equal hashes mean equal prefixes. The
/// hash is fixed (not randomly seeded), so it is stable across runs.
pub(crate) fn block_hashes(ids: &[u32], block: u16) -> Vec<u64> {
    let mut chain = Chain::default();
    chain.extend(ids.iter().copied(), block);
    chain.blocks
}

/// [`block_hashes`] of a token sequence that grows (a stored conversation, then the turn
/// that continues it): the whole blocks' hashes so far and the tokens after them, so that
/// the hashes of the sequence extended are those of the whole sequence hashed at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Chain {
    /// The hashes of the whole blocks so far.
    pub(crate) blocks: Vec<u64>,
    /// The running hash over every token so far (block k's hash once a block ends).
    running: u64,
    /// Tokens after the last whole block (fewer than a block).
    tail: u16,
    started: bool,
}

impl Chain {
    /// Appends `ids`, hashing each block as it fills.
    pub(crate) fn extend(&mut self, ids: impl IntoIterator<Item = u32>, block: u16) {
        let block = block.max(1);
        if !self.started {
            self.running = 0x6a09_e667_f3bc_c908_u64;
            self.started = true;
        }
        for t in ids {
            self.running = mix(self.running ^ u64::from(t));
            self.tail += 1;
            if self.tail == block {
                self.blocks.push(self.running);
                self.tail = 0;
            }
        }
    }
}

/// splitmix64's finaliser with a multiply first, so that consecutive token ids spread.
fn mix(z: u64) -> u64 {
    let mut z = z.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The bytes of one token, or `None` for an id outside the vocabulary.
pub(crate) fn token_bytes(id: u32) -> Option<Vec<u8>> {
    match id {
        IM_START => Some(b"<|im_start|>".to_vec()),
        IM_SEP => Some(b"<|im_sep|>".to_vec()),
        _ => tiktoken_rs::cl100k_base_singleton()
            .decode_bytes(&[id])
            .ok(),
    }
}

/// The text of `ids` (invalid UTF-8 replaced), or the first id outside the vocabulary.
pub(crate) fn detokenize(ids: &[u64]) -> Result<String, u64> {
    let mut bytes = Vec::with_capacity(ids.len() * 4);
    for &id in ids {
        let piece = u32::try_from(id).ok().and_then(token_bytes).ok_or(id)?;
        bytes.extend_from_slice(&piece);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_and_collecting_agree() {
        let mut count = PromptSink::counting();
        let mut ids = PromptSink::collecting();
        for s in [&mut count, &mut ids] {
            s.message_start("user");
            s.text("hello world");
            s.ids(&[7, u64::MAX]);
            s.message_start("");
        }
        assert_eq!(count.count(), 3 + 2 + 2 + 3);
        assert!(count.into_ids().is_empty());
        let got = ids.into_ids();
        assert_eq!(got.len(), 10);
        assert_eq!(got[0], IM_START);
        assert_eq!(got[2], IM_SEP);
        assert_eq!(got[6], u32::MAX);
        assert_eq!(&got[7..], &[IM_START, IM_SEP, IM_SEP]);
    }

    #[test]
    fn block_hashes_chain_over_whole_blocks() {
        let a: Vec<u32> = (0..40).collect();
        let mut b = a.clone();
        b[20] = 999;
        let ha = block_hashes(&a, 16);
        let hb = block_hashes(&b, 16);
        assert_eq!(ha.len(), 2);
        assert_eq!(ha[0], hb[0]);
        assert_ne!(ha[1], hb[1]);
        assert_eq!(block_hashes(&a, 16), ha, "stable");
        // A change in block 0 changes every later hash.
        let mut c = a.clone();
        c[0] = 5;
        assert!(block_hashes(&c, 16).iter().zip(&ha).all(|(x, y)| x != y));
        assert!(block_hashes(&a[..15], 16).is_empty());
        assert_eq!(block_hashes(&a, 0).len(), 40);
    }

    #[test]
    fn a_chain_extended_hashes_as_the_whole_sequence() {
        let ids: Vec<u32> = (0..70).map(|i| i * 7 + 1).collect();
        for cut in [0, 5, 16, 33, 70] {
            let mut c = Chain::default();
            c.extend(ids[..cut].iter().copied(), 16);
            c.extend(ids[cut..].iter().copied(), 16);
            assert_eq!(c.blocks, block_hashes(&ids, 16), "cut at {cut}");
        }
    }

    #[test]
    fn detokenize_round_trips_and_rejects_unknown_ids() {
        let text = "The quick brown fox, déjà vu.";
        let ids: Vec<u64> = tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .into_iter()
            .map(u64::from)
            .collect();
        assert_eq!(detokenize(&ids).unwrap(), text);
        assert_eq!(detokenize(&[u64::from(IM_START)]).unwrap(), "<|im_start|>");
        assert_eq!(detokenize(&[1, 5_000_000]), Err(5_000_000));
        assert_eq!(detokenize(&[u64::MAX]), Err(u64::MAX));
    }
}
