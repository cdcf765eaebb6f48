//! The metric vocabulary ([`Metric`] and its kinds, how each latency is measured) and the
//! per-request record every later stage reads ([`RequestRecord`]). The aggregator that turns
//! records into stage summaries is the library's (`infermeter_core::metrics`).

pub mod def;
pub mod latency;
pub mod per_metric;
pub mod record;
pub mod telemetry;
pub mod vocab;

pub use per_metric::{MetricSet, Net, PerMetric, PerTurn, PerTurnRecorded, Recorded, Summarised};
pub use record::*;
pub use vocab::{
    Aggregation, ApiScope, CountMetric, CurveMetric, LateClient, LatencyMetric, LatencySpec,
    Metric, MetricDef, MetricKind, Percentile, Sample, Shape, TelemetryMetric, Worse,
};
