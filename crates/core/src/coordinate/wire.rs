//! The coordinator's HTTP messages (JSON), shared by its server and its client. Every call
//! carries the run's token (`Authorization: Bearer …`); a shard names itself by index and by
//! its instance, a random id drawn when the process starts, so that a second process claiming
//! the same index (`--shard 1/2` given twice) is told apart from the first one retrying.

use serde::{Deserialize, Serialize};

use crate::sla::SlaOutcome;

/// `GET /v1/time`: the coordinator's clock.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Time {
    pub unix_ns: i64,
}

/// `POST /v1/barrier`: a shard has reached a step. Its first arrival is its join: the index
/// is then its instance's for the rest of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Arrive {
    pub shard: u32,
    /// N of `--shard I/N`: must be the coordinator's.
    pub count: u32,
    /// The shard process's instance id (hex).
    pub instance: String,
    pub step: u32,
    pub stage: String,
    pub plan_hash: String,
}

/// The step's agreed start (coordinator clock) and who had not arrived by the deadline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Release {
    pub start_unix_ns: i64,
    pub missing: Vec<u32>,
    /// The run's id, drawn by the coordinator when it starts: the same in every release and
    /// in the verdict, which a shard accepts only for the run it took part in.
    pub run_id: String,
}

/// Which shard asks (`?shard=I&instance=ID` on results and the verdict).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Who {
    pub shard: u32,
    pub instance: String,
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
    /// The run it is the verdict of (a coordinator's run id; none for `infermeter merge`).
    #[serde(default)]
    pub run_id: Option<String>,
    /// The plan the merged result ran.
    #[serde(default)]
    pub plan_hash: Option<String>,
    /// The shards whose results were merged.
    #[serde(default)]
    pub merged: Vec<u32>,
    /// SHA-256 (hex) of the result the coordinator accepted from the shard that asked: a shard
    /// exits with the verdict only when it is that of its own result.
    #[serde(default)]
    pub your_result: Option<String>,
    /// The merged run's MLPerf verdict line, when its preset says `require=#true` and the run
    /// does not qualify: the gate fails (exit 1) whatever the SLAs said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_qualified: Option<String>,
}

/// `GET /v1/status`: what the coordinator has seen, for operators and tests.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Status {
    pub shards: u32,
    /// Shards that have joined (arrived at a step), by index.
    #[serde(default)]
    pub joined: Vec<u32>,
    /// Steps released so far, with the shards that had arrived at each.
    pub released: Vec<(u32, Vec<u32>)>,
    /// Shards whose result has come.
    pub results: Vec<u32>,
    pub done: bool,
    /// Requests refused (no or a wrong token, a duplicate shard, a body too large, …).
    #[serde(default)]
    pub refused: u64,
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
        not_qualified: r
            .mlperf
            .as_ref()
            .filter(|q| q.fails_gate())
            .map(|q| q.line()),
    }
}
