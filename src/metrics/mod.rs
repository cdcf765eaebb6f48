//! `RequestRecord` stream → per-stage [`StageSummary`] (HDR histograms, counters, goodput).
//!
//! Entry point: [`StageAggregator`].

mod aggregate;
mod record;
mod summary;

pub use aggregate::{GoodputSlo, StageAggregator, StageClock, ValidityRules, dist};
pub use record::*;
pub use summary::*;
