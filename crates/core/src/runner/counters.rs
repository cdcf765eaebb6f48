//! Counters a shard writes on its request path and others only read: each on a cache line of
//! its own, so that one core's writes never invalidate a line another core is writing (with
//! `--cpus N`, each shard writes its own, and the 10 ms tick and the live check sum them),
//! and the signal that cancels a shard's requests in flight ([`Cancel`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Poll, Waker};

use tokio::sync::Notify;

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

/// Cancels a shard's requests still in flight (drain time over, or the interrupt's grace
/// over). Every request waits on it for its whole life, and the wait is polled again at every
/// read of the response, so a poll must cost nothing: tokio-util's
/// `CancellationToken::cancelled()` takes two locks per poll (its tree's and its `Notify`'s).
/// Here a poll is one atomic load; a request takes the `Notify`'s lock once to register and
/// once when it ends. One per shard, so no two cores share its lock.
#[derive(Debug, Default)]
pub(super) struct Cancel {
    cancelled: AtomicBool,
    notify: Notify,
}

impl Cancel {
    /// Cancels: every waiter, present or future, ends.
    pub(super) fn cancel(&self) {
        // Set before the wake-up, so every woken waiter's next poll sees it.
        self.cancelled.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Whether [`Cancel::cancel`] was called: one atomic load, no lock.
    pub(super) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Ends once [`Cancel::cancel`] is called.
    pub(super) async fn cancelled(&self) {
        // Created before the first look at the flag: a `Notified` sees every
        // `notify_waiters` after its creation, polled or not, so no cancel slips between.
        let notified = self.notify.notified();
        tokio::pin!(notified);
        let mut registered: Option<Waker> = None;
        std::future::poll_fn(|cx| {
            if self.is_cancelled() {
                return Poll::Ready(());
            }
            // The same task's waker is registered already: the cancel will wake it.
            if registered.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                return Poll::Pending;
            }
            registered = Some(cx.waker().clone());
            notified.as_mut().poll(cx)
        })
        .await;
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

    /// A task woken by something else many times (a response's reads) goes on waiting; the
    /// cancel then ends it, and a wait begun after the cancel ends at once.
    #[tokio::test]
    async fn a_wait_outlives_other_wake_ups_and_ends_at_the_cancel() {
        let cancel = std::sync::Arc::new(Cancel::default());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
        let c = cancel.clone();
        let waiter = tokio::spawn(async move {
            let mut woken = 0;
            let wait = c.cancelled();
            tokio::pin!(wait);
            loop {
                tokio::select! {
                    biased;
                    () = &mut wait => return woken,
                    Some(_) = rx.recv() => woken += 1,
                }
            }
        });
        for k in 0..100 {
            tx.send(k).unwrap();
            tokio::task::yield_now().await;
        }
        assert!(!waiter.is_finished() && !cancel.is_cancelled());
        cancel.cancel();
        let woken = tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
            .await
            .expect("the cancel ends the wait")
            .unwrap();
        assert_eq!(woken, 100, "every other wake-up was seen before the cancel");
        assert!(cancel.is_cancelled());
        tokio::time::timeout(std::time::Duration::from_secs(1), cancel.cancelled())
            .await
            .expect("a wait begun after the cancel ends at once");
    }

    /// A cancel on one thread racing a wait's first poll on another is never lost (the
    /// `Notified` is created before the flag is read).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancel_racing_the_first_poll_is_not_lost() {
        for _ in 0..200 {
            let cancel = std::sync::Arc::new(Cancel::default());
            let c = cancel.clone();
            let waiter = tokio::spawn(async move { c.cancelled().await });
            cancel.cancel();
            tokio::time::timeout(std::time::Duration::from_secs(10), waiter)
                .await
                .expect("no cancel is lost")
                .unwrap();
        }
    }
}
