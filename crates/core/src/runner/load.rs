//! How a stage's load is driven. Open-loop stages are driven by dispatcher tasks that follow
//! the plan's schedule: each prepares the next request's body while waiting, sleeps on a
//! precise timer (sub-millisecond, unlike the runtime's 1 ms timer wheel) and spawns the
//! request at its scheduled instant, whatever earlier requests are doing. Latency counts from
//! the scheduled instant; the gap to the actual send is the send lag. Closed-loop stages are N
//! tasks that each send their next request when the previous one ends.
//!
//! With `--cpus N` (N > 1) a stage is sent by N shards (`shards.rs`): open-loop, shard `k`
//! runs the dispatcher of the `k`-th interleaved slice of the schedule; closed-loop, client
//! `c` runs on shard `c mod N`, and each shard's clients take the requests of its slice in
//! turn. Each shard has its own [`StageShared`] and task tracker, so a request touches
//! nothing another shard writes.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::send::{StageShared, since};
use super::shards::Shards;
use super::timer::PreciseTimer;
use crate::plan::Load;

/// Who sends a stage: one [`StageShared`] and task tracker per shard, or one of each on the
/// run's runtime (`shards` is then `None`).
pub(super) struct Senders<'a> {
    pub(super) shared: Vec<Arc<StageShared>>,
    pub(super) trackers: Vec<TaskTracker>,
    pub(super) shards: Option<&'a Shards>,
}

impl Senders<'_> {
    /// Each shard's occupancy.
    pub(super) fn occupancy(&self) -> Vec<Arc<super::counters::Occupancy>> {
        self.shared.iter().map(|s| s.occupancy.clone()).collect()
    }

    /// Each shard's cancel of its requests in flight.
    pub(super) fn cancels(&self) -> Vec<Arc<super::counters::Cancel>> {
        self.shared.iter().map(|s| s.cancel.clone()).collect()
    }

    /// Sending is over: the trackers, to drain. The stage's `StageShared`s are dropped here
    /// (each request task holds its own), so the record channels close with the last task.
    pub(super) fn trackers(self) -> Vec<TaskTracker> {
        self.trackers
    }

    /// Starts `task` on shard `k`'s runtime, or on the current one without shards.
    fn spawn<F>(&self, k: usize, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.shards {
            Some(s) => s.handle(k).spawn(task),
            None => tokio::spawn(task),
        }
    }
}

/// Until every tracker is empty (closed).
pub(super) async fn wait_all(trackers: &[TaskTracker]) {
    futures_util::future::join_all(trackers.iter().map(TaskTracker::wait)).await;
}

/// Sends the stage's load until its schedule or deadline is done, `stop` is cancelled or
/// `watching` (the warm-up's rule, so only a closed loop: a warm-up is one) ends; what is in
/// flight is left to the drain.
/// `dispatchers`: how many open-loop dispatchers share the schedule without shards (one per
/// CPU); with shards, one per shard.
pub(super) async fn drive(
    s: &Senders<'_>,
    stop: &CancellationToken,
    watching: &mut (impl Future + Unpin),
    dispatchers: usize,
) {
    let stage = &s.shared[0].stage;
    match &stage.load {
        Load::Open { .. } => {
            // On a runtime worker (a shard's thread), so the request tasks it spawns start on
            // that same worker without a cross-thread wake-up.
            let n = if s.shards.is_some() {
                s.shared.len()
            } else {
                dispatchers.max(1)
            };
            let handles: Vec<_> = (0..n)
                .map(|k| {
                    let slice = Interleave { k, n };
                    let sh = s.shared[k.min(s.shared.len() - 1)].clone();
                    let tracker = s.trackers[k.min(s.trackers.len() - 1)].clone();
                    s.spawn(k, dispatch_open(sh, tracker, slice))
                })
                .collect();
            for d in handles {
                let _ = d.await;
            }
        }
        // Run probe by probe by `runner::search`, never as one stage.
        Load::Search(_) => {}
        Load::Closed { clients, ramp } => {
            let deadline = stage.duration.map(|d| s.shared[0].t0 + d.as_std());
            spawn_closed(s, u64::from(*clients), *ramp, deadline);
            let until_deadline = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = until_deadline => {}
                _ = wait_all(&s.trackers) => {}
                _ = stop.cancelled() => {}
                _ = watching => {}
            }
        }
    }
}

/// Starts a closed loop's clients: client `c` of this process's on shard `c mod n` (no more
/// shards than clients, so every shard's slice of the requests has a client to send it),
/// each at its planned start.
fn spawn_closed(
    s: &Senders<'_>,
    clients: u64,
    ramp: Option<crate::arrival::ClientRamp>,
    deadline: Option<Instant>,
) {
    let stage = &s.shared[0].stage;
    // A distributed run's shard runs its own workers of the plan's.
    let members: Vec<u64> = stage.slice.members(clients).collect();
    let n = s.shared.len().min(members.len()).max(1);
    let nexts: Vec<_> = (0..n).map(|_| Arc::new(AtomicU64::new(0))).collect();
    for (c, k) in members.into_iter().enumerate() {
        let k = k as u32;
        let shard = c % n;
        let sh = &s.shared[shard];
        let start = ramp.map_or(0, |r| r.start_offset_ns(k));
        let worker = closed_worker(
            sh.clone(),
            (nexts[shard].clone(), Interleave { k: shard, n }),
            sh.t0 + Duration::from_nanos(start),
            deadline,
            sh.stage.max_requests,
        );
        match s.shards {
            Some(shards) => drop(s.trackers[shard].spawn_on(worker, shards.handle(shard))),
            None => drop(s.trackers[shard].spawn(worker)),
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

/// A closed loop's client: sends its next request when the last one ends. Its shard's
/// clients share `next`, their count of the requests of the shard's `slice` taken so far.
async fn closed_worker(
    sh: Arc<StageShared>,
    (next, slice): (Arc<AtomicU64>, Interleave),
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
        // The slice's j-th is this process's `k + j · n`-th request; a distributed run's
        // shard's k-th request is the plan's request `index + k · count`.
        let j = next.fetch_add(1, Ordering::Relaxed);
        let i = sh.stage.slice.global(slice.k as u64 + j * slice.n as u64);
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

    fn add_to(&self, o: &super::counters::Occupancy) {
        if let Some(first) = self.first_sent {
            o.idle_ns.fetch_add(self.idle_ns, Ordering::Relaxed);
            o.span_ns
                .fetch_add(self.last_sent.saturating_sub(first), Ordering::Relaxed);
        }
    }
}
