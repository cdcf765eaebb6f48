//! `RequestRecord` stream → per-stage [`StageSummary`] (HDR histograms, counters, goodput).

mod summary;

pub use summary::*;
