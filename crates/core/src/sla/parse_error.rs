//! The SLA parser's errors and the hints they carry: what a metric accepts (its
//! aggregations, units and a typical bound), and the nearest metric name to a misspelt one.

use super::grammar::{Metric, MetricKind};
use crate::metrics::{Shape, Worse};

/// What went wrong, for callers that branch on it (tests, editors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlaErrorKind {
    Empty,
    UnknownMetric,
    MissingAggregation,
    UnexpectedAggregation,
    UnknownAggregation,
    UnsupportedPercentile,
    MissingOperator,
    BadOperator,
    MissingValue,
    BadNumber,
    MissingUnit,
    UnknownUnit,
    UnitMismatch,
    TrailingInput,
    /// A `[…]` selector that is unclosed, unknown, repeated or not for this metric.
    BadSelector,
}

/// A parse error with its byte span inside the expression.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SlaError {
    pub kind: SlaErrorKind,
    /// Byte offset of the offending text inside the expression.
    pub offset: usize,
    /// Byte length of the offending text (at least 1, except for an empty expression).
    pub len: usize,
    /// A lowercase fragment saying what is wrong.
    pub message: String,
    /// What to write instead.
    pub hint: String,
}

impl SlaError {
    pub(super) fn new(
        kind: SlaErrorKind,
        span: (usize, usize),
        message: String,
        hint: String,
    ) -> Self {
        SlaError {
            kind,
            offset: span.0,
            len: span.1,
            message,
            hint,
        }
    }
}

/// Whether `metric` can be judged on a steady-state window: a stage's own per-request
/// metrics and counts can; ITL (not kept per request), telemetry (the run's) and sweep curves
/// cannot.
pub fn check_windowed(metric: Metric, span: (usize, usize)) -> Result<(), SlaError> {
    let why = match metric {
        Metric::Latency(crate::metrics::LatencyMetric::Itl) => {
            "ITL's token gaps are not kept per request for the window"
        }
        Metric::Latency(crate::metrics::LatencyMetric::SendLag) => {
            "send lag is the client's health over the whole stage"
        }
        m if m.is_telemetry() => "telemetry is read over the whole run",
        m if m.curve().is_some() => "a curve is judged across a sweep's points",
        _ => return Ok(()),
    };
    Err(SlaError::new(
        SlaErrorKind::BadSelector,
        span,
        format!("`{metric}` has no steady-state window: {why}"),
        "judge it on the whole stage (drop the window), or use tpot, ttft or e2e".into(),
    ))
}

pub(super) fn unknown_metric(name: &str, span: (usize, usize)) -> SlaError {
    let best = Metric::all()
        .map(|m| (strsim::damerau_levenshtein(name, m.name()), m))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, m)| *d <= 2.max(m.name().len() / 4) && *d < name.len().max(2));
    let hint = match best {
        Some((_, m)) => format!("did you mean `{m}`? metrics: {}", metric_list()),
        None => format!("metrics: {}", metric_list()),
    };
    SlaError::new(
        SlaErrorKind::UnknownMetric,
        span,
        format!("unknown metric `{name}`"),
        hint,
    )
}

pub(super) fn metric_list() -> String {
    Metric::all()
        .map(|m| m.name())
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn agg_list(metric: Metric) -> String {
    metric
        .supported_aggregations()
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The bound an SLA usually puts on the metric: below it when higher is worse, above it
/// when lower is (`>=` for readings, whose natural floor is a value they may reach).
pub(super) fn example_op(metric: Metric) -> &'static str {
    let def = metric.def();
    match def.worse {
        Worse::Higher => "<",
        Worse::Lower if def.kind.shape() == Shape::Reading => ">=",
        Worse::Lower => ">",
    }
}

pub(super) fn example_value(metric: Metric) -> &'static str {
    metric.def().example
}

pub(super) fn unit_hint(metric: Metric) -> String {
    let what = match metric.kind() {
        MetricKind::Latency => "a latency (us, ms, s or m)",
        MetricKind::Percent => "a percentage",
        MetricKind::ReqPerSec => "in requests per second (req/s)",
        MetricKind::TokPerSec => "in tokens per second (tok/s)",
        MetricKind::InputsPerSec => "in inputs per second (inputs/s)",
        MetricKind::Number => "a plain number",
        MetricKind::Celsius => "a temperature (°C)",
        MetricKind::Watts => "a power (W)",
        MetricKind::Joules => "an energy (J)",
        MetricKind::TokPerJoule => "tokens per joule (tok/J)",
    };
    format!("{metric} is {what}; write e.g. {}", example_value(metric))
}
