//! How a stage's load is driven. Open-loop stages are driven by dispatcher tasks that follow
//! the plan's schedule: each prepares the next request's body while waiting, sleeps on a
//! precise timer (sub-millisecond, unlike the runtime's 1 ms timer wheel) and spawns the
//! request at its scheduled instant, whatever earlier requests are doing. Latency counts from
//! the scheduled instant; the gap to the actual send is the send lag. Closed-loop stages are N
//! tasks that each send their next request when the previous one ends.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::send::{StageShared, since};
use super::timer::PreciseTimer;
use crate::plan::Load;

/// Sends the stage's load until its schedule or deadline is done, `stop` is cancelled or
/// `watching` (the warm-up's rule) ends; what is in flight is left to the drain.
/// `dispatchers`: how many open-loop dispatchers share the schedule (one per CPU).
pub(super) async fn drive(
    shared: &Arc<StageShared>,
    tracker: &TaskTracker,
    stop: &CancellationToken,
    watching: &mut (impl Future + Unpin),
    dispatchers: usize,
) {
    let stage = &shared.stage;
    match &stage.load {
        Load::Open { .. } => {
            // On a runtime worker, so the request tasks it spawns start on that same
            // worker without a cross-thread wake-up.
            let n = dispatchers.max(1);
            let handles: Vec<_> = (0..n)
                .map(|k| {
                    let slice = Interleave { k, n };
                    tokio::spawn(dispatch_open(shared.clone(), tracker.clone(), slice))
                })
                .collect();
            for d in handles {
                let _ = d.await;
            }
        }
        // Run probe by probe by `runner::search`, never as one stage.
        Load::Search(_) => {}
        Load::Closed { clients, ramp } => {
            let next = Arc::new(AtomicU64::new(0));
            let deadline = stage.duration.map(|d| shared.t0 + d.as_std());
            // A shard runs its own workers of the plan's, each at its planned start.
            for k in stage.slice.members(u64::from(*clients)) {
                let k = k as u32;
                let start = ramp.map_or(0, |r| r.start_offset_ns(k));
                tracker.spawn(closed_worker(
                    shared.clone(),
                    next.clone(),
                    shared.t0 + Duration::from_nanos(start),
                    deadline,
                    stage.max_requests,
                ));
            }
            let until_deadline = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = until_deadline => {}
                _ = tracker.wait() => {}
                _ = stop.cancelled() => {}
                _ = watching => {}
            }
        }
    }
}

/// Follows an open-loop schedule: prepares each request's body while it waits, wakes at the
/// scheduled instant (see [`PreciseTimer`]) and spawns the request. Behind schedule, it sends
/// at once and the send lag records how late.
/// Dispatcher `k` of `n` sends the `k`-th, `k + n`-th, … of its stage's sends.
#[derive(Clone, Copy)]
struct Interleave {
    k: usize,
    n: usize,
}

async fn dispatch_open(sh: Arc<StageShared>, tracker: TaskTracker, slice: Interleave) {
    let Some(sends) = sh.stage.sends() else {
        return;
    };
    let sends = sends
        .enumerate()
        .filter(move |(p, _)| p % slice.n == slice.k)
        .map(|(_, send)| send);
    let sessions = sh.plan.session_plan(&sh.stage).is_some();
    let mut timer = PreciseTimer::new();
    for (i, offset) in sends {
        if sh.interrupt.is_cancelled() {
            return;
        }
        let at = sh.t0 + Duration::from_nanos(offset);
        // Prepared ahead, so building the body is not part of the send lag.
        if sessions {
            let first = super::session::prepare(&sh, i);
            if !wait_until(&mut timer, at, &sh.interrupt).await {
                return;
            }
            // Boxed once here: see below.
            tracker.spawn(Box::pin(super::session::run(sh.clone(), first, offset)));
        } else {
            let recipe = sh.plan.request(&sh.stage, i);
            let body = sh.body(&recipe);
            if !wait_until(&mut timer, at, &sh.interrupt).await {
                return;
            }
            let task_sh = sh.clone();
            // Boxed once: a request's future holds its record and every state of the client
            // (some kilobytes), and the tracker's wrapper, the task's cell and its first poll
            // each moved it by value, three copies per request; a box moves as a pointer.
            tracker.spawn(Box::pin(async move {
                if !task_sh.test_send_lag.is_zero() {
                    tokio::time::sleep(task_sh.test_send_lag).await;
                }
                task_sh.send(body, recipe, offset, 0).await
            }));
        }
        // Lets the request just spawned go out before the next body is built.
        tokio::task::yield_now().await;
    }
}

/// Sleeps until `target`; false when interrupted first.
async fn wait_until(
    timer: &mut PreciseTimer,
    target: Instant,
    interrupt: &CancellationToken,
) -> bool {
    tokio::select! {
        biased;
        _ = interrupt.cancelled() => false,
        _ = timer.sleep_until(target) => true,
    }
}

async fn closed_worker(
    sh: Arc<StageShared>,
    next: Arc<AtomicU64>,
    start: Instant,
    deadline: Option<Instant>,
    max_requests: Option<u64>,
) {
    // A ramp's later workers join at their start offset (or never, past the deadline).
    if start > Instant::now() {
        if deadline.is_some_and(|d| start >= d) {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(start.into()) => {}
            _ = sh.interrupt.cancelled() => return,
        }
    }
    let sessions = sh.plan.session_plan(&sh.stage).is_some();
    let mut idle = Idle::default();
    loop {
        if sh.interrupt.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
            return idle.add_to(&sh.occupancy);
        }
        // A shard's k-th request is the plan's request `index + k · count`.
        let i = sh.stage.slice.global(next.fetch_add(1, Ordering::Relaxed));
        if max_requests.is_some_and(|m| i >= m) {
            return idle.add_to(&sh.occupancy);
        }
        if sessions {
            let first = super::session::prepare(&sh, i);
            super::session::run(sh.clone(), first, since(sh.t0)).await;
            continue;
        }
        // A test's stalled client: idle between its last answer and this request.
        if !sh.test_send_lag.is_zero() {
            tokio::time::sleep(sh.test_send_lag).await;
        }
        let recipe = sh.plan.request(&sh.stage, i);
        let body = sh.body(&recipe);
        let scheduled = since(sh.t0);
        idle.note(sh.send_timed(body, recipe, scheduled).await);
    }
}

/// One closed-loop client's idle time: from reading each answer to sending its next request,
/// between its first and last sends (a session's planned pauses are not idle: sessions keep
/// none). The tail after its last send is not idle: it had nothing more to send.
#[derive(Default)]
struct Idle {
    first_sent: Option<u64>,
    last_sent: u64,
    last_done: u64,
    idle_ns: u64,
}

impl Idle {
    fn note(&mut self, (sent, done): (u64, u64)) {
        match self.first_sent {
            None => self.first_sent = Some(sent),
            Some(_) => self.idle_ns += sent.saturating_sub(self.last_done),
        }
        self.last_sent = sent;
        self.last_done = done;
    }

    fn add_to(&self, o: &super::send::Occupancy) {
        if let Some(first) = self.first_sent {
            o.idle_ns.fetch_add(self.idle_ns, Ordering::Relaxed);
            o.span_ns
                .fetch_add(self.last_sent.saturating_sub(first), Ordering::Relaxed);
        }
    }
}
