//! One stage: its collector, a warm connection pool, then the load — open-loop stages from
//! the plan's schedule, closed-loop stages with N workers — and the drain of in-flight
//! requests.
//!
//! Open-loop stages are driven by one dispatcher task that follows the plan's schedule: it
//! prepares the next request's body while waiting, sleeps on a precise timer (sub-millisecond,
//! unlike the runtime's 1 ms timer wheel) and spawns the request at its scheduled instant,
//! whatever earlier requests are doing. Latency counts from the scheduled
//! instant; the gap to the actual send is the send lag. Closed-loop stages are N tasks that
//! each send their next request when the previous one ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::collect::{Collector, Live, RowSink};
use super::cpu::CpuClock;
use super::error::RunProblem;
use super::options::RunOptions;
use super::send::{StageShared, since};
use super::target::{WARM_POOL_LIMIT, warm_pool};
use super::timer::PreciseTimer;
use super::warmup::{Watch, WatchState};
use crate::client::{BodyTemplate, Client};
use crate::dataset::{DatasetSource, PromptFactory};
use crate::hooks::Hooks;
use crate::metrics::{
    GoodputSlo, PlannedLoad, PointKind, StageAggregator, StageClock, StageFacts, StageSummary,
};
use crate::plan::{Load, Plan, StagePlan};
use crate::protocol::CacheReset;
use crate::sla::Abort;

/// What every stage of a run shares.
pub(super) struct StageRunner<'a> {
    pub(super) plan: Arc<Plan>,
    pub(super) client: Client,
    pub(super) template: Arc<BodyTemplate>,
    pub(super) factory: Arc<PromptFactory>,
    /// Each data set's hooks, compiled once for the run (indexed like `plan.datasets`).
    pub(super) hooks: Vec<Option<Arc<Hooks>>>,
    pub(super) base_url: String,
    pub(super) cpu: CpuClock,
    pub(super) opts: &'a RunOptions,
    /// How far each synchronised step started from its agreed instant (distributed runs).
    pub(super) starts: std::sync::Mutex<Vec<super::StepStart>>,
    /// `cache-salt`: the run's salt seed (each stage round draws its salt from it).
    pub(super) salt_seed: Option<u64>,
    /// `reset-cache`: how, once `auto` has found the server's endpoint.
    pub(super) reset: std::sync::Mutex<Option<CacheReset>>,
}

/// How a stage is run, beside the stage itself.
#[derive(Default)]
pub(super) struct StageCall {
    /// (this, of) for a sweep point or search probe, for the progress line.
    pub position: Option<(usize, usize)>,
    /// The caller's live check (`abort-on-fail`) judges the stage as it runs.
    pub live: bool,
    /// (step number, agreed start): the stage's clock starts at that instant.
    pub start: Option<(u32, super::AgreedStart)>,
}

impl StageRunner<'_> {
    /// Runs round `round` (from 0) of `stage` (a stage of the plan, its warm-up or a search
    /// probe). With `watch`, sending also stops once its rule holds (`warmup until="stable"`);
    /// `call` says where it sits in a sweep, whether it is judged live, and when it starts.
    #[allow(
        clippy::too_many_lines,
        reason = "being edited on another branch in this wave: split once those land (issue #24)"
    )]
    pub(super) async fn run_stage(
        &self,
        stage: &StagePlan,
        round: u32,
        sink: &mut Option<RowSink>,
        watch: Option<&Watch<'_>>,
        call: StageCall,
    ) -> (StageSummary, Option<RunProblem>, Option<Abort>) {
        let StageCall {
            position,
            live,
            start,
        } = call;
        let judged_live = live;
        let reset_note = self.reset_cache(&stage.name).await;
        let agg = StageAggregator::new(&stage.name, planned_load(stage), goodput_slo(&self.plan))
            .with_facts(stage_facts(&self.plan, stage));
        let mut notes = Vec::new();
        if let Some((i, n)) = position {
            notes.push(match stage.profile.as_ref().map(|p| p.kind) {
                Some(PointKind::Probe) => format!("probe {i} of at most {n}"),
                _ => format!("point {i} of {n}"),
            });
        }
        if stage.rounds > 1 {
            notes.push(format!("round {} of {}", round + 1, stage.rounds));
        }
        let shown = if notes.is_empty() {
            stage.name.clone()
        } else {
            format!("{} ({})", stage.name, notes.join(", "))
        };
        let progress = self.opts.observer.stage_planned(
            &shown,
            planned_total(&self.plan, stage),
            planned_sending(stage),
        );
        // "Stop sending": Ctrl-C, the warm-up's rule holding (which must not end the run), or
        // the live check.
        let stop = self.opts.interrupt.child_token();
        let decided = CancellationToken::new();
        let begun = Arc::new(AtomicU64::new(0));
        let started = Arc::new(std::sync::OnceLock::new());
        let live = live
            .then_some(self.opts.live_check.as_ref())
            .flatten()
            .map(|check| Live {
                check: check.clone(),
                stop: stop.clone(),
                t0: started.clone(),
                clock: StageClock {
                    planned_span_ns: planned_span(stage),
                    cores: cores(),
                    poll_idle: self.opts.poll_idle,
                    ..StageClock::default()
                },
                rules: self.opts.validity,
                decided: decided.clone(),
                until: super::until::Until::of(stage, self.plan.target.request.timeout),
                begun: begun.clone(),
            });
        let workers = tokio::runtime::Handle::current().metrics().num_workers();
        let track = super::probe::Track::new(workers);
        let collector = Collector::spawn(
            stage.name.clone(),
            agg,
            sink.take(),
            progress,
            live,
            Some(track.clone()),
        );

        warm_pool(
            &self.client,
            &self.base_url,
            pool_warmth(stage),
            self.plan
                .target
                .request
                .timeout
                .as_std()
                .min(WARM_POOL_LIMIT),
            &self.opts.interrupt,
        )
        .await;
        if let Some((step, agreed)) = start {
            // The agreed start is at most a minute ahead (the coordinator's client refuses
            // more), and a signal ends the wait.
            let mut timer = PreciseTimer::new();
            tokio::select! {
                biased;
                _ = self.opts.interrupt.cancelled() => {}
                _ = timer.sleep_until(agreed.instant()) => {}
            }
            let offset_ns = agreed.offset_of(std::time::SystemTime::now());
            if let Ok(mut starts) = self.starts.lock() {
                starts.push(super::StepStart {
                    step,
                    stage: stage.name.clone(),
                    round,
                    agreed,
                    offset_ns,
                });
            }
        }

        let cancel = CancellationToken::new();
        let t0 = Instant::now();
        let _ = started.set(t0);
        let cpu0 = self.cpu.now_ns();
        let host0 = super::host::HostSample::now();
        let probe = super::probe::LoopProbe::start(&track, t0);
        let peak_in_flight = Arc::new(AtomicU64::new(0));
        let shared = Arc::new(StageShared {
            plan: self.plan.clone(),
            stage: stage.clone(),
            client: self.client.clone(),
            template: self.template.clone(),
            factory: self.factory.clone(),
            hooks: self.hooks.get(stage.dataset).cloned().flatten(),
            t0,
            tx: collector.tx.clone(),
            interrupt: stop.clone(),
            cancel: cancel.clone(),
            in_flight: AtomicU64::new(0),
            peak_in_flight: peak_in_flight.clone(),
            test_send_lag: self.opts.test_send_lag,
            started: begun,
            salt: self.salt_seed.map(|seed| {
                self.factory
                    .salt(seed ^ crate::dataset::salt_domain(&stage.name, round))
            }),
        });
        let tracker = TaskTracker::new();
        // Closing only lets `wait` finish once the tracker is empty; tasks can still be spawned.
        // Nothing waits before sending is over, so an early empty moment cannot end a stage.
        tracker.close();
        let mut watched = WatchState::default();
        let mut watching = Box::pin(super::warmup::watch(
            watch,
            collector.recent.clone(),
            stop.clone(),
            t0,
            &mut watched,
        ));
        match &stage.load {
            Load::Open { .. } => {
                // On a runtime worker, so the request tasks it spawns start on that same
                // worker without a cross-thread wake-up.
                // With `--cpus`, one dispatcher per CPU, each on every n-th send.
                let n = self.opts.dispatchers.max(1);
                let dispatchers: Vec<_> = (0..n)
                    .map(|k| {
                        let slice = Interleave { k, n };
                        tokio::spawn(dispatch_open(shared.clone(), tracker.clone(), slice))
                    })
                    .collect();
                for d in dispatchers {
                    let _ = d.await;
                }
            }
            // Run probe by probe by `runner::search`, never as one stage.
            Load::Search(_) => {}
            Load::Closed { clients, ramp } => {
                let next = Arc::new(AtomicU64::new(0));
                let deadline = stage.duration.map(|d| t0 + d.as_std());
                // A shard runs its own workers of the plan's, each at its planned start.
                for k in stage.slice.members(u64::from(*clients)) {
                    let k = k as u32;
                    let start = ramp.map_or(0, |r| r.start_offset_ns(k));
                    tracker.spawn(closed_worker(
                        shared.clone(),
                        next.clone(),
                        t0 + Duration::from_nanos(start),
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
                    _ = &mut watching => {}
                }
            }
        }
        drop(watching);
        let sending_s = t0.elapsed().as_secs_f64();
        let warmup_end = watch.map(|_| {
            super::warmup::finish(
                watched,
                self.opts.interrupt.is_cancelled(),
                t0.elapsed().as_secs_f64(),
            )
        });
        drop(shared);
        // Decided: what is in flight is part of the stage, drained as at its end.
        let cut_short = stop.is_cancelled() && !decided.is_cancelled();
        self.drain(stage, &tracker, cut_short).await;
        cancel.cancel();
        tracker.wait().await;
        let wall_ns = since(t0);
        let cpu_ns = self.cpu.now_ns().saturating_sub(cpu0);
        let host1 = super::host::HostSample::now();
        let loop_delay = probe.finish().await;
        let finished = collector.finish();
        *sink = finished.sink;
        let problem = match finished.problem {
            Some(super::collect::CollectProblem::Sink(source)) => self
                .opts
                .requests_jsonl
                .clone()
                .map(|path| RunProblem::RequestsJsonl { path, source }),
            Some(super::collect::CollectProblem::Panicked) => {
                Some(RunProblem::CollectorPanicked(stage.name.clone()))
            }
            None => None,
        };
        let clock = StageClock {
            wall_ns,
            planned_span_ns: planned_span(stage),
            cpu_ns,
            cores: cores(),
            peak_rss_bytes: super::cpu::peak_rss_bytes(),
            steal_share: self.opts.test_steal_share.or_else(|| {
                host0
                    .cpus
                    .zip(host1.cpus)
                    .and_then(|(a, b)| b.steal_share_since(&a))
            }),
            poll_idle: self.opts.poll_idle,
            host: super::host::host_load(&host0, &host1, cpu_ns, wall_ns, finished.run_queue),
            loop_delay,
        };
        let mut summary = finished.aggregator.finish(clock, &self.opts.validity);
        summary.warmup_end = warmup_end;
        // The result records the abort as its text; the caller gets the verdict.
        summary.aborted = finished.aborted.as_ref().map(ToString::to_string);
        summary.notes.extend(reset_note);
        summary.client.peak_in_flight = peak_in_flight.load(Ordering::Relaxed);
        let until = finished.until.or_else(|| {
            super::until::Until::of(stage, self.plan.target.request.timeout).filter(|_| judged_live)
        });
        summary.until_decided = until.map(|u| {
            let interrupted = self.opts.interrupt.is_cancelled() || finished.aborted.is_some();
            u.finish(
                finished.decided,
                interrupted,
                (sending_s, summary.requests.sent),
            )
        });
        (summary, problem, finished.aborted)
    }

    /// `reset-cache`: drops the server's prompt cache before a stage; a note saying so, or a
    /// warning (and nothing) when no endpoint answered.
    async fn reset_cache(&self, stage: &str) -> Option<String> {
        let how = self.plan.target.run.reset_cache?;
        let resolved = self.reset.lock().ok().and_then(|r| *r).unwrap_or(how);
        let root = crate::protocol::server_root(&self.base_url);
        match super::server::reset_cache(self.client.http(), &root, resolved).await {
            Ok((kind, done)) => {
                if let Ok(mut r) = self.reset.lock() {
                    *r = Some(kind);
                }
                Some(format!(
                    "asked the server to drop its prompt cache before the stage ({done})"
                ))
            }
            Err(why) => {
                self.opts.observer.warning(&format!(
                    "reset-cache \"{}\" before `{stage}`: no endpoint answered ({why})",
                    how.as_str()
                ));
                None
            }
        }
    }

    /// Sending is over: waits for in-flight requests, at most the drain time (the interrupt
    /// grace once interrupted or stopped by the live check).
    async fn drain(&self, stage: &StagePlan, tracker: &TaskTracker, stopped: bool) {
        let interrupt = &self.opts.interrupt;
        let drain = if interrupt.is_cancelled() || stopped {
            self.opts.interrupt_grace
        } else {
            stage.drain_timeout.as_std()
        };
        tokio::select! {
            _ = tracker.wait() => {}
            _ = tokio::time::sleep(drain) => {}
            _ = interrupt.cancelled(), if !interrupt.is_cancelled() => {
                tokio::select! {
                    _ = tracker.wait() => {}
                    _ = tokio::time::sleep(self.opts.interrupt_grace) => {}
                }
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
            tracker.spawn(super::session::run(sh.clone(), first, offset));
        } else {
            let recipe = sh.plan.request(&sh.stage, i);
            let body = sh.body(&recipe);
            if !wait_until(&mut timer, at, &sh.interrupt).await {
                return;
            }
            let task_sh = sh.clone();
            tracker.spawn(async move {
                if !task_sh.test_send_lag.is_zero() {
                    tokio::time::sleep(task_sh.test_send_lag).await;
                }
                task_sh.send(body, recipe, offset, 0).await
            });
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
    loop {
        if sh.interrupt.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
            return;
        }
        // A shard's k-th request is the plan's request `index + k · count`.
        let i = sh.stage.slice.global(next.fetch_add(1, Ordering::Relaxed));
        if max_requests.is_some_and(|m| i >= m) {
            return;
        }
        if sessions {
            let first = super::session::prepare(&sh, i);
            super::session::run(sh.clone(), first, since(sh.t0)).await;
            continue;
        }
        let recipe = sh.plan.request(&sh.stage, i);
        let body = sh.body(&recipe);
        let scheduled = since(sh.t0);
        sh.send(body, recipe, scheduled, 0).await;
    }
}

/// The planned sending span of an open-loop stage (its last scheduled offset).
fn planned_span(stage: &StagePlan) -> Option<u64> {
    match &stage.load {
        Load::Open { schedule, .. } => Some(schedule.last_ns()),
        Load::Closed { .. } | Load::Search(_) => None,
    }
}

/// How long the plan says the stage sends: its schedule's span, or its duration bound.
fn planned_sending(stage: &StagePlan) -> Option<std::time::Duration> {
    match planned_span(stage) {
        Some(ns) => Some(std::time::Duration::from_nanos(ns)),
        None => stage.duration.map(|d| d.as_std()),
    }
}

fn cores() -> u32 {
    thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// What the plan says about the stage's prompts: whether they share prefixes on purpose, and
/// how many distinct ones a file data set has.
fn stage_facts(plan: &Plan, stage: &StagePlan) -> StageFacts {
    let dataset = plan.datasets.get(stage.dataset);
    let sessions = plan.session_plan(stage).is_some();
    let (prefix_blocks, distinct) = match dataset.map(|d| &d.source) {
        Some(DatasetSource::Trace { rows, .. }) => {
            (rows.iter().any(|r| !r.hash_ids.is_empty()), None)
        }
        Some(DatasetSource::Items { items, .. }) if !sessions => (false, Some(items.len() as u64)),
        _ => (false, None),
    };
    StageFacts {
        ignore_eos: plan.target.request.ignore_eos,
        shares_prefixes: sessions
            || prefix_blocks
            || dataset.is_some_and(|d| d.context.shared_prefix.is_some()),
        distinct_prompts: distinct,
    }
}

fn planned_load(stage: &StagePlan) -> PlannedLoad {
    let mut p = PlannedLoad {
        requests: stage.max_requests,
        duration_s: stage.duration.map(|d| d.as_secs_f64()),
        ..PlannedLoad::default()
    };
    match &stage.load {
        Load::Open { arrival, schedule } => {
            p.requests = Some(schedule.count());
            p.arrival = arrival.kind();
            p.rate_per_s = arrival.steady_rate().map(|r| r.per_sec());
        }
        Load::Closed { clients, ramp } => {
            p.arrival = if ramp.is_some() {
                crate::arrival::ArrivalKind::RampConcurrency
            } else {
                crate::arrival::ArrivalKind::Concurrency
            };
            p.clients = Some(*clients);
        }
        Load::Search(_) => p.arrival = crate::arrival::ArrivalKind::Search,
    }
    p
}

/// Requests the progress bar counts to: every turn of every session. A ShareGPT session's
/// turn count is only known as it runs, so those stages count without a total.
fn planned_total(plan: &Plan, stage: &StagePlan) -> Option<u64> {
    plan.planned_requests(stage, stage.slice)
}

/// Connections to open before the clock starts: the expected concurrency, within reason.
fn pool_warmth(stage: &StagePlan) -> usize {
    match &stage.load {
        Load::Open { schedule, .. } => {
            let secs = schedule.last_ns() as f64 / 1e9;
            let count = stage.slice.share(schedule.count());
            let rate = if secs > 0.0 { count as f64 / secs } else { 1.0 };
            (rate as usize).clamp(4, 256).min(count.max(1) as usize)
        }
        Load::Closed { clients, .. } => (stage.slice.share(u64::from(*clients)) as usize).min(512),
        Load::Search(_) => 4,
    }
}

fn goodput_slo(plan: &Plan) -> GoodputSlo {
    let g = &plan.goodput;
    GoodputSlo {
        ttft_ns: g.ttft.map(|d| d.as_nanos()),
        tpot_ns: g.tpot.map(|d| d.as_nanos()),
        itl_ns: g.itl.map(|d| d.as_nanos()),
        e2e_ns: g.e2e.map(|d| d.as_nanos()),
    }
}
