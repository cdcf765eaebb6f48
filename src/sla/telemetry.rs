//! Telemetry SLA metrics (`gpu.throttle_ratio.min`, `tokens_per_joule`, `queue.max`, …): their
//! values come from the run's [`TelemetryReport`] through [`telemetry_metric`], and a metric
//! nobody measured fails its assertion with a note saying why.

use super::evaluate::observe;
use super::grammar::{Aggregation, Metric};
use crate::metrics::StageSummary;
use crate::telemetry::{TelemetryReport, telemetry_metric};

/// The metric's value on a stage: from `telemetry` for telemetry metrics, from the stage
/// summary for the others.
pub fn observe_with(
    metric: Metric,
    aggregation: Option<Aggregation>,
    stage: &StageSummary,
    telemetry: Option<&TelemetryReport>,
) -> Result<f64, String> {
    let Some(served_by) = metric.telemetry() else {
        return observe(metric, aggregation, stage);
    };
    let Some(report) = telemetry else {
        return Err(format!(
            "no telemetry in this run: `{metric}` needs a `telemetry {{ … }}` block with a source \
             that measures it"
        ));
    };
    if report.stage(&stage.name).is_none() {
        return Err(format!("telemetry has no record of stage `{}`", stage.name));
    }
    telemetry_metric(report, &stage.name, served_by, Some(stage.tokens.output)).ok_or_else(|| {
        let needs = match metric {
            Metric::KvCacheMax | Metric::QueueMax => "a `prometheus` server source",
            Metric::EnergyJ | Metric::TokensPerJoule => {
                "GPU energy counters (`nvml` or dcgm-exporter, Volta or newer)"
            }
            _ => "GPU telemetry (`nvml` or dcgm-exporter)",
        };
        format!("telemetry did not measure `{metric}` in this stage (needs {needs})")
    })
}
