//! How late the client reads what arrives: a probe of its own event loop. One task per
//! runtime worker sleeps 1 to 2 ms at a time on a precise timer — woken through the runtime's
//! reactor, the path a socket's readiness takes too — and notes how late it woke. A response
//! that arrives while the loop is stalled waits for the stall to end, and so does the probe:
//! a stall that delayed a read by `r` shows as a probe wake-up near the read at least
//! `r − PERIOD_MAX` late. So each read at an instant gets a bound, [`ReadBounds::bound_ns`]:
//! the longest probe delay noted around it plus the probe's period. The aggregator takes that
//! off each request's latency (with its send lag) for the net latencies that decide failures
//! on a flagged stage (see `docs/sla.md`).
//!
//! Off the hot path: the probes are tasks of their own, each with its own histogram; what
//! they note goes into a fixed ring of atomics (no lock, no allocation after the start), which
//! the collector thread reads.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::timer::PreciseTimer;
use crate::metrics::LoopDelay;

/// The probe sleeps between these two, drawn afresh each time (so it does not beat with a
/// schedule): no instant is further than `PERIOD_MAX` from a probe's next wake-up.
const PERIOD_MIN: Duration = Duration::from_millis(1);
pub const PERIOD_MAX: Duration = Duration::from_millis(crate::metrics::PROBE_PERIOD_MAX_MS);
/// The ring's windows, by wake-up time.
const WINDOW_NS: u64 = 1_000_000;
/// Windows kept: about 4.4 minutes of a stage. An older read gets the stage's worst delay.
const RING: usize = 1 << 18;
/// A read at `t` is bounded by the probe wake-ups noted from `t − BEHIND` to `t + AHEAD`: the
/// wake-up that ended the stall which delayed it came just before or just after it.
const BEHIND_NS: u64 = 5_000_000;
pub const AHEAD_NS: u64 = 3_000_000;

/// What the probes noted, shared with the collector.
pub struct Track {
    /// Per window: `(window number << 32) | worst delay in µs`, so a slot reused by a later
    /// window is not read as this one's.
    windows: Box<[AtomicU64]>,
    /// Each probe's last wake-up, ns since the stage start: what is known is known up to the
    /// earliest of them.
    progress: Box<[AtomicU64]>,
    /// The worst delay noted so far, µs.
    worst_us: AtomicU64,
}

impl Track {
    pub fn new(probes: usize) -> Arc<Track> {
        Arc::new(Track {
            windows: (0..RING).map(|_| AtomicU64::new(u64::MAX)).collect(),
            progress: (0..probes.max(1)).map(|_| AtomicU64::new(0)).collect(),
            worst_us: AtomicU64::new(0),
        })
    }

    /// Up to which instant (ns since the stage start) every probe has reported.
    pub fn known_until_ns(&self) -> u64 {
        self.progress
            .iter()
            .map(|p| p.load(Ordering::Acquire))
            .min()
            .unwrap_or(0)
    }

    fn note(&self, probe: usize, woke_ns: u64, late_us: u64) {
        let window = woke_ns / WINDOW_NS;
        let slot = &self.windows[window as usize % RING];
        let tag = window << 32;
        let late = late_us.min(u64::from(u32::MAX));
        let mut current = slot.load(Ordering::Relaxed);
        loop {
            let next = if current != u64::MAX && current >> 32 == window {
                tag | late.max(current & 0xFFFF_FFFF)
            } else {
                tag | late
            };
            match slot.compare_exchange_weak(current, next, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => break,
                Err(seen) => current = seen,
            }
        }
        self.worst_us.fetch_max(late, Ordering::Relaxed);
        self.progress[probe].store(woke_ns, Ordering::Release);
    }

    /// The bounds of one request's reads ([`ReadBounds::bound_ns`]). Its reads mostly share
    /// their windows (a stream's events arrive within a few milliseconds, and its net ITL asks
    /// once per gap): the last answer is kept and given again for the same windows instead of
    /// reading the ring anew, which cost about 400 instructions a read.
    pub fn read_bounds(&self) -> ReadBounds<'_> {
        ReadBounds {
            track: self,
            last: Cell::new(None),
        }
    }

    /// The bound over windows `first..=last`.
    fn bound_over(&self, first: u64, last: u64) -> u64 {
        let mut worst: Option<u64> = None;
        for window in first..=last {
            let v = self.windows[window as usize % RING].load(Ordering::Acquire);
            if v != u64::MAX && v >> 32 == window {
                worst = Some(worst.unwrap_or(0).max(v & 0xFFFF_FFFF));
            }
        }
        let late_us = worst.unwrap_or_else(|| self.worst_us.load(Ordering::Relaxed));
        PERIOD_MAX.as_nanos() as u64 + late_us * 1_000
    }
}

/// The windows whose wake-ups bound a read at `t_ns`.
fn windows_around(t_ns: u64) -> (u64, u64) {
    (
        t_ns.saturating_sub(BEHIND_NS) / WINDOW_NS,
        (t_ns + AHEAD_NS) / WINDOW_NS,
    )
}

/// [`Track::read_bounds`]: the bounds of one request's reads, the last one remembered.
pub struct ReadBounds<'a> {
    track: &'a Track,
    /// The windows last asked about and their bound.
    last: Cell<Option<((u64, u64), u64)>>,
}

impl ReadBounds<'_> {
    /// A bound on how late the client read an event it saw at `t_ns` (since the stage start):
    /// the probe's period plus the worst wake-up noted around `t`; where none was noted (the
    /// probes were stalled too, or the instant is out of the ring), the stage's worst so far.
    pub fn bound_ns(&self, t_ns: u64) -> u64 {
        let windows = windows_around(t_ns);
        if let Some((w, bound)) = self.last.get()
            && w == windows
        {
            return bound;
        }
        let bound = self.track.bound_over(windows.0, windows.1);
        self.last.set(Some((windows, bound)));
        bound
    }
}

/// The running probes of one stage.
pub struct LoopProbe {
    stop: CancellationToken,
    tasks: Vec<JoinHandle<Histogram<u64>>>,
}

impl LoopProbe {
    /// Starts one probe per slot of `track`, on the current runtime (probe `k` on shard `k`
    /// when `shards` are given: each shard's loop is its own), timing from `t0`; with a
    /// non-zero `test_stall` (tests only, `RunOptions::test_read_stall`), also the task that
    /// stalls the loop (shard 0's) that long about every [`STALL_EVERY`].
    pub fn start(
        track: &Arc<Track>,
        t0: Instant,
        test_stall: Duration,
        shards: Option<&super::shards::Shards>,
    ) -> LoopProbe {
        let stop = CancellationToken::new();
        let n = track.progress.len();
        let on = |k: usize| match shards {
            Some(s) if k < s.len() => s.handle(k).clone(),
            _ => tokio::runtime::Handle::current(),
        };
        let mut tasks: Vec<_> = (0..n)
            .map(|k| on(k).spawn(probe(track.clone(), k, t0, stop.clone())))
            .collect();
        if !test_stall.is_zero() {
            tasks.push(on(0).spawn(stall(test_stall, stop.clone())));
        }
        LoopProbe { stop, tasks }
    }

    /// Stops the probes; how late the loop woke, over the stage.
    pub async fn finish(self) -> Option<LoopDelay> {
        self.stop.cancel();
        let mut all: Option<Histogram<u64>> = None;
        for task in self.tasks {
            let Ok(h) = task.await else { continue };
            match all.as_mut() {
                Some(a) => {
                    let _ = a.add(&h);
                }
                None => all = Some(h),
            }
        }
        let h = all.filter(|h| !h.is_empty())?;
        let ms = |us: u64| us as f64 / 1e3;
        Some(LoopDelay {
            p50: ms(h.value_at_quantile(0.5)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
            samples: h.len(),
        })
    }
}

/// How often the test stall blocks the loop (from the end of one stall to the next).
pub const STALL_EVERY: Duration = Duration::from_millis(300);

/// Tests only: blocks this task's worker thread for `stall` about every [`STALL_EVERY`],
/// until `stop`, as a descheduled client's loop stalls. Notes nothing itself (an empty
/// histogram): the probes measure it as they would a real stall.
async fn stall(stall: Duration, stop: CancellationToken) -> Histogram<u64> {
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(STALL_EVERY) => {}
        }
        // Blocking on purpose: the point is that nothing else runs on this worker meanwhile.
        std::thread::sleep(stall);
    }
    Histogram::new_with_bounds(1, 60_000_000, 2).expect("valid histogram bounds")
}

async fn probe(
    track: Arc<Track>,
    k: usize,
    t0: Instant,
    stop: CancellationToken,
) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 60_000_000, 2).expect("valid histogram bounds");
    let mut timer = PreciseTimer::new();
    // A cheap generator for the period's jitter: a probe needs no better randomness.
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ (k as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let span = (PERIOD_MAX - PERIOD_MIN).as_nanos() as u64;
    let mut due = Instant::now() + PERIOD_MIN;
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            _ = timer.sleep_until(due) => {}
        }
        let woke = Instant::now();
        let late_us = woke.saturating_duration_since(due).as_micros() as u64;
        h.saturating_record(late_us.max(1));
        track.note(
            k,
            woke.saturating_duration_since(t0).as_nanos() as u64,
            late_us,
        );
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        due = woke + PERIOD_MIN + Duration::from_nanos(state % span.max(1));
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Track {
        /// One read's bound, worked out afresh.
        fn read_bound_ns(&self, t_ns: u64) -> u64 {
            self.read_bounds().bound_ns(t_ns)
        }
    }

    #[test]
    fn a_read_is_bounded_by_the_wake_ups_around_it() {
        let track = Track::new(1);
        // Quiet: 50 µs late every 2 ms, then a 30 ms stall ending at 100 ms.
        for t in (0..98).step_by(2) {
            track.note(0, t * 1_000_000, 50);
        }
        track.note(0, 100_000_000, 30_000);
        for t in (102..200).step_by(2) {
            track.note(0, t * 1_000_000, 50);
        }
        let period = PERIOD_MAX.as_nanos() as u64;
        // Far from the stall: the period and the usual 50 µs.
        assert_eq!(track.read_bound_ns(40_000_000), period + 50_000);
        assert_eq!(track.read_bound_ns(160_000_000), period + 50_000);
        // A read just after the stall ended carries it.
        assert_eq!(track.read_bound_ns(101_000_000), period + 30_000_000);
        assert_eq!(track.read_bound_ns(98_500_000), period + 30_000_000);
        // Where nothing was noted (beyond the probes' reach), the worst of the stage.
        assert_eq!(track.read_bound_ns(900_000_000), period + 30_000_000);
        assert_eq!(track.known_until_ns(), 198_000_000);
    }

    #[test]
    fn a_remembered_bound_is_the_one_read_afresh() {
        let track = Track::new(1);
        for t in (0..98).step_by(2) {
            track.note(0, t * 1_000_000, 50);
        }
        track.note(0, 100_000_000, 30_000);
        let bounds = track.read_bounds();
        // In order, back and forth, repeated, and near the start where the windows are cut.
        let instants = (0..120_000_000u64).step_by(250_000).chain([
            99_000_000,
            99_000_001,
            3_000_000,
            99_000_000,
            0,
            0,
            400_000_000,
        ]);
        for t in instants {
            assert_eq!(bounds.bound_ns(t), track.read_bound_ns(t), "at {t} ns");
        }
    }

    #[test]
    fn a_reused_slot_is_not_read_as_an_old_window() {
        let track = Track::new(2);
        track.note(0, 5_000_000, 10);
        // The same slot, one lap of the ring later, with a larger delay.
        let lap = RING as u64 * WINDOW_NS;
        track.note(1, lap + 5_000_000, 7_000);
        let period = PERIOD_MAX.as_nanos() as u64;
        assert_eq!(track.read_bound_ns(lap + 5_000_000), period + 7_000_000);
        // The old window's own value is gone: the stage's worst stands in for it.
        assert_eq!(track.read_bound_ns(5_000_000), period + 7_000_000);
        // The earliest probe's progress bounds what is known.
        assert_eq!(track.known_until_ns(), 5_000_000);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn probes_measure_the_loop_and_stop() {
        let track = Track::new(2);
        let probe = LoopProbe::start(&track, Instant::now(), Duration::ZERO, None);
        // Until every probe has covered 100 ms (50 periods or more), not a fixed 60 ms sleep:
        // on a loaded machine that much wall clock may hold too few wake-ups.
        let waited = Instant::now();
        while track.known_until_ns() < 100_000_000 {
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "the probes never woke"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let delay = probe.finish().await.expect("the probes woke");
        assert!(delay.samples > 2, "{delay:?}");
        assert!(
            delay.p50 <= delay.p99 && delay.p99 <= delay.max,
            "{delay:?}"
        );
        assert!(track.known_until_ns() > 0);
    }
}
