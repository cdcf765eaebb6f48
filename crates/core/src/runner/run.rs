//! The run itself: target set-up (simulator, tokenizer, prompts, hooks, client, model), then
//! warm-up and each stage in order (see `stage.rs`), with the caller deciding after each stage
//! whether to go on.

use std::sync::Arc;
use std::time::SystemTime;

use super::barrier::Unsynchronised;
use super::cpu::CpuClock;
use super::error::{RunError, RunProblem};
use super::fold::RowSink;
use super::options::{RunOptions, StageDecision};
use super::route::{Route, Router, make_router, preflight_all};
use super::stage::{StageCall, StageRunner};
use super::target::InProcessSim;
use super::traces::Traces;
use crate::client::{BodyTemplate, probe_server};
use crate::dataset::Tokenizer;
use crate::hooks::Hooks;
use crate::metrics::{SearchSummary, StageSummary, merge_rounds};
use crate::plan::{EndpointPlan, Load, Plan};
use crate::server_info::ServerInfo;
use crate::sla::Abort;
use crate::telemetry::{TelemetryHandle, TelemetryReport};

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
    /// One per rate-search stage that ran (its probes are in `stages`).
    pub searches: Vec<SearchSummary>,
    /// Why the run ended.
    pub stop: Stop,
    /// What went wrong without stopping the run (a failing requests.jsonl, say).
    pub problems: Vec<RunProblem>,
    /// Series and per-stage summaries when the plan has a `telemetry` block.
    pub telemetry: Option<TelemetryReport>,
    /// What the target said about itself (asked alongside the preflight, never waited for:
    /// `None` when it had not answered by the end of the run).
    pub server: Option<ServerInfo>,
    /// A shard of a distributed run: how far each step started from its agreed instant.
    pub starts: Vec<super::StepStart>,
    /// `cache-salt`: the run's salt seed (hex), from which every stage round's salt is drawn.
    pub cache_salt: Option<String>,
    /// `network { … }`: what the shaping proxy carried and how late it delivered.
    pub network: Option<crate::metrics::NetworkSummary>,
}

/// Why a run that started ended.
#[derive(Debug, Clone)]
pub enum Stop {
    /// Every stage ran.
    Completed,
    /// The interrupt was cancelled (Ctrl-C or a signal).
    Interrupted,
    /// The caller's decision (an `abort-on-fail` assertion, live or after a stage) stopped it.
    Aborted(Abort),
    /// A shard could not agree on a step's start with the others (the coordinator is gone).
    Unsynchronised(Unsynchronised),
}

/// Runs the whole plan. `after_stage` sees each finished stage's summary and may stop the run.
pub async fn run(
    plan: Arc<Plan>,
    opts: RunOptions,
    after_stage: &mut (dyn FnMut(&StageSummary) -> StageDecision + Send),
) -> Result<RunOutput, RunError> {
    let started_at = SystemTime::now();
    let Started {
        sim,
        base_urls,
        table,
        endpoint,
        default_model,
    } = start_target(&plan)?;
    let (base_urls, shaping) = super::netem::Shaping::start(&plan, base_urls)?;
    let tokenizer = Arc::new(Tokenizer::load(&plan.tokenizer, &opts.base_dir)?);
    let factory = Arc::new(plan.prompt_factory_with((*tokenizer).clone())?);
    let hooks = compile_hooks(&plan)?;
    let router = make_router(&plan, base_urls, table, &tokenizer)?;
    let Route { client, base_url } = router.first();
    // The server's self-description, asked while the preflight runs; collected at the end
    // only if it has answered by then, so it can neither fail nor delay the run. On
    // connections of its own, so none of them is reused for the preflight or a request.
    let probe = spawn_probe(client, base_url);
    let request = &plan.target.request;
    let known_model = request.model.as_deref().or(default_model.as_deref());
    let mut out = RunOutput::starting(endpoint, known_model, &tokenizer, started_at);
    let found = preflight_all(
        &router,
        known_model,
        request.api,
        request.timeout,
        &opts.interrupt,
    )
    .await
    .map_err(|e| super::netem::unproxied(shaping.as_ref(), e))?;
    // Then the server's tokenizer against ours. Interrupted before anything was measured: an
    // interrupted run with no stage.
    let tokenizer_note = super::tokens::preflight(client, &plan, &factory, &opts).await;
    let (Some((model, models_answer)), Some(tokenizer_note)) = (found, tokenizer_note) else {
        return Ok(out);
    };
    out.model = model.clone();
    let template = Arc::new(BodyTemplate {
        model,
        ..body_template(&plan)
    });
    let (mut sink, answers) = row_files(&opts)?;
    let cpu = CpuClock::new(not_the_clients(sim.as_ref(), shaping.as_ref()));
    // Drawn afresh for each run: a rerun of the same plan must not meet its own prompts in
    // the server's cache.
    let salt_seed = plan.target.run.cache_salt.then(rand::random::<u64>);
    let runner = StageRunner {
        traces: Traces::start(&plan, &template.model, &urls_of(&router)).await,
        plan: plan.clone(),
        router: router.clone(),
        template,
        factory,
        hooks,
        cpu,
        opts: &opts,
        starts: std::sync::Mutex::new(Vec::new()),
        salt_seed,
        reset: std::sync::Mutex::new(None),
        tokenizer_note,
        answers,
        shard_routers: shard_routers(&opts, &router),
    };
    out.cache_salt = salt_seed.map(|s| format!("{s:016x}"));
    // NVML start-up and a probe scrape per endpoint: a few seconds at most, but an interrupt
    // need not wait for them.
    let telemetry = tokio::select! {
        biased;
        _ = opts.interrupt.cancelled() => return Ok(out),
        t = super::telemetry::start(
            plan.telemetry.as_ref(),
            sim.as_ref().map(|s| s.base_url.as_str()),
        ) => t?,
    };
    out.stop = Stop::Completed;
    let mut run = Steps {
        runner: &runner,
        telemetry: telemetry.as_ref(),
        sink: &mut sink,
        out: &mut out,
        next: 0,
    };
    run.all(after_stage).await;
    wrap_up(&mut out, runner, sink, telemetry).await;
    out.server = Some(collect_server([models_answer, probe]).await);
    out.network = shaping.map(super::netem::Shaping::finish);
    drop(sim);
    Ok(out)
}

/// Asks the server to describe itself, beside the run (see `probe_server`).
fn spawn_probe(
    client: &crate::client::Client,
    base_url: &str,
) -> tokio::task::JoinHandle<ServerInfo> {
    let http = client.unpooled().clone();
    let url = base_url.to_string();
    tokio::spawn(async move { probe_server(&http, &url, PROBE_TIMEOUT).await })
}

/// The threads of the run whose CPU time is not the client's: the simulator's, the proxy's.
fn not_the_clients(
    sim: Option<&InProcessSim>,
    shaping: Option<&super::netem::Shaping>,
) -> Vec<super::cpu::ThreadId> {
    let sim = sim.and_then(|s| s.thread);
    let proxy = shaping.and_then(super::netem::Shaping::thread);
    sim.into_iter().chain(proxy).collect()
}

/// The target the run measures: the in-process simulator, or its URLs.
struct Started {
    sim: Option<InProcessSim>,
    /// At least one.
    base_urls: Vec<String>,
    /// The route over them, when there are several.
    table: Option<crate::protocol::Routes>,
    /// As results and reports show it.
    endpoint: String,
    /// The simulator's model, when the scenario names none.
    default_model: Option<String>,
}

fn start_target(plan: &Plan) -> Result<Started, RunError> {
    Ok(match &plan.target.endpoint {
        EndpointPlan::Sim(cfg) => {
            let sim = InProcessSim::start((**cfg).clone())?;
            Started {
                base_urls: vec![sim.base_url.clone()],
                table: None,
                sim: Some(sim),
                endpoint: "sim".to_string(),
                default_model: Some(cfg.model.clone()),
            }
        }
        // Shown in results and reports: never with its credentials.
        EndpointPlan::Url(url) => Started {
            sim: None,
            base_urls: vec![url.clone()],
            table: None,
            endpoint: crate::redact::secrets(url).into_owned(),
            default_model: None,
        },
        EndpointPlan::Urls(routes) => Started {
            sim: None,
            base_urls: routes.urls.iter().map(|u| u.url.clone()).collect(),
            endpoint: routes.label(),
            table: Some(routes.clone()),
            default_model: None,
        },
    })
}

/// Every request's body but its model, which the preflight settles.
fn body_template(plan: &Plan) -> BodyTemplate {
    let request = &plan.target.request;
    BodyTemplate {
        api: request.api,
        model: String::new(),
        ignore_eos: request.ignore_eos,
        reasoning_effort: request.reasoning_effort,
        extra: request.extra_body.clone(),
        stream: request.stream,
    }
}

impl RunOutput {
    /// A run that has measured nothing yet: interrupted, unless it goes on.
    fn starting(
        endpoint: String,
        model: Option<&str>,
        tokenizer: &Tokenizer,
        started_at: SystemTime,
    ) -> RunOutput {
        RunOutput {
            endpoint,
            model: model.unwrap_or_default().to_string(),
            tokenizer: tokenizer.name().to_string(),
            started_at,
            warmup: None,
            stages: Vec::new(),
            searches: Vec::new(),
            stop: Stop::Interrupted,
            problems: Vec::new(),
            telemetry: None,
            server: None,
            starts: Vec::new(),
            cache_salt: None,
            network: None,
        }
    }
}

/// The run's steps in plan order, the same on every shard: warm-up, then each stage's
/// rounds (a search's probes are its own).
struct Steps<'a, 'r> {
    runner: &'a StageRunner<'r>,
    telemetry: Option<&'a TelemetryHandle>,
    sink: &'a mut Option<RowSink>,
    out: &'a mut RunOutput,
    /// The next step's number, for the barrier.
    next: u32,
}

impl Steps<'_, '_> {
    async fn all(&mut self, after_stage: &mut (dyn FnMut(&StageSummary) -> StageDecision + Send)) {
        let plan = self.runner.plan.clone();
        let interrupt = &self.runner.opts.interrupt;
        if let Some(w) = plan.warmup.as_ref().filter(|_| !interrupt.is_cancelled()) {
            self.warm_up(&plan, w).await;
        }
        for stage in &plan.stages {
            if interrupt.is_cancelled() || matches!(self.out.stop, Stop::Unsynchronised(_)) {
                break;
            }
            if !self.switch_server(&plan, stage).await {
                break;
            }
            if let Some(t) = self.telemetry {
                t.stage_started_read(&stage.name).await;
            }
            if let Load::Search(spec) = &stage.load {
                let s = self
                    .runner
                    .run_search(stage, spec, self.sink, after_stage)
                    .await;
                self.ended(&stage.name);
                self.out.stages.extend(s.probes);
                self.out.searches.push(s.summary);
                self.out.problems.extend(s.problems);
                continue;
            }
            if !self.stage(&plan, stage, after_stage).await {
                break;
            }
        }
    }

    /// The stage's server configuration running (the warm-up again after a restart, so each
    /// configuration is measured warmed up alike); whether the run goes on.
    async fn switch_server(&mut self, plan: &Plan, stage: &crate::plan::StagePlan) -> bool {
        let Some(switch) = &self.runner.opts.server_switch else {
            return true;
        };
        match switch.before(stage).await {
            super::Switched::Kept => true,
            super::Switched::Failed => false,
            super::Switched::Restarted => {
                if let Some(w) = &plan.warmup {
                    self.warm_up(plan, w).await;
                }
                !self.runner.opts.interrupt.is_cancelled()
            }
        }
    }

    async fn warm_up(&mut self, plan: &Plan, w: &crate::plan::StagePlan) {
        if let Some(t) = self.telemetry {
            t.stage_started_read(&w.name).await;
        }
        let watch = plan
            .warmup_until
            .as_ref()
            .map(|until| super::warmup::Watch {
                until,
                telemetry: self.telemetry,
            });
        match self.agree(&w.name).await {
            Ok(start) => {
                let call = StageCall {
                    start,
                    ..StageCall::default()
                };
                let (summary, problem, _) = self
                    .runner
                    .run_stage(w, 0, self.sink, watch.as_ref(), call)
                    .await;
                // After a restart the warm-up runs again; the first is the one recorded.
                self.out.warmup.get_or_insert(summary);
                self.out.problems.extend(problem);
            }
            Err(why) => self.out.stop = Stop::Unsynchronised(why),
        }
        self.ended(&w.name);
    }

    /// Runs a stage's rounds and folds them into its summary; whether the run goes on.
    async fn stage(
        &mut self,
        plan: &Plan,
        stage: &crate::plan::StagePlan,
        after_stage: &mut (dyn FnMut(&StageSummary) -> StageDecision + Send),
    ) -> bool {
        let (rounds, live_abort) = self.rounds(plan, stage).await;
        if rounds.is_empty() {
            return false;
        }
        self.ended(&stage.name);
        let mut summary = merge_rounds(rounds, self.runner.opts.validity.confidence);
        if let Some(planned) = stage.profile.clone() {
            let mut point = crate::metrics::ProfilePoint::planned(planned);
            point.assess(&summary);
            summary.profile = Some(point);
        }
        let decision = match live_abort {
            // Stopped while it ran: the live check's verdict stands.
            Some(abort) => StageDecision::Abort(abort),
            None => after_stage(&summary),
        };
        self.out.stages.push(summary);
        if let StageDecision::Abort(why) = decision {
            self.out.stop = Stop::Aborted(why);
            return false;
        }
        true
    }

    /// Rounds replay the same requests; the stage's summary folds them (medians, intervals
    /// across rounds). An interrupt keeps the rounds that ran; a live abort ends them.
    async fn rounds(
        &mut self,
        plan: &Plan,
        stage: &crate::plan::StagePlan,
    ) -> (Vec<StageSummary>, Option<Abort>) {
        let mut rounds = Vec::with_capacity(stage.rounds as usize);
        for round in 0..stage.rounds.max(1) {
            if round > 0 && self.runner.opts.interrupt.is_cancelled() {
                break;
            }
            let start = match self.agree(&stage.name).await {
                Ok(start) => start,
                Err(why) => {
                    self.out.stop = Stop::Unsynchronised(why);
                    break;
                }
            };
            let call = StageCall {
                position: sweep_position(plan, stage),
                live: true,
                start,
            };
            let (summary, problem, aborted) = self
                .runner
                .run_stage(stage, round, self.sink, None, call)
                .await;
            self.out.problems.extend(problem);
            rounds.push(summary);
            if aborted.is_some() {
                return (rounds, aborted);
            }
        }
        (rounds, None)
    }

    /// The next step's agreed start with the other shards (none when the run is not
    /// distributed). A signal ends the wait at once, whatever the barrier does.
    async fn agree(
        &mut self,
        name: &str,
    ) -> Result<Option<(u32, super::AgreedStart)>, Unsynchronised> {
        let step = self.next;
        self.next += 1;
        let opts = self.runner.opts;
        let Some(b) = &opts.barrier else {
            return Ok(None);
        };
        let agreed = tokio::select! {
            biased;
            _ = opts.interrupt.cancelled() => Err(super::BarrierError::new(super::Interrupted)),
            r = b.wait(step, name, &self.runner.plan.hash) => r,
        };
        agreed
            .map(|a| Some((step, a)))
            .map_err(|cause| Unsynchronised {
                stage: name.to_string(),
                step,
                cause,
            })
    }

    /// A stage's start is marked where it is awaited (`stage_started_read`): the stage waits
    /// for the sources' starting points.
    fn ended(&self, name: &str) {
        if let Some(t) = self.telemetry {
            t.stage_ended(name);
        }
    }
}

/// After the last step: the stop's final word, the shard's starts, `requests.jsonl` put in
/// place, telemetry finished and laid over the stages, then the server's spans (which are
/// better than its histograms).
async fn wrap_up(
    out: &mut RunOutput,
    runner: StageRunner<'_>,
    sink: Option<RowSink>,
    telemetry: Option<TelemetryHandle>,
) {
    let opts = runner.opts;
    if opts.interrupt.is_cancelled() {
        out.stop = Stop::Interrupted;
    }
    out.starts = runner.starts.lock().map(|s| s.clone()).unwrap_or_default();
    if let Some(w) = sink
        && let Some(path) = opts.requests_jsonl.clone()
        && let Err(source) = super::temp::persist_temp(w, &path)
    {
        out.problems
            .push(RunProblem::RequestsJsonl { path, source });
    }
    // Every request task (and with it every other holder of the sink) is done by now.
    if let Some(answers) = runner.answers.and_then(Arc::into_inner)
        && let Err((path, source)) = answers.finish()
    {
        out.problems
            .push(RunProblem::RequestsJsonl { path, source });
    }
    if let Some(t) = telemetry {
        let report = t.finish().await;
        for s in out.warmup.iter_mut().chain(out.stages.iter_mut()) {
            super::telemetry::flag_throttled(&report, s);
            super::telemetry::attribute(&report, s);
            super::telemetry::check_spec(&report, s);
        }
        out.telemetry = Some(report);
    }
    if let Some(t) = runner.traces {
        let mut summaries: Vec<&mut StageSummary> =
            out.warmup.iter_mut().chain(out.stages.iter_mut()).collect();
        let warnings = t.finish(&mut summaries).await;
        if !warnings.is_empty() {
            let report = out.telemetry.get_or_insert_with(TelemetryReport::default);
            report.warnings.extend(warnings);
        }
    }
}

/// The run's row files, as temporary files until its end: `requests.jsonl` and
/// `answers.jsonl`, each when asked for.
fn row_files(
    opts: &RunOptions,
) -> Result<(Option<RowSink>, Option<Arc<super::answers::AnswerSink>>), RunError> {
    let rows = opts
        .requests_jsonl
        .as_deref()
        .map(|p| super::temp::temp_beside(p, ".requests-"))
        .transpose()?;
    let answers = opts
        .answers_jsonl
        .as_deref()
        .map(super::answers::AnswerSink::create)
        .transpose()?;
    Ok((rows.map(RowSink::new), answers.map(Arc::new)))
}

/// Whatever of the self-description has arrived by now; the rest is dropped.
async fn collect_server(tasks: [tokio::task::JoinHandle<ServerInfo>; 2]) -> ServerInfo {
    let mut server = ServerInfo::default();
    for task in tasks {
        if task.is_finished() {
            if let Ok(info) = task.await {
                server = server.merge(info);
            }
        } else {
            task.abort();
        }
    }
    server
}

/// Where a sweep point stands among its group's points (1-based), for the progress line.
fn sweep_position(plan: &Plan, stage: &crate::plan::StagePlan) -> Option<(usize, usize)> {
    let group = &stage.profile.as_ref()?.group;
    let points: Vec<&str> = plan
        .stages
        .iter()
        .filter(|s| s.profile.as_ref().is_some_and(|p| &p.group == group))
        .map(|s| s.name.as_str())
        .collect();
    let i = points.iter().position(|n| *n == stage.name)?;
    Some((i + 1, points.len()))
}

/// How long each self-description endpoint may take to answer.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Each data set's hooks, compiled once for the run (the plan compiler checked them already;
/// a script that fails now stops the run rather than failing every request).
fn compile_hooks(plan: &Plan) -> Result<Vec<Option<Arc<Hooks>>>, RunError> {
    plan.datasets
        .iter()
        .map(|d| {
            d.hooks
                .as_ref()
                .map(|h| {
                    Hooks::compile(&h.source, &h.path)
                        .map(Arc::new)
                        .map_err(|source| RunError::Hooks {
                            dataset: d.name.clone(),
                            source,
                        })
                })
                .transpose()
        })
        .collect()
}

/// The target's base URLs, in the order requests' `url` indices name them.
fn urls_of(router: &super::route::Router) -> Vec<&str> {
    router.all().iter().map(|r| r.base_url.as_str()).collect()
}

/// With shards (`--cpus N`, N > 1), each one's routes with pools of its own, made once for the
/// run: a shard's pooled connections outlive its stages.
fn shard_routers(opts: &RunOptions, router: &Router) -> Vec<Arc<Router>> {
    opts.shards.as_ref().map_or_else(Vec::new, |s| {
        (0..s.len())
            .map(|_| Arc::new(router.with_own_pools()))
            .collect()
    })
}
