//! How the coordinator runs: where it listens, how many shards it waits for, and how long.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
