//! The coordinator's server: the barrier (a step is released when every shard has arrived,
//! or its deadline has passed), the clock, the collection of results, the merge and the
//! verdict. One thread with its own runtime; [`Coordinator::wait`] returns once the verdict is
//! out and every shard has fetched it (or the linger time is over).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::sync::watch;

use super::config::CoordinatorConfig;
use super::error::CoordinateError;
use super::wire::{Arrive, Release, Status, Time, Verdict, verdict_of};
use crate::plan::{Load, StagePlan};
use crate::results::Results;

/// A running coordinator.
pub struct Coordinator {
    pub addr: std::net::SocketAddr,
    join: std::thread::JoinHandle<Result<CoordinatorOutcome, CoordinateError>>,
}

/// What the coordinator ends with.
#[derive(Debug)]
pub struct CoordinatorOutcome {
    /// The merged result; `None` when no shard sent one.
    pub results: Option<Results>,
    pub verdict: Verdict,
    /// The files written, results.json first.
    pub files: Vec<PathBuf>,
}

impl Coordinator {
    /// Blocks until the run is merged and its verdict served.
    pub fn wait(self) -> Result<CoordinatorOutcome, CoordinateError> {
        self.join.join().map_err(|_| CoordinateError::Panicked)?
    }
}

/// Binds `cfg.listen` and serves the run on a thread of its own.
pub fn serve(cfg: CoordinatorConfig) -> Result<Coordinator, CoordinateError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("infermeter-coordinator")
        .build()
        .map_err(CoordinateError::Runtime)?;
    let std_listener =
        std::net::TcpListener::bind(cfg.listen).map_err(|source| CoordinateError::Bind {
            addr: cfg.listen,
            source,
        })?;
    let bind_err = |source| CoordinateError::Bind {
        addr: cfg.listen,
        source,
    };
    std_listener.set_nonblocking(true).map_err(bind_err)?;
    let addr = std_listener.local_addr().map_err(bind_err)?;
    let join = std::thread::Builder::new()
        .name("infermeter-coordinator".into())
        .spawn(move || runtime.block_on(run(cfg, std_listener)))
        .map_err(CoordinateError::Runtime)?;
    Ok(Coordinator { addr, join })
}

struct Step {
    first: Instant,
    arrived: BTreeSet<u32>,
    release: Option<Release>,
}

#[derive(Default)]
struct Ledger {
    steps: BTreeMap<u32, Step>,
    /// The latest release: its step and when.
    last_release: Option<(u32, Instant)>,
    results: BTreeMap<u32, Results>,
    first_result: Option<Instant>,
    /// Anything a shard did since the last release (an arrival or a result).
    activity: Option<Instant>,
    verdict: Option<Verdict>,
    fetched: BTreeSet<u32>,
}

struct Shared {
    cfg: CoordinatorConfig,
    ledger: Mutex<Ledger>,
    changed: watch::Sender<u64>,
}

impl Shared {
    fn notify(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        // A handler that panicked mid-update leaves plain counters; keep serving.
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Steps of the plan in order (warm-up, then each stage's rounds), as shards number them.
    fn step_stage(&self, step: u32) -> Option<&StagePlan> {
        let plan = &self.cfg.plan;
        plan.warmup
            .iter()
            .chain(
                plan.stages
                    .iter()
                    .flat_map(|s| std::iter::repeat_n(s, s.rounds.max(1) as usize)),
            )
            .nth(step as usize)
    }
}

fn unix_now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}

/// How long a stage can take: its planned sending span plus its drain time; `None` for a
/// closed loop bounded by a request count only.
fn planned_bound(stage: &StagePlan) -> Option<Duration> {
    let sending = match (&stage.load, stage.duration) {
        (_, Some(d)) => d.as_std(),
        (Load::Open { schedule, .. }, None) => Duration::from_nanos(schedule.last_ns()),
        _ => return None,
    };
    Some(sending + stage.drain_timeout.as_std())
}

async fn run(
    cfg: CoordinatorConfig,
    listener: std::net::TcpListener,
) -> Result<CoordinatorOutcome, CoordinateError> {
    let listener =
        tokio::net::TcpListener::from_std(listener).map_err(|source| CoordinateError::Bind {
            addr: cfg.listen,
            source,
        })?;
    let (changed, _) = watch::channel(0u64);
    let shared = Arc::new(Shared {
        cfg,
        ledger: Mutex::new(Ledger::default()),
        changed,
    });
    let app = Router::new()
        .route("/v1/time", get(time))
        .route("/v1/barrier", post(barrier))
        .route("/v1/results", post(results))
        .route("/v1/verdict", get(verdict))
        .route("/v1/status", get(status))
        .layer(DefaultBodyLimit::max(256 << 20))
        .with_state(shared.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
    });
    let outcome = supervise(&shared).await;
    let _ = stop.send(());
    let _ = server.await;
    outcome
}

/// Waits for every result (or the deadline), merges, publishes the verdict, and lingers until
/// every shard that sent a result has fetched it.
async fn supervise(sh: &Arc<Shared>) -> Result<CoordinatorOutcome, CoordinateError> {
    let cfg = &sh.cfg;
    let mut rx = sh.changed.subscribe();
    loop {
        let deadline = {
            let l = sh.ledger();
            if l.results.len() as u32 >= cfg.shards {
                break;
            }
            let after_first = l.first_result.map(|t| t + cfg.wait);
            // Nothing since the last release: it is over once its stage's planned end (and
            // the wait) has passed without a shard arriving anywhere.
            let idle = match (l.last_release, l.activity) {
                (Some((step, at)), None) => sh
                    .step_stage(step)
                    .and_then(planned_bound)
                    .map(|b| at + cfg.lead + b + cfg.wait),
                _ => None,
            };
            let deadline = [after_first, idle].into_iter().flatten().min();
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            deadline
        };
        tokio::select! {
            _ = rx.changed() => {}
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    }
    let inputs: Vec<(String, Results)> = {
        let l = sh.ledger();
        l.results
            .iter()
            .map(|(i, r)| (format!("shard {i}"), r.clone()))
            .collect()
    };
    let (merged, files, verdict) = if inputs.is_empty() {
        let verdict = Verdict {
            outcome: crate::sla::SlaOutcome::Inconclusive,
            missing: (0..cfg.shards).collect(),
            interrupted: true,
            error: Some("no shard sent a result".into()),
            failed: 0,
            undecided: 0,
            untrusted: 0,
            results: None,
        };
        (None, Vec::new(), verdict)
    } else {
        let opts = crate::merge::MergeOptions {
            allow_missing: true,
            ..cfg.merge.clone()
        };
        match crate::merge::merge(inputs, &opts) {
            Ok(merged) => {
                let files = crate::report::write_all(&merged, &cfg.out_dir, &cfg.write)
                    .map_err(CoordinateError::Write)?;
                let written = files.first().map(|p| p.display().to_string());
                let verdict = verdict_of(&merged, written);
                (Some(merged), files, verdict)
            }
            Err(e) => {
                let verdict = Verdict {
                    outcome: crate::sla::SlaOutcome::Inconclusive,
                    missing: Vec::new(),
                    interrupted: true,
                    error: Some(e.to_string()),
                    failed: 0,
                    undecided: 0,
                    untrusted: 0,
                    results: None,
                };
                (None, Vec::new(), verdict)
            }
        }
    };
    sh.ledger().verdict = Some(verdict.clone());
    sh.notify();
    let linger_until = Instant::now() + cfg.linger;
    loop {
        {
            let l = sh.ledger();
            if l.results.keys().all(|i| l.fetched.contains(i)) || Instant::now() >= linger_until {
                break;
            }
        }
        tokio::select! {
            _ = rx.changed() => {}
            _ = tokio::time::sleep_until(linger_until.into()) => {}
        }
    }
    Ok(CoordinatorOutcome {
        results: merged,
        verdict,
        files,
    })
}

async fn time() -> Json<Time> {
    Json(Time {
        unix_ns: unix_now_ns(),
    })
}

fn refuse(status: StatusCode, why: String) -> Response {
    (status, why).into_response()
}

async fn barrier(State(sh): State<Arc<Shared>>, Json(a): Json<Arrive>) -> Response {
    let cfg = &sh.cfg;
    if a.plan_hash != cfg.plan.hash {
        return refuse(
            StatusCode::CONFLICT,
            format!(
                "shard {} runs plan {}, the coordinator plan {}: give every shard and the \
                 coordinator the same scenario, params and seed",
                a.shard, a.plan_hash, cfg.plan.hash
            ),
        );
    }
    if a.shard >= cfg.shards {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "shard {} of a {}-shard run does not exist",
                a.shard, cfg.shards
            ),
        );
    }
    let mut rx = sh.changed.subscribe();
    {
        let mut l = sh.ledger();
        let now = Instant::now();
        l.activity = Some(now);
        l.steps
            .entry(a.step)
            .or_insert_with(|| Step {
                first: now,
                arrived: BTreeSet::new(),
                release: None,
            })
            .arrived
            .insert(a.shard);
    }
    sh.notify();
    let wait = if a.step == 0 {
        cfg.start_wait
    } else {
        cfg.wait
    };
    loop {
        let deadline = {
            let mut guard = sh.ledger();
            let l = &mut *guard;
            let Some(step) = l.steps.get_mut(&a.step) else {
                return refuse(StatusCode::INTERNAL_SERVER_ERROR, "step lost".into());
            };
            if let Some(r) = &step.release {
                return Json(r.clone()).into_response();
            }
            let deadline = step.first + wait;
            if step.arrived.len() as u32 >= cfg.shards || Instant::now() >= deadline {
                let missing = (0..cfg.shards)
                    .filter(|i| !step.arrived.contains(i))
                    .collect();
                let lead = cfg.lead.as_nanos().min(i64::MAX as u128) as i64;
                let r = Release {
                    start_unix_ns: unix_now_ns().saturating_add(lead),
                    missing,
                };
                step.release = Some(r.clone());
                l.last_release = Some((a.step, Instant::now()));
                l.activity = None;
                drop(guard);
                sh.notify();
                return Json(r).into_response();
            }
            deadline
        };
        tokio::select! {
            _ = rx.changed() => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
}

async fn results(State(sh): State<Arc<Shared>>, Json(r): Json<Results>) -> Response {
    let cfg = &sh.cfg;
    if r.plan_hash != cfg.plan.hash {
        return refuse(
            StatusCode::CONFLICT,
            format!(
                "a result of plan {}, the coordinator runs plan {}",
                r.plan_hash, cfg.plan.hash
            ),
        );
    }
    let Some(index) = r
        .shards
        .as_ref()
        .filter(|s| s.count == cfg.shards)
        .and_then(|s| s.shards.first())
        .map(|s| s.index)
        .filter(|i| *i < cfg.shards)
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!("not the result of a shard of this {}-shard run", cfg.shards),
        );
    };
    {
        let mut l = sh.ledger();
        if l.verdict.is_some() {
            return refuse(
                StatusCode::GONE,
                format!("shard {index}: too late, the run was merged without it"),
            );
        }
        let now = Instant::now();
        l.first_result.get_or_insert(now);
        l.activity = Some(now);
        l.results.insert(index, r);
    }
    sh.notify();
    StatusCode::NO_CONTENT.into_response()
}

#[derive(serde::Deserialize)]
struct Who {
    shard: Option<u32>,
}

async fn verdict(State(sh): State<Arc<Shared>>, Query(who): Query<Who>) -> Response {
    let mut rx = sh.changed.subscribe();
    loop {
        {
            let mut l = sh.ledger();
            if let Some(v) = l.verdict.clone() {
                if let Some(i) = who.shard {
                    l.fetched.insert(i);
                }
                drop(l);
                sh.notify();
                return Json(v).into_response();
            }
        }
        if rx.changed().await.is_err() {
            return refuse(StatusCode::SERVICE_UNAVAILABLE, "shutting down".into());
        }
    }
}

async fn status(State(sh): State<Arc<Shared>>) -> Json<Status> {
    let l = sh.ledger();
    Json(Status {
        shards: sh.cfg.shards,
        released: l
            .steps
            .iter()
            .filter(|(_, s)| s.release.is_some())
            .map(|(k, s)| (*k, s.arrived.iter().copied().collect()))
            .collect(),
        results: l.results.keys().copied().collect(),
        done: l.verdict.is_some(),
    })
}
