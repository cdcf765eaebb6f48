//! The coordinator of a distributed run, and its client: the barrier where shards agree when
//! each step (warm-up, each stage and round) starts, the clock they agree on, and the
//! collection of their results into the merged one (`merge`), whose gate every shard exits
//! with. Served by `infermeter coordinate`, or by shard 0 (`run --coordinator-listen`), the
//! rank-0 pattern of Kubernetes Indexed Jobs.
//!
//! Every wait has a deadline: a step is released [`CoordinatorConfig::wait`] after its first
//! shard arrived even if some never do (they are listed as missing), results are merged that
//! long after the first one came (or after the last stage's planned end), and the merged
//! result then says it is partial.
//!
//! Nobody else can feed it: every call carries the run's [`Token`]; each shard index joins
//! once, from one process of the same plan and shard count; each shard's result is accepted
//! once, read within a cap sized from the plan, checked by the shared validator and against
//! the shard's slice of the plan; and a shard exits with a verdict only when it names the run
//! it joined and the result it sent.
//!
//! Entry points: [`serve`] (the server) and [`Client`] (a shard's side, a
//! [`runner::Barrier`](crate::runner::Barrier)).

mod admit;
mod client;
mod handlers;
mod server;
mod token;
mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use admit::result_cap;
pub use client::{Client, ClientConfig, MAX_LEAD};
pub use server::{Coordinator, CoordinatorOutcome, serve};
pub use token::{MIN_TOKEN_LEN, TOKEN_ENV, Token, TokenError};
pub use wire::{Release, Status, Verdict};

use tokio_util::sync::CancellationToken;

use crate::merge::MergeOptions;
use crate::plan::Plan;
use crate::report::WriteOptions;

/// Told of every request the coordinator refuses (at most the first 50, then a note that
/// the rest are only counted in `/v1/status`), without the token a caller presented.
#[derive(Clone)]
pub struct RefusalLog(Arc<dyn Fn(&Refusal) + Send + Sync>);

impl RefusalLog {
    pub fn new(log: impl Fn(&Refusal) + Send + Sync + 'static) -> Self {
        RefusalLog(Arc::new(log))
    }

    pub(crate) fn tell(&self, refusal: &Refusal) {
        (self.0)(refusal)
    }
}

impl std::fmt::Debug for RefusalLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RefusalLog")
    }
}

/// A request the coordinator refused.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub peer: Option<SocketAddr>,
    /// `POST /v1/results`.
    pub request: String,
    pub status: u16,
    pub why: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let peer = self
            .peer
            .map_or_else(|| "an unknown peer".to_string(), |p| p.to_string());
        write!(
            f,
            "refused {} from {peer} ({}): {}",
            self.request,
            self.status,
            printable(&self.why, 400)
        )
    }
}

/// Text a peer sent (a stage name, an error body), fit for a terminal and a log line: control
/// characters escaped, at most `max` characters.
pub(crate) fn printable(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// How the coordinator runs.
#[derive(Clone)]
pub struct CoordinatorConfig {
    pub listen: SocketAddr,
    pub shards: u32,
    /// Every call must carry it.
    pub token: Token,
    /// The whole plan: its hash (shards of another plan are turned away) and its stages'
    /// planned lengths (how long to wait for results when no shard has sent one).
    pub plan: Arc<Plan>,
    /// Where the merged results.json, report and JUnit go.
    pub out_dir: PathBuf,
    /// How long a step waits for its last shard after its first arrived, and results for the
    /// last shard after the first came.
    pub wait: Duration,
    /// The first step's wait instead: shards start as their machines do (pulling an image).
    pub start_wait: Duration,
    /// A released step starts this long after its release, time enough for every shard to
    /// hear of it and warm its connections.
    pub lead: Duration,
    /// How long the merged verdict stays served for shards that have not fetched it.
    pub linger: Duration,
    pub merge: MergeOptions,
    pub write: WriteOptions,
    /// Cancelled (a signal): merge what has come now, and linger briefly.
    pub interrupt: CancellationToken,
    pub on_refusal: Option<RefusalLog>,
}

impl std::fmt::Debug for CoordinatorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoordinatorConfig")
            .field("listen", &self.listen)
            .field("shards", &self.shards)
            .field("plan", &self.plan.hash)
            .field("out_dir", &self.out_dir)
            .finish_non_exhaustive()
    }
}

impl CoordinatorConfig {
    pub fn new(
        listen: SocketAddr,
        shards: u32,
        plan: Arc<Plan>,
        out_dir: PathBuf,
        token: Token,
    ) -> Self {
        CoordinatorConfig {
            listen,
            shards,
            token,
            plan,
            out_dir,
            wait: Duration::from_secs(60),
            start_wait: Duration::from_secs(600),
            lead: Duration::from_millis(500),
            linger: Duration::from_secs(30),
            merge: MergeOptions::default(),
            write: WriteOptions::default(),
            interrupt: CancellationToken::new(),
            on_refusal: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CoordinateError {
    #[error("the coordinator cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to start the coordinator's runtime")]
    Runtime(#[source] std::io::Error),
    #[error("the coordinator's thread panicked")]
    Panicked,
    #[error("failed to write the merged result")]
    Write(#[source] crate::report::ReportError),
    #[error("the coordinator at {url} {what}")]
    Request {
        url: String,
        what: String,
        #[source]
        source: Option<reqwest::Error>,
    },
    /// A verdict that is not about this shard's run: another run's, another plan's, or one
    /// merged without the result this shard sent. The shard does not exit with it.
    #[error(
        "the coordinator at {url} answered with a verdict that is not this shard's run's: {why}"
    )]
    Unbound { url: String, why: String },
    #[error("interrupted while waiting for the coordinator at {url}")]
    Interrupted { url: String },
}

/// The gate of a merged result as shards hear it.
pub fn verdict_of(r: &crate::results::Results, written: Option<String>) -> Verdict {
    let count = |o: crate::sla::SlaOutcome| r.sla.iter().filter(|v| v.outcome == o).count();
    let sharding = r.shards.as_ref();
    Verdict {
        outcome: r.outcome,
        missing: sharding.map(|s| s.missing.clone()).unwrap_or_default(),
        interrupted: r.interrupted,
        error: r.error.clone(),
        failed: count(crate::sla::SlaOutcome::Fail),
        undecided: count(crate::sla::SlaOutcome::Inconclusive),
        untrusted: r.stages.iter().filter(|s| !s.validity.trusted).count(),
        results: written,
        run_id: None,
        plan_hash: Some(r.plan_hash.clone()),
        merged: sharding
            .map(|s| s.shards.iter().map(|x| x.index).collect())
            .unwrap_or_default(),
        your_result: None,
    }
}
