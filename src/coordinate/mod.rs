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
//! Entry points: [`serve`] (the server) and [`Client`] (a shard's side, a
//! [`runner::Barrier`](crate::runner::Barrier)).

mod client;
mod server;
mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use client::{Client, ClientConfig};
pub use server::{Coordinator, CoordinatorOutcome, serve};
pub use wire::{Release, Status, Verdict};

use crate::merge::MergeOptions;
use crate::plan::Plan;
use crate::report::WriteOptions;

/// How the coordinator runs.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub listen: SocketAddr,
    pub shards: u32,
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
}

impl CoordinatorConfig {
    pub fn new(listen: SocketAddr, shards: u32, plan: Arc<Plan>, out_dir: PathBuf) -> Self {
        CoordinatorConfig {
            listen,
            shards,
            plan,
            out_dir,
            wait: Duration::from_secs(60),
            start_wait: Duration::from_secs(600),
            lead: Duration::from_millis(500),
            linger: Duration::from_secs(30),
            merge: MergeOptions::default(),
            write: WriteOptions::default(),
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
    }
}
