//! A latency distribution ([`Dist`]) and the confidence intervals kept beside its figures
//! ([`Intervals`]): plain data, in `results.json`. `intervals.rs` computes the intervals.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::def::{Aggregation, Percentile};

/// A latency distribution in milliseconds, from an HDR histogram (µs resolution, 3 significant
/// digits). `count` 0 means no sample: every other field is then 0 and SLAs on it fail.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Dist {
    pub count: u64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub min: f64,
    pub mean: f64,
    /// Confidence intervals of the percentiles and the mean (absent in results from before
    /// they were kept, and where no sample was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<Intervals>,
}

impl Dist {
    /// The figure an aggregation reads.
    pub fn get(&self, aggregation: Aggregation) -> f64 {
        match aggregation {
            Aggregation::Percentile(p) => match p {
                Percentile::P50 => self.p50,
                Percentile::P90 => self.p90,
                Percentile::P95 => self.p95,
                Percentile::P99 => self.p99,
                Percentile::P999 => self.p999,
            },
            Aggregation::Mean => self.mean,
            Aggregation::Max => self.max,
            Aggregation::Min => self.min,
        }
    }
}

/// The confidence intervals of a [`Dist`]'s percentiles and mean, in its unit (ms).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Intervals {
    /// The confidence asked for (0.95); each bound says what it achieved.
    pub confidence: f64,
    pub method: IntervalMethod,
    pub p50: Bound,
    pub p90: Bound,
    pub p95: Bound,
    pub p99: Bound,
    pub p999: Bound,
    pub mean: Bound,
}

/// How an interval was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// From one run's samples: order statistics (percentiles), the normal approximation
    /// (mean).
    Samples,
    /// Across rounds: the sign-test interval of the median of the rounds' figures.
    Rounds,
    /// Over a steady-state window: the window's figure ± t·s/√b, `s` the spread of the
    /// figure over `b` batches of the window's time slices in send order, which carries the
    /// requests' autocorrelation. *Added in schema 3.*
    Batches,
}

/// One figure's interval, or why there is none.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Bound {
    Interval {
        low: f64,
        high: f64,
        /// The coverage achieved (at least the one asked for, unless rounds were too few).
        confidence: f64,
    },
    /// Too few samples (or rounds) for an interval at the confidence asked for; `needed`
    /// would give one. A one-sided bound may still exist (at (1 + confidence)/2): 12 samples
    /// bound a p95 from below, not from above.
    Insufficient {
        needed: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        low: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        high: Option<f64>,
    },
}

impl Bound {
    /// Too few for an interval, and no one-sided bound either.
    pub fn insufficient(needed: u64) -> Bound {
        Bound::Insufficient {
            needed,
            low: None,
            high: None,
        }
    }

    /// `(low, high)`, when there is an interval.
    pub fn range(&self) -> Option<(f64, f64)> {
        match *self {
            Bound::Interval { low, high, .. } => Some((low, high)),
            Bound::Insufficient { .. } => None,
        }
    }
}

/// Which figure of a [`Dist`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    P50,
    P90,
    P95,
    P99,
    P999,
    Mean,
}

impl From<Percentile> for Figure {
    fn from(p: Percentile) -> Figure {
        use Percentile as P;
        match p {
            P::P50 => Figure::P50,
            P::P90 => Figure::P90,
            P::P95 => Figure::P95,
            P::P99 => Figure::P99,
            P::P999 => Figure::P999,
        }
    }
}

impl Figure {
    pub const ALL: [Figure; 6] = [
        Figure::P50,
        Figure::P90,
        Figure::P95,
        Figure::P99,
        Figure::P999,
        Figure::Mean,
    ];

    pub(super) fn quantile(self) -> Option<f64> {
        Some(match self {
            Figure::P50 => 0.50,
            Figure::P90 => 0.90,
            Figure::P95 => 0.95,
            Figure::P99 => 0.99,
            Figure::P999 => 0.999,
            Figure::Mean => return None,
        })
    }

    /// The figure's value in `d`.
    pub fn of(self, d: &Dist) -> f64 {
        match self {
            Figure::P50 => d.p50,
            Figure::P90 => d.p90,
            Figure::P95 => d.p95,
            Figure::P99 => d.p99,
            Figure::P999 => d.p999,
            Figure::Mean => d.mean,
        }
    }
}

impl Intervals {
    /// The bound of one figure.
    pub fn get(&self, f: Figure) -> Bound {
        match f {
            Figure::P50 => self.p50,
            Figure::P90 => self.p90,
            Figure::P95 => self.p95,
            Figure::P99 => self.p99,
            Figure::P999 => self.p999,
            Figure::Mean => self.mean,
        }
    }

    pub(super) fn from_fn(
        confidence: f64,
        method: IntervalMethod,
        f: impl Fn(Figure) -> Bound,
    ) -> Self {
        Intervals {
            confidence,
            method,
            p50: f(Figure::P50),
            p90: f(Figure::P90),
            p95: f(Figure::P95),
            p99: f(Figure::P99),
            p999: f(Figure::P999),
            mean: f(Figure::Mean),
        }
    }
}
