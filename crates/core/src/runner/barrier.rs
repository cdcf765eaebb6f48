//! The hook a distributed run's shards synchronise through: before each step (the warm-up,
//! then each stage and round, in plan order — the same sequence on every shard), the runner
//! asks its [`Barrier`] when to start and starts the step's clock at that instant. The runner
//! only knows this trait; the coordinator's client (`coordinate`) implements it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// A boxed future, so the trait stays object-safe.
pub type BarrierFuture<'a> =
    Pin<Box<dyn Future<Output = Result<AgreedStart, BarrierError>> + Send + 'a>>;

/// Why a barrier gave no agreed start: the implementation's own error (the coordinator's
/// client says which coordinator, and what it did), kept whole as the cause.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct BarrierError(Arc<dyn std::error::Error + Send + Sync>);

impl BarrierError {
    pub fn new(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        BarrierError(Arc::new(cause))
    }
}

/// The interrupt ended a barrier's wait.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("interrupted while waiting for the other shards")]
pub struct Interrupted;

/// A shard that could not agree on a step's start with the others (its coordinator gone):
/// running the step unsynchronised would not be the planned schedule, so the run stops.
#[derive(Debug, Clone, thiserror::Error)]
#[error("shard stopped: no agreed start for `{stage}` (step {step})")]
pub struct Unsynchronised {
    pub stage: String,
    pub step: u32,
    #[source]
    pub cause: BarrierError,
}

/// Where the shards of one run agree when each step starts.
pub trait Barrier: Send + Sync + std::fmt::Debug {
    /// Waits until every shard of plan `plan_hash` has reached step `step` (named `stage`),
    /// or the coordinator's
    /// deadline has passed, and returns the agreed start; `Err` with why when there is none
    /// (the coordinator is unreachable), which stops the run ([`Unsynchronised`]).
    fn wait<'a>(&'a self, step: u32, stage: &'a str, plan_hash: &'a str) -> BarrierFuture<'a>;
}

/// When a step starts, as agreed.
#[derive(Debug, Clone, PartialEq)]
pub struct AgreedStart {
    /// The agreed instant on this machine's clock (the coordinator's, corrected by the
    /// estimated offset between the clocks).
    pub at: SystemTime,
    /// The agreed instant on the coordinator's clock, in nanoseconds since the Unix epoch.
    pub agreed_unix_ns: i128,
    /// Coordinator clock minus this clock, estimated from the least-delayed round trip.
    pub clock_offset_ns: i64,
    /// Half that round trip: the offset estimate is within this of the truth.
    pub clock_error_ns: u64,
    /// Shards that had not reached the step when the coordinator's deadline passed.
    pub missing: Vec<u32>,
}

/// How far one step's actual start was from the agreed one.
#[derive(Debug, Clone, PartialEq)]
pub struct StepStart {
    pub step: u32,
    pub stage: String,
    pub round: u32,
    pub agreed: AgreedStart,
    /// Actual start minus the agreed instant, on this clock (positive: late).
    pub offset_ns: i64,
}

impl AgreedStart {
    /// The agreed instant on the monotonic clock (now if it has passed).
    pub fn instant(&self) -> Instant {
        let now = (Instant::now(), SystemTime::now());
        match self.at.duration_since(now.1) {
            Ok(ahead) => now.0 + ahead.min(Duration::from_secs(3_600)),
            Err(_) => now.0,
        }
    }

    /// How late `t` (this clock) is after the agreed instant, in nanoseconds.
    pub fn offset_of(&self, t: SystemTime) -> i64 {
        match t.duration_since(self.at) {
            Ok(late) => late.as_nanos().min(i64::MAX as u128) as i64,
            Err(early) => -(early.duration().as_nanos().min(i64::MAX as u128) as i64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsynchronised_shard_keeps_the_barrier_s_cause() {
        let e = Unsynchronised {
            stage: "load".into(),
            step: 2,
            cause: BarrierError::new(std::io::Error::other("the coordinator refused")),
        };
        assert_eq!(
            crate::error::chain(&e),
            "shard stopped: no agreed start for `load` (step 2): the coordinator refused"
        );
    }
}
