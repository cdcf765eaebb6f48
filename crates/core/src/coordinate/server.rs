//! The coordinator's server: the barrier (a step is released when every shard has arrived,
//! or its deadline has passed), the clock, the collection of results, the merge and the
//! verdict. One thread with its own runtime; [`Coordinator::wait`] returns once the verdict is
//! out and every shard has fetched it (or the linger time is over). What each request may do
//! is in `handlers.rs`; what a shard's result must be, in `admit.rs`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::sync::watch;

use super::admit::{planned_bound, result_cap};
use super::config::CoordinatorConfig;
use super::error::CoordinateError;
use super::handlers::{self, MAX_SMALL_BODY};
use super::state::{Ledger, Shared};
use super::wire::{Verdict, verdict_of};
use crate::results::Results;

/// How long an interrupted coordinator still serves its verdict.
const INTERRUPTED_LINGER: Duration = Duration::from_secs(5);

/// A running coordinator.
pub struct Coordinator {
    pub addr: SocketAddr,
    /// The most a shard's result may weigh, in bytes ([`result_cap`]).
    pub result_cap: u64,
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
    let cap = result_cap(&cfg.plan);
    let join = std::thread::Builder::new()
        .name("infermeter-coordinator".into())
        .spawn(move || runtime.block_on(run(cfg, std_listener)))
        .map_err(CoordinateError::Runtime)?;
    Ok(Coordinator {
        addr,
        result_cap: cap,
        join,
    })
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
    let run_id: [u8; 8] = rand::random();
    let shared = Arc::new(Shared {
        result_cap: result_cap(&cfg.plan),
        cfg,
        ledger: Mutex::new(Ledger::default()),
        changed,
        run_id: run_id.iter().map(|b| format!("{b:02x}")).collect(),
    });
    let app = Router::new()
        .route("/v1/time", get(handlers::time))
        .route("/v1/barrier", post(handlers::barrier))
        .route("/v1/results", post(handlers::results))
        .route("/v1/verdict", get(handlers::verdict))
        .route("/v1/status", get(handlers::status))
        // A result is read by its handler, within the plan's cap; everything else is small.
        .layer(DefaultBodyLimit::max(MAX_SMALL_BODY))
        // Before any body is read: a caller without the token gets nothing else.
        .layer(axum::middleware::from_fn_with_state(
            shared.clone(),
            handlers::authorize,
        ))
        .with_state(shared.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
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

/// When to stop waiting for results: `None` to wait for a change; `Some(now)` or earlier when
/// it is time to merge.
fn merge_deadline(sh: &Shared) -> Result<Option<Instant>, ()> {
    let cfg = &sh.cfg;
    let l = sh.ledger();
    if l.results.len() as u32 >= cfg.shards {
        return Err(());
    }
    let after_first = l.first_result.map(|t| t + cfg.wait);
    // Nothing since the last release: it is over once its stage's planned end (and the wait)
    // has passed without a shard arriving anywhere.
    let idle = match (l.last_release, l.activity) {
        (Some((step, at)), None) => sh
            .step_stage(step)
            .and_then(planned_bound)
            .map(|b| at + cfg.lead + b + cfg.wait),
        _ => None,
    };
    let deadline = [after_first, idle].into_iter().flatten().min();
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Err(());
    }
    Ok(deadline)
}

/// Waits for every result (or the deadline, or the interrupt), merges, publishes the verdict,
/// and lingers until every shard that sent a result has fetched it.
async fn supervise(sh: &Arc<Shared>) -> Result<CoordinatorOutcome, CoordinateError> {
    let cfg = &sh.cfg;
    let mut rx = sh.changed.subscribe();
    while let Ok(deadline) = merge_deadline(sh) {
        tokio::select! {
            _ = rx.changed() => {}
            _ = cfg.interrupt.cancelled() => break,
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
    }
    let (merged, files, verdict) = merge_now(sh)?;
    sh.ledger().verdict = Some(verdict.clone());
    sh.notify();
    let linger = if cfg.interrupt.is_cancelled() {
        cfg.linger.min(INTERRUPTED_LINGER)
    } else {
        cfg.linger
    };
    let linger_until = Instant::now() + linger;
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

/// The results that have come, merged and written; the verdict every shard hears.
fn merge_now(sh: &Shared) -> Result<(Option<Results>, Vec<PathBuf>, Verdict), CoordinateError> {
    let cfg = &sh.cfg;
    let inputs: Vec<(String, Results)> = {
        let l = sh.ledger();
        l.results
            .iter()
            .map(|(i, a)| (format!("shard {i}"), a.results.clone()))
            .collect()
    };
    let failed = |error: String, missing: Vec<u32>| Verdict {
        outcome: crate::sla::SlaOutcome::Inconclusive,
        missing,
        interrupted: true,
        error: Some(error),
        failed: 0,
        undecided: 0,
        untrusted: 0,
        results: None,
        run_id: Some(sh.run_id.clone()),
        plan_hash: Some(cfg.plan.hash.clone()),
        merged: Vec::new(),
        your_result: None,
        not_qualified: None,
    };
    if inputs.is_empty() {
        let verdict = failed("no shard sent a result".into(), (0..cfg.shards).collect());
        return Ok((None, Vec::new(), verdict));
    }
    let opts = crate::merge::MergeOptions {
        allow_missing: true,
        ..cfg.merge.clone()
    };
    match crate::merge::merge(inputs, &opts) {
        Ok(merged) => {
            let files = crate::report::write_all(&merged, &cfg.out_dir, &cfg.write)
                .map_err(CoordinateError::Write)?;
            let written = files.first().map(|p| p.display().to_string());
            let mut verdict = verdict_of(&merged, written);
            verdict.run_id = Some(sh.run_id.clone());
            Ok((Some(merged), files, verdict))
        }
        Err(e) => Ok((None, Vec::new(), failed(e.to_string(), Vec::new()))),
    }
}
