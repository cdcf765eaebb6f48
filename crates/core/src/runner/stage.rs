//! One stage: its collector, a warm connection pool, the agreed start of a distributed step,
//! then the load (`load.rs`) and the drain of in-flight requests, and the stage's summary
//! with the client's own figures.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::collect::{Collector, Live};
use super::counters::{Begun, Occupancy, Own, occupancy_total};
use super::cpu::CpuClock;
use super::error::RunProblem;
use super::fold::RowSink;
use super::options::RunOptions;
use super::send::{StageShared, since};
use super::shards::Shards;
use super::stage_plan::{
    cores, goodput_slo, planned_load, planned_sending, planned_span, planned_total, pool_warmth,
    shown_name, stage_facts,
};
use super::target::{WARM_POOL_LIMIT, warm_pool};
use super::timer::PreciseTimer;
use super::warmup::{Watch, WatchState};
use crate::client::BodyTemplate;
use crate::dataset::PromptFactory;
use crate::hooks::Hooks;
use crate::metrics::{StageAggregator, StageClock, StageSummary};
use crate::plan::{Plan, StagePlan};
use crate::protocol::CacheReset;
use crate::sla::Abort;

/// What every stage of a run shares.
pub(super) struct StageRunner<'a> {
    pub(super) plan: Arc<Plan>,
    /// The target's URLs, each with its client, and the route over them.
    pub(super) router: Arc<super::route::Router>,
    pub(super) template: Arc<BodyTemplate>,
    pub(super) factory: Arc<PromptFactory>,
    /// Each data set's hooks, compiled once for the run (indexed like `plan.datasets`).
    pub(super) hooks: Vec<Option<Arc<Hooks>>>,
    pub(super) cpu: CpuClock,
    pub(super) opts: &'a RunOptions,
    /// How far each synchronised step started from its agreed instant (distributed runs).
    pub(super) starts: std::sync::Mutex<Vec<super::StepStart>>,
    /// `cache-salt`: the run's salt seed (each stage round draws its salt from it).
    pub(super) salt_seed: Option<u64>,
    /// `reset-cache`: how, once `auto` has found the server's endpoint.
    pub(super) reset: std::sync::Mutex<Option<CacheReset>>,
    /// The preflight found the server counting tokens otherwise: said on every stage.
    pub(super) tokenizer_note: Option<String>,
    /// The run's trace context, when its requests carry one.
    pub(super) traces: Option<super::traces::Traces>,
    /// `answers.jsonl`, when the run keeps its answers.
    pub(super) answers: Option<Arc<super::answers::AnswerSink>>,
    /// With `--cpus N` (N > 1), each shard's routes: the same URLs, each client with a
    /// connection pool of the shard's own (empty without shards).
    pub(super) shard_routers: Vec<Arc<super::route::Router>>,
}

/// A stage opened for sending: its collector and what its requests share.
struct Opened {
    /// "Stop sending": Ctrl-C, the warm-up's rule holding (which must not end the run), or
    /// the live check.
    stop: CancellationToken,
    /// The live check decided the stage (what is in flight still counts).
    decided: CancellationToken,
    /// Requests begun (per shard), for the live check.
    begun: Arc<Begun>,
    /// The stage's clock start, once known.
    started: Arc<std::sync::OnceLock<Instant>>,
    /// The stage round's number in its requests' trace ids.
    trace_stage: Option<u16>,
    track: Arc<super::probe::Track>,
    collector: Collector,
}

/// What a stage's summary needs from its sending, once its requests have ended.
struct Ending {
    t0: Instant,
    /// The client's CPU time and the host's counters when the clock started.
    cpu0: u64,
    host0: super::host::HostSample,
    probe: super::probe::LoopProbe,
    /// Each shard's (one without shards).
    occupancy: Vec<Arc<Occupancy>>,
    reset_note: Option<String>,
    /// The live check judged the stage as it ran.
    judged_live: bool,
    /// How long the stage sent, in seconds.
    sending_s: f64,
    warmup_end: Option<crate::metrics::WarmupEnd>,
    /// The answers kept for the data set's LLM judge.
    judge: Option<Arc<super::judge::JudgePool>>,
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
        let reset_note = self.reset_cache(stage).await;
        let sharded = self.sharded(stage);
        let Opened {
            stop,
            decided,
            begun,
            started,
            trace_stage,
            track,
            collector,
        } = self.open(stage, round, position, live, sink.take(), sharded);
        self.warm_pool(stage, sharded).await;
        self.await_start(start, stage, round).await;

        let t0 = Instant::now();
        let _ = started.set(t0);
        let cpu0 = self.cpu.now_ns();
        let host0 = super::host::HostSample::now();
        let probe = super::probe::LoopProbe::start(&track, t0, self.opts.test_read_stall, sharded);
        let base = self.shared(stage, round, t0, &collector, &stop, (begun, trace_stage));
        let judge = base.judge.clone();
        let senders = self.senders(base, &collector, sharded);
        let occupancy = senders.occupancy();
        let cancels = senders.cancels();
        let mut watched = WatchState::default();
        let mut watching = Box::pin(super::warmup::watch(
            watch,
            collector.recent.clone(),
            stop.clone(),
            t0,
            &mut watched,
        ));
        super::load::drive(&senders, &stop, &mut watching, self.opts.dispatchers).await;
        drop(watching);
        let sending_s = t0.elapsed().as_secs_f64();
        let warmup_end = watch.map(|_| self.warmup_end(watched, t0));
        let trackers = senders.trackers();
        // Decided: what is in flight is part of the stage, drained as at its end.
        let cut_short = stop.is_cancelled() && !decided.is_cancelled();
        self.drain(stage, &trackers, cut_short).await;
        cancels.iter().for_each(|c| c.cancel());
        super::load::wait_all(&trackers).await;
        let ending = Ending {
            t0,
            cpu0,
            host0,
            probe,
            occupancy,
            reset_note,
            judged_live,
            sending_s,
            warmup_end,
            judge,
        };
        self.conclude(stage, sink, collector, ending).await
    }

    /// The stage's summary once everything it sent has ended: its clock and the client's
    /// figures, what went wrong, the notes, and an `until-decided` stage's account.
    async fn conclude(
        &self,
        stage: &StagePlan,
        sink: &mut Option<RowSink>,
        collector: Collector,
        e: Ending,
    ) -> (StageSummary, Option<RunProblem>, Option<Abort>) {
        let wall_ns = since(e.t0);
        let cpu_ns = self.cpu.now_ns().saturating_sub(e.cpu0);
        let host1 = super::host::HostSample::now();
        let loop_delay = e.probe.finish().await;
        let finished = collector.finish();
        *sink = finished.sink;
        let problem = self.problem(stage, finished.problem);
        let run_queue = finished.run_queue;
        let clock = self.clock(
            stage,
            (wall_ns, cpu_ns),
            (&e.host0, &host1),
            run_queue,
            (loop_delay, occupancy_total(&e.occupancy).1),
        );
        let mut summary = finished.aggregator.finish(clock, &self.opts.validity);
        summary.warmup_end = e.warmup_end;
        // The result records the abort as its text; the caller gets the verdict.
        summary.aborted = finished.aborted.as_ref().map(ToString::to_string);
        summary.notes.extend(e.reset_note);
        summary.notes.extend(self.tokenizer_note.clone());
        summary.client.peak_in_flight = occupancy_total(&e.occupancy).0;
        if let Some(pool) = e.judge.as_ref().filter(|_| summary.quality.is_some()) {
            // After every request of the stage ended, outside its clock: the judge never
            // shares the client's time with the target.
            let base = match pool.spec.url.as_str() {
                "sim" => self.router.first().base_url.clone(),
                url => url.to_owned(),
            };
            let judged = super::judge::judge(pool, &base).await;
            judged.fill(&mut summary, stage, self.opts.validity.confidence);
        }
        let until = finished.until.or_else(|| {
            super::until::Until::of(stage, self.plan.target.request.timeout)
                .filter(|_| e.judged_live)
        });
        summary.until_decided = until.map(|u| {
            let interrupted = self.opts.interrupt.is_cancelled() || finished.aborted.is_some();
            u.finish(
                finished.decided,
                interrupted,
                (e.sending_s, summary.requests.sent),
            )
        });
        (summary, problem, finished.aborted)
    }

    /// The stage's collector (with its progress line and live check) and the signals its
    /// requests share, before anything is sent.
    fn open(
        &self,
        stage: &StagePlan,
        round: u32,
        position: Option<(usize, usize)>,
        live: bool,
        sink: Option<RowSink>,
        sharded: Option<&Shards>,
    ) -> Opened {
        let agg = self.aggregator(stage);
        let progress = self.opts.observer.stage_planned(
            &shown_name(stage, round, position),
            planned_total(&self.plan, stage),
            planned_sending(stage),
        );
        let stop = self.opts.interrupt.child_token();
        let decided = CancellationToken::new();
        let begun = Arc::new(Begun::new(sharded.map_or(1, Shards::len)));
        let started = Arc::new(std::sync::OnceLock::new());
        let live = live
            .then(|| self.live(stage, &stop, &decided, &begun, &started))
            .flatten();
        // A probe per loop that runs requests: each runtime worker, or each shard.
        let workers = sharded.map_or_else(
            || tokio::runtime::Handle::current().metrics().num_workers(),
            Shards::len,
        );
        let track = super::probe::Track::new(workers);
        let (trace_stage, spans) = match &self.traces {
            Some(t) => {
                let (n, spans) = t.stage(&self.plan, stage, started.clone());
                (Some(n), spans)
            }
            None => (None, None),
        };
        let collector = Collector::spawn(
            stage.name.clone(),
            stage.groups.clone(),
            agg,
            sink,
            progress,
            live,
            (Some(track.clone()), spans),
            sharded.map_or(1, Shards::len),
        );
        Opened {
            stop,
            decided,
            begun,
            started,
            trace_stage,
            track,
            collector,
        }
    }

    /// An empty aggregator for `stage` (its own; an `until-decided` stage's prefix's).
    fn aggregator(&self, stage: &StagePlan) -> StageAggregator {
        let planned = crate::metrics::PlannedLoad {
            gpus: self.plan.target.run.gpus,
            ..planned_load(stage)
        };
        StageAggregator::new(&stage.name, planned, goodput_slo(&self.plan))
            .with_facts(stage_facts(&self.plan, stage))
            .with_groups(&stage.groups, stage.priority_gate)
    }

    /// The live check (`abort-on-fail`, `until-decided`) of a stage judged as it runs: it
    /// stops sending through `stop` and says it decided through `decided`.
    fn live(
        &self,
        stage: &StagePlan,
        stop: &CancellationToken,
        decided: &CancellationToken,
        begun: &Arc<Begun>,
        started: &Arc<std::sync::OnceLock<Instant>>,
    ) -> Option<Live> {
        let check = self.opts.live_check.as_ref()?;
        let until = super::until::Until::of(stage, self.plan.target.request.timeout);
        Some(Live {
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
            prefix: until.as_ref().map(|_| self.aggregator(stage)),
            until,
            begun: begun.clone(),
        })
    }

    /// What every request of this stage round shares (on shard 0, when sharded: see
    /// `shard_stage.rs` for the others).
    fn shared(
        &self,
        stage: &StagePlan,
        round: u32,
        t0: Instant,
        collector: &Collector,
        stop: &CancellationToken,
        (begun, trace_stage): (Arc<Begun>, Option<u16>),
    ) -> StageShared {
        StageShared {
            plan: self.plan.clone(),
            stage: stage.clone(),
            router: self.router.clone(),
            template: self.template.clone(),
            variants: Arc::new(super::labels::Variants::new(
                &self.template,
                &stage.groups,
                (
                    self.plan.target.request.priority_body,
                    self.plan.target.request.priority_header.is_some(),
                ),
            )),
            factory: self.factory.clone(),
            hooks: self.hooks.get(stage.dataset).cloned().flatten(),
            quality: quality_check(&self.plan, stage),
            answers: self.answers.clone(),
            agree_with: self.opts.agree_with.clone(),
            judge: super::judge::JudgePool::for_stage(&self.plan, stage, round),
            t0,
            tx: collector.tx[0].clone(),
            interrupt: stop.clone(),
            cancel: Arc::default(),
            in_flight: Own::default(),
            occupancy: Arc::new(Occupancy::default()),
            test_send_lag: self.opts.test_send_lag,
            started: begun,
            shard: 0,
            trace: self
                .traces
                .as_ref()
                .zip(trace_stage)
                .map(|(t, n)| (t.run, n)),
            salt: self.salt_seed.map(|seed| {
                self.factory
                    .salt(seed ^ crate::dataset::salt_domain(&stage.name, round))
            }),
        }
    }

    /// How long opening the warm connections may take: the request timeout, at most
    /// [`WARM_POOL_LIMIT`].
    pub(super) fn warm_limit(&self) -> std::time::Duration {
        self.plan
            .target
            .request
            .timeout
            .as_std()
            .min(WARM_POOL_LIMIT)
    }

    /// Readies the connections the stage will need before its clock starts (each shard its
    /// share, in its own pools, on its own runtime).
    async fn warm_pool(&self, stage: &StagePlan, sharded: Option<&Shards>) {
        if let Some(shards) = sharded {
            return self.warm_shards(stage, shards).await;
        }
        let limit = self.warm_limit();
        // Each URL gets the stage's whole warmth: which of them a request goes to is the
        // route's to say, and idle connections cost little.
        let warm = self.router.all().iter().map(|route| {
            warm_pool(
                &route.client,
                &route.base_url,
                pool_warmth(stage),
                limit,
                &self.opts.interrupt,
            )
        });
        futures_util::future::join_all(warm).await;
    }

    /// What went wrong in the stage's collector, as the run reports it.
    fn problem(
        &self,
        stage: &StagePlan,
        problem: Option<super::collect::CollectProblem>,
    ) -> Option<RunProblem> {
        match problem? {
            super::collect::CollectProblem::Sink(source) => self
                .opts
                .requests_jsonl
                .clone()
                .map(|path| RunProblem::RequestsJsonl { path, source }),
            super::collect::CollectProblem::Panicked => {
                Some(RunProblem::CollectorPanicked(stage.name.clone()))
            }
        }
    }

    /// Waits for a distributed step's agreed start and records how far from it the stage
    /// started.
    async fn await_start(
        &self,
        start: Option<(u32, super::AgreedStart)>,
        stage: &StagePlan,
        round: u32,
    ) {
        let Some((step, agreed)) = start else {
            return;
        };
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

    /// The stage's clock and the client's figures: wall and CPU time, the host's load between
    /// the two samples, steal, memory, how late the event loop woke.
    fn clock(
        &self,
        stage: &StagePlan,
        (wall_ns, cpu_ns): (u64, u64),
        (host0, host1): (&super::host::HostSample, &super::host::HostSample),
        run_queue: Option<(f64, u32)>,
        (loop_delay, closed_idle): (Option<crate::metrics::LoopDelay>, Option<(u64, u64)>),
    ) -> StageClock {
        StageClock {
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
            host: super::host::host_load(host0, host1, cpu_ns, wall_ns, run_queue),
            loop_delay,
            closed_idle,
        }
    }

    /// Sending is over: waits for in-flight requests, at most the drain time (the interrupt
    /// grace once interrupted or stopped by the live check).
    async fn drain(&self, stage: &StagePlan, trackers: &[TaskTracker], stopped: bool) {
        let interrupt = &self.opts.interrupt;
        let drain = if interrupt.is_cancelled() || stopped {
            self.opts.interrupt_grace
        } else {
            stage.drain_timeout.as_std()
        };
        tokio::select! {
            _ = super::load::wait_all(trackers) => {}
            _ = tokio::time::sleep(drain) => {}
            _ = interrupt.cancelled(), if !interrupt.is_cancelled() => {
                tokio::select! {
                    _ = super::load::wait_all(trackers) => {}
                    _ = tokio::time::sleep(self.opts.interrupt_grace) => {}
                }
            }
        }
    }
}

impl StageRunner<'_> {
    /// How a watched warm-up ended, now.
    fn warmup_end(&self, watched: WatchState, t0: Instant) -> crate::metrics::WarmupEnd {
        let interrupted = self.opts.interrupt.is_cancelled();
        super::warmup::finish(watched, interrupted, t0.elapsed().as_secs_f64())
    }
}

/// The stage's data set's `quality` checks, compiled (the scenario checked its pattern
/// already; a plan edited by hand that breaks it is logged and checks nothing).
fn quality_check(plan: &Plan, stage: &StagePlan) -> Option<Arc<crate::dataset::QualityCheck>> {
    let spec = plan.datasets.get(stage.dataset)?.quality.as_ref()?;
    match crate::dataset::QualityCheck::compile(spec) {
        Ok(q) => Some(Arc::new(q)),
        Err(e) => {
            tracing::warn!("quality checks of stage `{}` off: {e}", stage.name);
            None
        }
    }
}
