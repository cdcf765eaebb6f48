//! `RequestRecord` stream → per-stage [`StageSummary`] (HDR histograms, counters, goodput).
//!
//! Entry point: [`StageAggregator`].

mod aggregate;
mod histograms;
mod profile;
mod record;
mod summary;
mod turns;

pub use aggregate::{GoodputSlo, StageAggregator, StageClock, ValidityRules, dist};
pub use histograms::{LatencyMetric, StageHistograms, TurnHistograms};
pub use profile::{PointKind, ProbeResult, ProfilePoint, SATURATION_RATIO, SearchSummary};
pub use record::*;
pub use summary::*;
pub use turns::{MAX_TURN_INDICES, TurnSummary};
