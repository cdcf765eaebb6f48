//! `RequestRecord` stream → per-stage [`StageSummary`] (HDR histograms, counters, goodput).
//!
//! Entry point: [`StageAggregator`].

mod aggregate;
mod attribution;
mod histograms;
mod intervals;
mod profile;
mod record;
mod rounds;
mod summary;
mod turns;
mod validity;

pub use aggregate::{GoodputSlo, StageAggregator, StageClock, dist, dist_with_intervals};
pub use attribution::{Attribution, AttributionSource, PercentileBuckets, ServerDist, tpot_note};
pub use histograms::{LatencyMetric, StageHistograms, TurnHistograms};
pub use intervals::{
    Bound, Figure, IntervalMethod, Intervals, median_of_rounds, rounds_intervals, sample_intervals,
    sample_intervals_of,
};
pub use profile::{PointKind, ProbeResult, ProfilePoint, SATURATION_RATIO, SearchSummary};
pub use record::*;
pub use rounds::merge_rounds;
pub use summary::*;
pub use turns::{MAX_TURN_INDICES, TurnSummary};
pub use validity::{StageFacts, ValidityRules};
