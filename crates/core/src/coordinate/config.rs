//! How the coordinator runs: where it listens, how many shards it waits for, the run's token,
//! and how long it waits.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::refusal::RefusalLog;
use super::token::Token;
use crate::merge::MergeOptions;
use crate::plan::Plan;
use crate::report::WriteOptions;

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
