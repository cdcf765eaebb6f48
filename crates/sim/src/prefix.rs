//! The prompt-prefix cache (`prefix-cache`): an LRU set of block hashes, queried and filled
//! when the scheduler admits a request, as vLLM's automatic prefix caching does at scheduling
//! time. Unlike vLLM it is a pool of its own rather than the KV cache's free blocks: blocks
//! held by running sequences are evictable, and caching reserves no KV capacity.

use std::collections::{BTreeMap, HashMap};

/// Block hashes with their last use; the least recently used go first.
#[derive(Debug)]
pub(crate) struct PrefixCache {
    block: u64,
    capacity_blocks: usize,
    /// Block hash → tick of its last use.
    last_use: HashMap<u64, u64>,
    /// Tick → block hash, oldest first.
    by_age: BTreeMap<u64, u64>,
    tick: u64,
}

impl PrefixCache {
    pub(crate) fn new(block: u16, capacity_tokens: u32) -> Self {
        let block = u64::from(block.max(1));
        let capacity_tokens = u64::from(capacity_tokens);
        PrefixCache {
            block,
            capacity_blocks: usize::try_from(capacity_tokens / block).unwrap_or(usize::MAX),
            last_use: HashMap::new(),
            by_age: BTreeMap::new(),
            tick: 0,
        }
    }

    /// Tokens of the prompt already cached (a whole number of blocks), then caches every
    /// whole block of it. As in vLLM, the last prompt token is always computed (its logits
    /// give the first output token), so a fully cached prompt reports one block less when its
    /// length is a multiple of the block size.
    pub(crate) fn lookup_and_insert(&mut self, blocks: &[u64], prompt_tokens: u64) -> u64 {
        let max_hit = usize::try_from(prompt_tokens.saturating_sub(1) / self.block)
            .unwrap_or(usize::MAX)
            .min(blocks.len());
        let hits = blocks[..max_hit]
            .iter()
            .take_while(|h| self.last_use.contains_key(h))
            .count();
        // Later blocks are touched first, so that the prompt's head outlives its tail: a
        // prefix is only useful while its earlier blocks stay.
        for &h in blocks.iter().rev() {
            self.touch(h);
        }
        self.evict();
        hits as u64 * self.block
    }

    fn touch(&mut self, hash: u64) {
        self.tick += 1;
        if let Some(old) = self.last_use.insert(hash, self.tick) {
            self.by_age.remove(&old);
        }
        self.by_age.insert(self.tick, hash);
    }

    fn evict(&mut self) {
        while self.last_use.len() > self.capacity_blocks {
            let Some((_, hash)) = self.by_age.pop_first() else {
                break;
            };
            self.last_use.remove(&hash);
        }
    }

    /// Drops every block; returns the tokens they held.
    pub(crate) fn clear(&mut self) -> u64 {
        let tokens = self.last_use.len() as u64 * self.block;
        self.last_use.clear();
        self.by_age.clear();
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_are_the_cached_leading_blocks() {
        let mut c = PrefixCache::new(16, 1_000);
        assert_eq!(c.lookup_and_insert(&[1, 2, 3], 50), 0);
        assert_eq!(c.lookup_and_insert(&[1, 2, 3], 50), 48);
        // A different second block stops the match there.
        assert_eq!(c.lookup_and_insert(&[1, 9, 3], 50), 16);
        // 48 tokens exactly: the last one is recomputed, so two blocks at most.
        assert_eq!(c.lookup_and_insert(&[1, 2, 3], 48), 32);
        assert_eq!(c.clear(), 4 * 16);
        assert_eq!(c.lookup_and_insert(&[1, 2, 3], 50), 0);
    }

    #[test]
    fn least_recently_used_blocks_go_first_and_tails_before_heads() {
        let mut c = PrefixCache::new(16, 3 * 16);
        c.lookup_and_insert(&[1, 2], 40);
        c.lookup_and_insert(&[5, 6], 40);
        // Capacity 3: block 2 (the older prompt's tail) was evicted, its head kept.
        assert_eq!(c.lookup_and_insert(&[1, 2], 40), 16);
        let mut tiny = PrefixCache::new(16, 10);
        assert_eq!(tiny.lookup_and_insert(&[1], 40), 0);
        assert_eq!(tiny.lookup_and_insert(&[1], 40), 0, "no room for a block");
    }
}
