//! One watched metric's change between two runs ([`MetricChange`]), the verdicts it can get
//! ([`Change`]), the tolerances and confidence it is judged with ([`CompareOptions`]), and the
//! verdict of two point values ([`classify_point`]): what `compare`'s stage rows are made of,
//! shared by the interval comparison (`compare.rs`) and the point rows of server readings
//! (`compare_spec.rs`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::metrics::{Aggregation, CountMetric, Metric};

/// An error-rate change smaller than this many percentage points is noise, whatever its
/// relative size (0 → 0.05 % is "infinitely" worse but one request in 2000).
pub const ERROR_RATE_NOISE_PP: f64 = 0.1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Better,
    Same,
    Worse,
    /// The change's interval straddles the tolerance (or there were too few samples to bound
    /// it): the data cannot say.
    Inconclusive,
    /// One side has no value (no samples, no requests).
    #[serde(rename = "n/a")]
    NotComparable,
}

impl Change {
    pub(super) fn word(self) -> &'static str {
        match self {
            Change::Better => "better",
            Change::Same => "same",
            Change::Worse => "WORSE",
            Change::Inconclusive => "inconclusive",
            Change::NotComparable => "n/a",
        }
    }

    pub(super) fn icon(self) -> &'static str {
        match self {
            Change::Better => "🟢",
            Change::Same => "⚪",
            Change::Worse => "🔴",
            Change::Inconclusive => "❔",
            Change::NotComparable => "➖",
        }
    }
}

/// How much each metric may move before it counts as changed: one default, and per metric
/// (`ttft.p95`, or `ttft` for all of its aggregations).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tolerances {
    /// A fraction (0.05 = 5 %).
    pub default: f64,
    pub metrics: BTreeMap<String, f64>,
}

impl Tolerances {
    pub fn new(default: f64) -> Self {
        Tolerances {
            default,
            metrics: BTreeMap::new(),
        }
    }

    /// The tolerance of `metric_ref` (`ttft.p95`): its own, else its metric's (`ttft`), else
    /// the default.
    pub fn of(&self, metric_ref: &str) -> f64 {
        let base = metric_ref.split('.').next().unwrap_or(metric_ref);
        self.metrics
            .get(metric_ref)
            .or_else(|| self.metrics.get(base))
            .copied()
            .unwrap_or(self.default)
    }
}

/// How to compare.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    pub tolerances: Tolerances,
    /// Confidence of the change intervals (0.95).
    pub confidence: f64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            tolerances: Tolerances::new(0.05),
            confidence: 0.95,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricChange {
    /// `ttft.p95`, `output_throughput`, `error_rate`.
    pub metric: String,
    /// The metric as the SLA grammar names it (`metric` is its text).
    #[serde(skip)]
    pub metric_ref: (Metric, Option<Aggregation>),
    pub unit: &'static str,
    pub baseline: Option<f64>,
    pub current: Option<f64>,
    /// The change: relative in percent (`+12.5`), or in percentage points for rates.
    pub change: Option<f64>,
    /// `%` (relative) or `pp` (percentage points).
    pub change_unit: &'static str,
    /// The change's confidence interval, in `change_unit`, when one could be made.
    pub interval: Option<[f64; 2]>,
    /// The tolerance applied, in percent.
    pub tolerance_pct: f64,
    /// What the verdict rests on: `bootstrap`, `rounds`, `proportions`, `point` (no
    /// interval for this metric or these results), `too few samples`.
    pub basis: &'static str,
    pub verdict: Change,
    /// Display strings for templates.
    pub baseline_text: String,
    pub current_text: String,
    pub change_text: String,
    pub icon: &'static str,
}

/// The verdict of a change from `base` to `cur` against the relative tolerance `tol`.
pub(super) fn classify_point(
    metric: Metric,
    base: f64,
    cur: f64,
    lower_is_better: bool,
    tol: f64,
) -> Change {
    let delta = cur - base;
    if metric == Metric::Count(CountMetric::ErrorRate) && delta.abs() <= ERROR_RATE_NOISE_PP {
        return Change::Same;
    }
    let beyond = if base != 0.0 {
        (delta / base).abs() > tol
    } else {
        delta != 0.0
    };
    match (beyond, (delta < 0.0) == lower_is_better) {
        (false, _) => Change::Same,
        (true, true) => Change::Better,
        (true, false) => Change::Worse,
    }
}
