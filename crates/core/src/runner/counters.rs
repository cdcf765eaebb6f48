//! Counters a shard writes on its request path and others only read: each on a cache line of
//! its own, so that one core's writes never invalidate a line another core is writing (with
//! `--cpus N`, each shard writes its own, and the 10 ms tick and the live check sum them).

use std::sync::atomic::{AtomicU64, Ordering};

/// A value alone on its cache line: 128 bytes, the line pair an x86 core's adjacent-line
/// prefetcher moves together (and Apple silicon's line), so no neighbour shares it.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(super) struct Own<T>(pub(super) T);

impl<T> std::ops::Deref for Own<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Requests begun, one counter per shard (see `StageShared::started`); read as their sum.
#[derive(Debug)]
pub(super) struct Begun {
    slots: Box<[Own<AtomicU64>]>,
}

impl Begun {
    /// Counters for `shards` shards (at least one).
    pub(super) fn new(shards: usize) -> Begun {
        Begun {
            slots: (0..shards.max(1)).map(|_| Own::default()).collect(),
        }
    }

    /// Shard `k`'s counter (the last one for a `k` past the end).
    pub(super) fn slot(&self, k: usize) -> &AtomicU64 {
        &self.slots[k.min(self.slots.len() - 1)]
    }

    /// Every shard's, summed: read off the request path (the live check, once a second).
    pub(super) fn total(&self) -> u64 {
        self.slots.iter().map(|s| s.load(Ordering::Relaxed)).sum()
    }
}

/// How the stage's requests occupied the client: the most in flight at once (a ramp's reach),
/// and a closed loop's clients' idle time between their first and last sends, summed over
/// clients (each adds its own once, when it stops: nothing per request is shared). One per
/// shard, on lines of its own.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(super) struct Occupancy {
    pub peak: AtomicU64,
    pub idle_ns: AtomicU64,
    pub span_ns: AtomicU64,
}

impl Occupancy {
    /// A closed loop's idle and total time, when any client measured one.
    pub(super) fn closed_idle(&self) -> Option<(u64, u64)> {
        let span = self.span_ns.load(Ordering::Relaxed);
        (span > 0).then(|| (self.idle_ns.load(Ordering::Relaxed), span))
    }
}

/// The shards' occupancies together: the sum of their peaks (with one shard, its peak; with
/// several, at most that many were in flight at once: each shard's peak is its own) and a
/// closed loop's idle and total time, summed over its clients.
pub(super) fn occupancy_total(shards: &[std::sync::Arc<Occupancy>]) -> (u64, Option<(u64, u64)>) {
    let peak = shards.iter().map(|o| o.peak.load(Ordering::Relaxed)).sum();
    let idle = shards
        .iter()
        .filter_map(|o| o.closed_idle())
        .fold(None, |acc, (i, s)| {
            let (ai, a_s) = acc.unwrap_or((0, 0));
            Some((ai + i, a_s + s))
        });
    (peak, idle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_counter_has_its_line_and_the_total_sums_them() {
        assert_eq!(std::mem::align_of::<Own<AtomicU64>>(), 128);
        let b = Begun::new(3);
        b.slot(0).fetch_add(2, Ordering::Relaxed);
        b.slot(2).fetch_add(5, Ordering::Relaxed);
        let (a, c) = (
            b.slot(0) as *const _ as usize,
            b.slot(1) as *const _ as usize,
        );
        assert!(c - a >= 128);
        assert_eq!(b.total(), 7);
        assert_eq!(Begun::new(0).total(), 0);
    }
}
