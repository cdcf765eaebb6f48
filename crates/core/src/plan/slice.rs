//! Which share of a stage this process sends: all of it, or one shard of a distributed run
//! (set by `shard::slice`). A shard keeps every planned request whose index is its own modulo
//! the shard count, each at its planned offset, and the closed-loop workers numbered the same
//! way, so the shards together send exactly the plan. Not part of the plan's JSON or hash:
//! every shard runs the same plan.

/// Shard `index` of `count` (0-based); `Slice::WHOLE` is the unsharded plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Slice {
    pub index: u32,
    pub count: u32,
}

impl Default for Slice {
    fn default() -> Self {
        Slice::WHOLE
    }
}

impl Slice {
    pub const WHOLE: Slice = Slice { index: 0, count: 1 };

    /// Whether request (or worker, or session) `i` is this shard's.
    pub fn owns(self, i: u64) -> bool {
        i % u64::from(self.count.max(1)) == u64::from(self.index)
    }

    /// This shard's members of `0..total`, in order: `index, index + count, …`.
    pub fn members(self, total: u64) -> impl Iterator<Item = u64> {
        (u64::from(self.index)..total).step_by(self.count.max(1) as usize)
    }

    /// How many of `0..total` are this shard's: `total / count`, one more for the first
    /// `total % count` shards.
    pub fn share(self, total: u64) -> u64 {
        let n = u64::from(self.count.max(1));
        total / n + u64::from(u64::from(self.index) < total % n)
    }

    /// The global index of this shard's `k`-th member.
    pub fn global(self, k: u64) -> u64 {
        u64::from(self.index) + k * u64::from(self.count.max(1))
    }

    pub fn is_whole(self) -> bool {
        self.count <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_spread_the_remainder_over_the_first_shards() {
        let shares: Vec<u64> = (0..4)
            .map(|i| Slice { index: i, count: 4 }.share(10))
            .collect();
        assert_eq!(shares, [3, 3, 2, 2]);
        for i in 0..4 {
            let s = Slice { index: i, count: 4 };
            assert_eq!(s.members(10).count() as u64, s.share(10));
            assert!(s.members(10).all(|m| s.owns(m)));
            assert_eq!(s.members(10).next(), Some(s.global(0)));
        }
        assert_eq!(Slice::WHOLE.share(7), 7);
    }
}
