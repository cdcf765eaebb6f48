//! The complete prefix of an `until-decided` stage: the first m requests in send order, every
//! one of them completed (see `docs/statistics.md`, "The complete prefix"). Its own aggregator
//! is fed in send order on the collector's thread: a record that completes ahead of an earlier
//! request still in flight waits in a reorder buffer until that one completes. Work is per
//! completed request only (nothing per chunk, no lock: the buffer lives on the collector's
//! thread), and memory is bounded: the buffer holds at most [`HELD_MAX`] records, after which
//! the prefix stops growing for good (it stays a valid prefix; it just decides nothing new).

use std::collections::BTreeMap;

use crate::metrics::{RequestRecord, StageAggregator};

/// The most records held back for an earlier request still in flight. Only records that
/// completed after a slower earlier one wait, so a stage reaches this only when one request
/// stays in flight while thousands sent after it complete (a request hung until its timeout
/// on a fast, highly concurrent stage); memory then stops there instead of growing with the
/// run (a few hundred bytes a record, plus its token gaps).
pub(super) const HELD_MAX: usize = 4096;

/// Puts items numbered 0, 1, 2, … back in that order: each is released once every item
/// numbered before it has been, the ones that come early held until then (at most `cap` of
/// them; past that the order gives up, since an item dropped would leave a gap for good).
#[derive(Debug)]
pub(super) struct Reorder<T> {
    /// The number of the next item to release: how many have been released.
    next: u64,
    held: BTreeMap<u64, T>,
    cap: usize,
    stalled: bool,
}

impl<T: Clone> Reorder<T> {
    pub(super) fn new(cap: usize) -> Self {
        Reorder {
            next: 0,
            held: BTreeMap::new(),
            cap,
            stalled: false,
        }
    }

    /// Takes item `index`: released through `release` at once when it is the next (with the
    /// held items that follow it), else held — copied only then. An index already released
    /// (a duplicate, which the runner never sends) is ignored.
    pub(super) fn push(&mut self, index: u64, item: &T, mut release: impl FnMut(&T)) {
        if self.stalled || index < self.next {
            return;
        }
        if index > self.next {
            if self.held.len() >= self.cap {
                // Holding more would grow with the run; the prefix stays at `next`.
                self.stalled = true;
                self.held = BTreeMap::new();
            } else {
                self.held.insert(index, item.clone());
            }
            return;
        }
        release(item);
        self.next += 1;
        while let Some(item) = self.held.remove(&self.next) {
            release(&item);
            self.next += 1;
        }
    }

    /// How many items have been released: the complete prefix's length.
    pub(super) fn released(&self) -> u64 {
        self.next
    }

    /// Items held back now.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.held.len()
    }

    /// The order gave up (more than `cap` items waited at once): nothing more is released.
    pub(super) fn stalled(&self) -> bool {
        self.stalled
    }
}

/// The complete prefix's aggregator and the reorder buffer that feeds it.
pub(super) struct Prefix {
    order: Reorder<RequestRecord>,
    pub(super) agg: StageAggregator,
}

impl Prefix {
    /// `agg`: an empty aggregator made as the stage's own is.
    pub(super) fn new(agg: StageAggregator) -> Self {
        Prefix {
            order: Reorder::new(HELD_MAX),
            agg,
        }
    }

    /// A completed request (in the order the collector folds them), recorded as the stage's
    /// own aggregator records it (`read`: the loop probe's bound) once it is in the prefix.
    pub(super) fn take(&mut self, rec: &RequestRecord, read: Option<&dyn Fn(u64) -> u64>) {
        let agg = &mut self.agg;
        self.order
            .push(rec.index, rec, |r| agg.record_with(r, read));
    }

    /// `m`: the prefix's length.
    pub(super) fn len(&self) -> u64 {
        self.order.released()
    }

    pub(super) fn stalled(&self) -> bool {
        self.order.stalled()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{ErrorKind, GoodputSlo, PlannedLoad};

    fn released(order: &mut Reorder<u64>, index: u64, out: &mut Vec<u64>) {
        order.push(index, &index, |i| out.push(*i));
    }

    #[test]
    fn items_in_order_pass_straight_through() {
        let mut order = Reorder::new(4);
        let mut out = Vec::new();
        for i in 0..10 {
            released(&mut order, i, &mut out);
            assert_eq!(order.held(), 0);
        }
        assert_eq!(out, (0..10).collect::<Vec<_>>());
        assert_eq!(order.released(), 10);
    }

    #[test]
    fn early_items_wait_for_the_slow_one_before_them() {
        let mut order = Reorder::new(8);
        let mut out = Vec::new();
        // 0 is slow: 1, 2, 3 complete first; 5 completes before 4.
        for i in [1, 2, 3] {
            released(&mut order, i, &mut out);
        }
        assert!(out.is_empty());
        assert_eq!((order.released(), order.held()), (0, 3));
        released(&mut order, 5, &mut out);
        released(&mut order, 0, &mut out);
        assert_eq!(out, [0, 1, 2, 3]);
        assert_eq!((order.released(), order.held()), (4, 1));
        released(&mut order, 4, &mut out);
        assert_eq!(out, [0, 1, 2, 3, 4, 5]);
        assert_eq!((order.released(), order.held()), (6, 0));
        // A duplicate of a released item is ignored.
        released(&mut order, 2, &mut out);
        assert_eq!(out.len(), 6);
    }

    #[test]
    fn the_buffer_never_holds_more_than_its_bound() {
        let mut order = Reorder::new(3);
        let mut out = Vec::new();
        released(&mut order, 0, &mut out);
        // 1 never completes: 2, 3, 4 are held, 5 would be the fourth.
        for i in 2..5 {
            released(&mut order, i, &mut out);
        }
        assert_eq!((order.held(), order.stalled()), (3, false));
        released(&mut order, 5, &mut out);
        assert!(order.stalled());
        assert_eq!(order.held(), 0, "the held items are let go");
        // Stalled for good: the prefix stays 1 long whatever comes.
        for i in 1..10_000 {
            released(&mut order, i, &mut out);
            assert!(order.held() <= 3);
        }
        assert_eq!(out, [0]);
        assert_eq!(order.released(), 1);
    }

    fn record(index: u64, error: Option<ErrorKind>) -> RequestRecord {
        RequestRecord {
            index,
            scheduled_ns: index * 1_000_000,
            sent_ns: index * 1_000_000,
            first_token_ns: error.is_none().then_some(index * 1_000_000 + 5_000_000),
            first_answer_ns: error.is_none().then_some(index * 1_000_000 + 5_000_000),
            done_ns: index * 1_000_000 + 9_000_000,
            output_tokens: 4,
            error,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn the_prefix_counts_failed_requests_and_only_the_first_m() {
        let agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
        let mut prefix = Prefix::new(agg);
        // 1 times out and completes last; 0, 2 and 3 succeed first.
        for rec in [
            record(0, None),
            record(2, None),
            record(3, Some(ErrorKind::Http(500))),
        ] {
            prefix.take(&rec, None);
        }
        assert_eq!(prefix.len(), 1);
        assert_eq!((prefix.agg.done(), prefix.agg.failed()), (1, 0));
        prefix.take(&record(1, Some(ErrorKind::Timeout)), None);
        assert_eq!(prefix.len(), 4);
        assert_eq!((prefix.agg.done(), prefix.agg.failed()), (4, 2));
        assert!(!prefix.stalled());
    }
}
