//! What the coordinator's server and its request handlers share: the ledger of steps, joins
//! and results, and the state every handler is given.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};

use tokio::sync::watch;

use super::admit::steps;
use super::config::CoordinatorConfig;
use super::refusal::Refusal;
use super::wire::{Release, Verdict};
use crate::plan::StagePlan;
use crate::results::Results;

/// Refusals logged one by one; past these they are only counted (`/v1/status`).
const LOGGED_REFUSALS: u64 = 50;

pub(super) struct Step {
    pub(super) first: Instant,
    pub(super) arrived: BTreeSet<u32>,
    pub(super) release: Option<Release>,
}

/// A shard's result, as accepted: the result and the SHA-256 of the bytes it came as.
pub(super) struct Accepted {
    pub(super) results: Results,
    pub(super) digest: String,
}

#[derive(Default)]
pub(super) struct Ledger {
    pub(super) steps: BTreeMap<u32, Step>,
    /// Each shard index's instance, from its first arrival on: the only process that may
    /// speak for that index.
    pub(super) joined: BTreeMap<u32, String>,
    /// The latest release: its step and when.
    pub(super) last_release: Option<(u32, Instant)>,
    pub(super) results: BTreeMap<u32, Accepted>,
    /// Shards whose result is being received now.
    pub(super) receiving: BTreeSet<u32>,
    pub(super) first_result: Option<Instant>,
    /// Anything a shard did since the last release (an arrival or a result).
    pub(super) activity: Option<Instant>,
    pub(super) verdict: Option<Verdict>,
    pub(super) fetched: BTreeSet<u32>,
    pub(super) refused: u64,
}

pub(super) struct Shared {
    pub(super) cfg: CoordinatorConfig,
    pub(super) ledger: Mutex<Ledger>,
    pub(super) changed: watch::Sender<u64>,
    /// Drawn when the coordinator starts: every release and the verdict carry it.
    pub(super) run_id: String,
    /// The most a shard's result may weigh, in bytes ([`result_cap`]).
    pub(super) result_cap: u64,
}

impl Shared {
    pub(super) fn notify(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    pub(super) fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        // A handler that panicked mid-update leaves plain counters; keep serving.
        self.ledger.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Step `step` of the plan (warm-up, then each stage's rounds), as shards number them.
    pub(super) fn step_stage(&self, step: u32) -> Option<&StagePlan> {
        steps(&self.cfg.plan).nth(step as usize)
    }

    /// Counts a refusal and tells the log of it (the first [`LOGGED_REFUSALS`]).
    pub(super) fn refused(&self, refusal: Refusal) {
        let n = {
            let mut l = self.ledger();
            l.refused += 1;
            l.refused
        };
        tracing::warn!("coordinator: {refusal}");
        let Some(log) = &self.cfg.on_refusal else {
            return;
        };
        if n <= LOGGED_REFUSALS {
            log.tell(&refusal);
        }
        if n == LOGGED_REFUSALS {
            log.tell(&Refusal {
                why: "further refusals are counted in /v1/status, not logged".into(),
                ..refusal
            });
        }
    }
}

pub(super) fn unix_now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(i64::MAX as u128) as i64)
}
