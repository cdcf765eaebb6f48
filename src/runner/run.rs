//! The run itself: target set-up (simulator, tokenizer, prompts, client, model), then warm-up
//! and each stage in order (see `stage.rs`), with the caller deciding after each stage whether
//! to go on.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_util::sync::CancellationToken;

use super::cpu::CpuClock;
use super::progress::ProgressMode;
use super::stage::{StageRef, StageRunner, TokenizerCounter};
use super::target::{InProcessSim, preflight};
use crate::client::{BodyTemplate, Client, ClientConfig, ClientError};
use crate::dataset::{PromptFactory, Tokenizer};
use crate::metrics::{SearchSummary, StageSummary, ValidityRules};
use crate::plan::{EndpointPlan, Load, Plan};

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
    /// Idle CPUs were kept polling for the run (`--poll-idle`, held by the caller); recorded
    /// in every stage's client health.
    pub poll_idle: bool,
}

/// What the caller decides after each stage (an `abort-on-fail` assertion may stop the run).
pub enum StageDecision {
    Continue,
    Abort(String),
    /// The stage failed these SLAs but the run goes on: a search probe's "fail" verdict.
    Failed(Vec<String>),
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
    /// One per rate-search stage that ran (its probes are in `stages`).
    pub searches: Vec<SearchSummary>,
    /// Stopped early by Ctrl-C or an abort.
    pub interrupted: bool,
    /// Why it stopped early, or a problem that did not stop it (a failing requests.jsonl).
    pub error: Option<String>,
    /// Series and per-stage summaries when the plan has a `telemetry` block.
    pub telemetry: Option<crate::telemetry::TelemetryReport>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Target(String),
    #[error("{0}")]
    Dataset(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A required telemetry source is unavailable (or telemetry could not start).
    #[error("{0}")]
    Telemetry(String),
    #[error("failed to create {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
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

    let telemetry = super::telemetry::start(
        plan.telemetry.as_ref(),
        sim.as_ref().map(|s| s.base_url.as_str()),
    )
    .await?;
    let mut out = RunOutput {
        endpoint,
        model,
        tokenizer: tokenizer.name().to_string(),
        started_at,
        warmup: None,
        stages: Vec::new(),
        searches: Vec::new(),
        interrupted: false,
        error: None,
        telemetry: None,
    };
    let mark = |name: &str, started: bool| {
        if let Some(t) = &telemetry {
            if started {
                t.stage_started(name);
            } else {
                t.stage_ended(name);
            }
        }
    };
    if let Some(w) = &plan.warmup {
        mark(&w.name, true);
        let watch = plan
            .warmup_until
            .as_ref()
            .map(|until| super::warmup::Watch {
                until,
                telemetry: telemetry.as_ref(),
            });
        let (summary, err) = runner
            .run_stage_watched(StageRef::Warmup, &mut sink, watch.as_ref())
            .await;
        mark(&w.name, false);
        out.warmup = Some(summary);
        out.error = out.error.or(err);
    }
    for i in 0..plan.stages.len() {
        if opts.interrupt.is_cancelled() {
            break;
        }
        if let Load::Search(spec) = &plan.stages[i].load {
            mark(&plan.stages[i].name, true);
            let s = runner
                .run_search(&plan.stages[i], spec, &mut sink, after_stage)
                .await;
            mark(&plan.stages[i].name, false);
            out.stages.extend(s.probes);
            out.searches.push(s.summary);
            out.error = out.error.or(s.error);
            continue;
        }
        mark(&plan.stages[i].name, true);
        let (mut summary, err) = runner.run_stage(StageRef::Stage(i), &mut sink).await;
        mark(&plan.stages[i].name, false);
        out.error = out.error.or(err);
        if let Some(mut point) = plan.stages[i].profile.clone() {
            point.assess(&summary);
            summary.profile = Some(point);
        }
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
    if let Some(mut w) = sink
        && let Err(e) = w.flush()
    {
        out.error
            .get_or_insert_with(|| format!("failed to write requests.jsonl: {e}"));
    }
    if let Some(t) = telemetry {
        let report = t.finish().await;
        for s in out.warmup.iter_mut().chain(out.stages.iter_mut()) {
            super::telemetry::flag_throttled(&report, s);
        }
        out.telemetry = Some(report);
    }
    drop(sim);
    Ok(out)
}
