//! The coordinator's HTTP messages (JSON), shared by its server and its client.

use serde::{Deserialize, Serialize};

use crate::sla::SlaOutcome;

/// `GET /v1/time`: the coordinator's clock.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Time {
    pub unix_ns: i64,
}

/// `POST /v1/barrier`: a shard has reached a step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Arrive {
    pub shard: u32,
    pub step: u32,
    pub stage: String,
    pub plan_hash: String,
}

/// The step's agreed start (coordinator clock) and who had not arrived by the deadline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Release {
    pub start_unix_ns: i64,
    pub missing: Vec<u32>,
}

/// `GET /v1/verdict`: the merged run's gate, which every shard exits with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Verdict {
    pub outcome: SlaOutcome,
    /// Shards whose result never came: the run is partial.
    pub missing: Vec<u32>,
    /// A shard stopped early (interrupted, or lost the coordinator).
    pub interrupted: bool,
    pub error: Option<String>,
    pub failed: usize,
    pub undecided: usize,
    pub untrusted: usize,
    /// Where the merged result was written (on the coordinator's machine).
    pub results: Option<String>,
}

/// `GET /v1/status`: what the coordinator has seen, for operators and tests.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Status {
    pub shards: u32,
    /// Steps released so far, with the shards that had arrived at each.
    pub released: Vec<(u32, Vec<u32>)>,
    /// Shards whose result has come.
    pub results: Vec<u32>,
    pub done: bool,
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
