//! The run itself: target set-up, then warm-up and each stage in order.
//!
//! Open-loop stages are driven by one dispatcher thread that follows the plan's schedule: it
//! prepares the next request's body while waiting, sleeps on the OS clock (sub-millisecond,
//! unlike the runtime's 1 ms timer wheel) and hands the request to the runtime at its
//! scheduled instant, whatever earlier requests are doing. Latency counts from the scheduled
//! instant; the gap to the actual send is the send lag. Closed-loop stages are N tasks that
//! each send their next request when the previous one ends.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::collect::{Collector, RowSink};
use super::cpu::CpuClock;
use super::progress::{Progress, ProgressMode};
use super::target::{InProcessSim, preflight, warm_pool};
use crate::client::{BodyTemplate, Client, ClientConfig, ClientError, PromptRef, TokenCounter};
use crate::dataset::{Prompt, PromptFactory, Tokenizer};
use crate::metrics::{
    ErrorKind, GoodputSlo, PlannedLoad, RequestRecord, StageAggregator, StageClock, StageSummary,
    ValidityRules,
};
use crate::plan::{EndpointPlan, Load, Plan, RequestRecipe, StagePlan};
use crate::scenario::ArrivalSpec;

/// How to run, beyond what the plan says.
pub struct RunOptions {
    /// The scenario's directory: data set and tokenizer paths resolve against it.
    pub base_dir: PathBuf,
    pub progress: ProgressMode,
    /// Write one JSON row per request here.
    pub requests_jsonl: Option<PathBuf>,
    pub validity: ValidityRules,
    /// Cancelled on Ctrl-C: stop sending, give in-flight requests `interrupt_grace`, then stop.
    pub interrupt: CancellationToken,
    pub interrupt_grace: Duration,
}

/// What the caller decides after each stage (an `abort-on-fail` assertion may stop the run).
pub enum StageDecision {
    Continue,
    Abort(String),
}

/// Everything measured. Stages that ran are always here, even when the run stopped early.
#[derive(Debug)]
pub struct RunOutput {
    /// `sim` or the base URL.
    pub endpoint: String,
    pub model: String,
    pub tokenizer: String,
    pub started_at: SystemTime,
    pub warmup: Option<StageSummary>,
    pub stages: Vec<StageSummary>,
    /// Stopped early by Ctrl-C or an abort.
    pub interrupted: bool,
    /// Why it stopped early, or a problem that did not stop it (a failing requests.jsonl).
    pub error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Target(String),
    #[error("{0}")]
    Dataset(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("failed to create {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

struct TokenizerCounter(Arc<Tokenizer>);

impl TokenCounter for TokenizerCounter {
    fn count(&self, text: &str) -> usize {
        self.0.count(text)
    }
}

/// Which stage of the plan a task works for.
#[derive(Clone, Copy)]
enum StageRef {
    Warmup,
    Stage(usize),
}

/// What every request task of one stage shares.
struct StageShared {
    plan: Arc<Plan>,
    stage: StageRef,
    client: Client,
    template: Arc<BodyTemplate>,
    factory: Arc<PromptFactory>,
    t0: Instant,
    tx: std::sync::mpsc::Sender<RequestRecord>,
    /// Stops sending (Ctrl-C).
    interrupt: CancellationToken,
    /// Cancels in-flight requests (drain time over, or interrupt grace over).
    cancel: CancellationToken,
}

impl StageShared {
    fn stage(&self) -> &StagePlan {
        match self.stage {
            StageRef::Warmup => self.plan.warmup.as_ref().expect("warm-up stage exists"),
            StageRef::Stage(i) => &self.plan.stages[i],
        }
    }

    fn body(&self, recipe: &RequestRecipe) -> Bytes {
        match self.factory.prompt(self.stage(), recipe) {
            Prompt::Text(text) => self
                .template
                .build(PromptRef::Text(&text), recipe.output_tokens),
        }
    }
}

fn since(t0: Instant) -> u64 {
    Instant::now().saturating_duration_since(t0).as_nanos() as u64
}

/// Runs the whole plan. `after_stage` sees each finished stage's summary and may stop the run.
pub async fn run(
    plan: Arc<Plan>,
    opts: RunOptions,
    after_stage: &mut (dyn FnMut(&StageSummary) -> StageDecision + Send),
) -> Result<RunOutput, RunError> {
    let started_at = SystemTime::now();
    let (sim, base_url, endpoint, default_model) = match &plan.target.endpoint {
        EndpointPlan::Sim(cfg) => {
            let sim = InProcessSim::start(cfg.clone())?;
            let url = sim.base_url.clone();
            (Some(sim), url, "sim".to_string(), Some(cfg.model.clone()))
        }
        EndpointPlan::Url(url) => (None, url.clone(), url.clone(), None),
    };
    let tokenizer = Arc::new(
        Tokenizer::load(&plan.tokenizer, &opts.base_dir)
            .map_err(|e| RunError::Dataset(e.to_string()))?,
    );
    let factory = Arc::new(
        PromptFactory::new(&plan, &opts.base_dir).map_err(|e| RunError::Dataset(e.to_string()))?,
    );
    let api_key = match &plan.target.api_key_env {
        Some(var) => Some(std::env::var(var).map_err(|_| ClientError::MissingApiKey(var.clone()))?),
        None => None,
    };
    let template_base = BodyTemplate {
        api: plan.target.api,
        model: String::new(),
        ignore_eos: plan.target.ignore_eos,
        extra: plan.target.extra_body.clone(),
    };
    let client = Client::new(
        ClientConfig {
            url: format!("{}{}", base_url.trim_end_matches('/'), template_base.path()),
            headers: plan.target.headers.clone(),
            api_key,
            timeout: plan.target.timeout.as_std(),
            pool_size: 1024,
            template_tokens: match plan.target.api {
                crate::scenario::Api::Chat => 16,
                crate::scenario::Api::Completions => 2,
            },
        },
        Arc::new(TokenizerCounter(tokenizer.clone())),
    )?;
    let model = preflight(
        client.http(),
        &base_url,
        plan.target.model.as_deref().or(default_model.as_deref()),
    )
    .await?;
    let template = Arc::new(BodyTemplate {
        model: model.clone(),
        ..template_base
    });
    let mut sink = match &opts.requests_jsonl {
        Some(path) => Some(BufWriter::new(File::create(path).map_err(|source| {
            RunError::Io {
                path: path.clone(),
                source,
            }
        })?)),
        None => None,
    };
    let cpu = CpuClock::new(sim.as_ref().and_then(|s| s.thread).into_iter().collect());
    let runner = StageRunner {
        plan: plan.clone(),
        client,
        template,
        factory,
        base_url,
        cpu,
        opts: &opts,
    };

    let mut out = RunOutput {
        endpoint,
        model,
        tokenizer: tokenizer.name().to_string(),
        started_at,
        warmup: None,
        stages: Vec::new(),
        interrupted: false,
        error: None,
    };
    if plan.warmup.is_some() {
        let (summary, err) = runner.run_stage(StageRef::Warmup, &mut sink).await;
        out.warmup = Some(summary);
        out.error = out.error.or(err);
    }
    for i in 0..plan.stages.len() {
        if opts.interrupt.is_cancelled() {
            break;
        }
        let (summary, err) = runner.run_stage(StageRef::Stage(i), &mut sink).await;
        out.error = out.error.or(err);
        let decision = after_stage(&summary);
        out.stages.push(summary);
        if let StageDecision::Abort(why) = decision {
            out.interrupted = true;
            out.error = Some(why);
            break;
        }
    }
    if opts.interrupt.is_cancelled() {
        out.interrupted = true;
        out.error
            .get_or_insert_with(|| "interrupted (Ctrl-C)".to_string());
    }
    if let Some(mut w) = sink {
        if let Err(e) = w.flush() {
            out.error
                .get_or_insert_with(|| format!("failed to write requests.jsonl: {e}"));
        }
    }
    drop(sim);
    Ok(out)
}

struct StageRunner<'a> {
    plan: Arc<Plan>,
    client: Client,
    template: Arc<BodyTemplate>,
    factory: Arc<PromptFactory>,
    base_url: String,
    cpu: CpuClock,
    opts: &'a RunOptions,
}

impl StageRunner<'_> {
    async fn run_stage(
        &self,
        which: StageRef,
        sink: &mut Option<RowSink>,
    ) -> (StageSummary, Option<String>) {
        let stage = match which {
            StageRef::Warmup => self.plan.warmup.as_ref().expect("warm-up stage exists"),
            StageRef::Stage(i) => &self.plan.stages[i],
        };
        let agg = StageAggregator::new(&stage.name, planned_load(stage), goodput_slo(&self.plan));
        let progress = Progress::new(self.opts.progress, &stage.name, planned_total(stage));
        let collector = Collector::spawn(stage.name.clone(), agg, sink.take(), progress);

        warm_pool(self.client.http(), &self.base_url, pool_warmth(stage)).await;

        let cancel = CancellationToken::new();
        let t0 = Instant::now();
        let cpu0 = self.cpu.now_ns();
        let shared = Arc::new(StageShared {
            plan: self.plan.clone(),
            stage: which,
            client: self.client.clone(),
            template: self.template.clone(),
            factory: self.factory.clone(),
            t0,
            tx: collector.tx.clone(),
            interrupt: self.opts.interrupt.clone(),
            cancel: cancel.clone(),
        });
        let tracker = TaskTracker::new();
        // Closing only lets `wait` finish once the tracker is empty; tasks can still be spawned.
        // Nothing waits before sending is over, so an early empty moment cannot end a stage.
        tracker.close();
        match &stage.load {
            Load::Open { .. } => {
                let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                let (sh, tr, rt) = (shared.clone(), tracker.clone(), Handle::current());
                let spawned = thread::Builder::new()
                    .name("infermeter-dispatch".into())
                    .spawn(move || {
                        dispatch_open(sh, tr, rt);
                        let _ = done_tx.send(());
                    });
                if spawned.is_ok() {
                    let _ = done_rx.await;
                }
            }
            Load::Closed { clients } => {
                let next = Arc::new(AtomicU64::new(0));
                let deadline = stage.duration.map(|d| t0 + d.as_std());
                for _ in 0..*clients {
                    tracker.spawn(closed_worker(
                        shared.clone(),
                        next.clone(),
                        deadline,
                        stage.max_requests,
                    ));
                }
                if let Some(d) = deadline {
                    tokio::select! {
                        _ = tokio::time::sleep_until(d.into()) => {}
                        _ = tracker.wait() => {}
                        _ = self.opts.interrupt.cancelled() => {}
                    }
                } else {
                    tokio::select! {
                        _ = tracker.wait() => {}
                        _ = self.opts.interrupt.cancelled() => {}
                    }
                }
            }
        }
        drop(shared);
        // Sending is over: wait for in-flight requests, at most the drain time.
        let drain = if self.opts.interrupt.is_cancelled() {
            self.opts.interrupt_grace
        } else {
            stage.drain_timeout.as_std()
        };
        tokio::select! {
            _ = tracker.wait() => {}
            _ = tokio::time::sleep(drain) => {}
            _ = self.opts.interrupt.cancelled(), if !self.opts.interrupt.is_cancelled() => {
                tokio::select! {
                    _ = tracker.wait() => {}
                    _ = tokio::time::sleep(self.opts.interrupt_grace) => {}
                }
            }
        }
        cancel.cancel();
        tracker.wait().await;
        let wall_ns = since(t0);
        let cpu_ns = self.cpu.now_ns().saturating_sub(cpu0);
        let (agg, returned_sink, err) = collector.finish();
        *sink = returned_sink;
        let clock = StageClock {
            wall_ns,
            planned_span_ns: match &stage.load {
                Load::Open { offsets_ns, .. } => offsets_ns.last().copied(),
                Load::Closed { .. } => None,
            },
            cpu_ns,
            cores: thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1),
        };
        (agg.finish(clock, &self.opts.validity), err)
    }
}

/// Follows an open-loop schedule on a dedicated OS thread.
fn dispatch_open(sh: Arc<StageShared>, tracker: TaskTracker, rt: Handle) {
    let Load::Open { offsets_ns, .. } = &sh.stage().load else {
        return;
    };
    for (i, &offset) in offsets_ns.iter().enumerate() {
        if sh.interrupt.is_cancelled() {
            return;
        }
        // Prepared ahead, so building the body is not part of the send lag.
        let recipe = sh.plan.request(sh.stage(), i as u64);
        let body = sh.body(&recipe);
        if !wait_until(sh.t0 + Duration::from_nanos(offset), &sh.interrupt) {
            return;
        }
        let task_sh = sh.clone();
        tracker.spawn_on(
            async move { send_one(&task_sh, body, recipe, offset).await },
            &rt,
        );
    }
}

/// Sleeps until `target` with sub-millisecond precision: an OS sleep for all but the last
/// ~80 µs (the kernel's timer slack), then yields. Returns false when interrupted first.
fn wait_until(target: Instant, interrupt: &CancellationToken) -> bool {
    const SLACK: Duration = Duration::from_micros(80);
    const CHECK_EVERY: Duration = Duration::from_millis(50);
    loop {
        let now = Instant::now();
        if now >= target {
            return true;
        }
        if interrupt.is_cancelled() {
            return false;
        }
        let left = target - now;
        if left > SLACK {
            thread::sleep((left - SLACK).min(CHECK_EVERY));
        } else {
            thread::yield_now();
        }
    }
}

async fn closed_worker(
    sh: Arc<StageShared>,
    next: Arc<AtomicU64>,
    deadline: Option<Instant>,
    max_requests: Option<u64>,
) {
    loop {
        if sh.interrupt.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
            return;
        }
        let i = next.fetch_add(1, Ordering::Relaxed);
        if max_requests.is_some_and(|m| i >= m) {
            return;
        }
        let recipe = sh.plan.request(sh.stage(), i);
        let body = sh.body(&recipe);
        let scheduled = since(sh.t0);
        send_one(&sh, body, recipe, scheduled).await;
    }
}

async fn send_one(sh: &StageShared, body: Bytes, recipe: RequestRecipe, scheduled_ns: u64) {
    let mut rec = RequestRecord {
        index: recipe.index,
        scheduled_ns,
        input_tokens: recipe.input_tokens,
        ..RequestRecord::default()
    };
    let cancelled = tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => true,
        _ = sh.client.execute(body, recipe.output_tokens, &mut rec, sh.t0) => false,
    };
    if cancelled {
        rec.error = Some(ErrorKind::Cancelled);
        rec.done_ns = since(sh.t0);
        if rec.sent_ns == 0 {
            rec.sent_ns = scheduled_ns;
        }
    }
    // The collector outlives every task of its stage; a failed send means it is gone already.
    let _ = sh.tx.send(rec);
}

fn planned_load(stage: &StagePlan) -> PlannedLoad {
    let mut p = PlannedLoad {
        requests: stage.max_requests,
        duration_s: stage.duration.map(|d| d.as_secs_f64()),
        ..PlannedLoad::default()
    };
    match &stage.load {
        Load::Open {
            arrival,
            offsets_ns,
        } => {
            p.requests = Some(offsets_ns.len() as u64);
            let (kind, rate) = match arrival {
                ArrivalSpec::Constant { rate } => ("constant", Some(rate.per_sec())),
                ArrivalSpec::Poisson { rate } => ("poisson", Some(rate.per_sec())),
                ArrivalSpec::Gamma { rate, .. } => ("gamma", Some(rate.per_sec())),
                ArrivalSpec::Concurrency { .. } => ("concurrency", None),
            };
            p.arrival = kind.into();
            p.rate_per_s = rate;
        }
        Load::Closed { clients } => {
            p.arrival = "concurrency".into();
            p.clients = Some(*clients);
        }
    }
    p
}

fn planned_total(stage: &StagePlan) -> Option<u64> {
    match &stage.load {
        Load::Open { offsets_ns, .. } => Some(offsets_ns.len() as u64),
        Load::Closed { .. } => stage.max_requests,
    }
}

/// Connections to open before the clock starts: the expected concurrency, within reason.
fn pool_warmth(stage: &StagePlan) -> usize {
    match &stage.load {
        Load::Open { offsets_ns, .. } => {
            let secs = offsets_ns.last().map(|n| *n as f64 / 1e9).unwrap_or(0.0);
            let rate = if secs > 0.0 {
                offsets_ns.len() as f64 / secs
            } else {
                1.0
            };
            (rate as usize).clamp(4, 256).min(offsets_ns.len().max(1))
        }
        Load::Closed { clients } => (*clients as usize).min(512),
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
