//! Telemetry SLA metrics (`gpu.throttle_ratio.min`, `tokens_per_joule`, `queue.max`, …): their
//! values come from the run's [`TelemetryReport`] through [`telemetry_metric`] (the draft
//! acceptance rate, failing that, from the responses' own counts), and a metric nobody
//! measured fails its assertion with a note saying why.

use super::grammar::{Aggregation, Metric};
use super::observe::{Unobserved, observe};
use crate::metrics::{StageSummary, TelemetryMetric};
use crate::telemetry::{TelemetryReport, telemetry_metric};

/// The metric's value on a stage: from `telemetry` for telemetry metrics, from the stage
/// summary for the others.
pub fn observe_with(
    metric: Metric,
    aggregation: Option<Aggregation>,
    stage: &StageSummary,
    telemetry: Option<&TelemetryReport>,
) -> Result<f64, Unobserved> {
    let Some(served_by) = metric.telemetry() else {
        return observe(metric, aggregation, stage);
    };
    // The acceptance rate from the server's counters, else from its responses' own
    // (llama.cpp's `timings`, which have no verification steps: no length from them).
    if served_by == TelemetryMetric::SpecAcceptanceRate {
        let server = telemetry.and_then(|r| telemetry_metric(r, &stage.name, served_by, None));
        if let Some(v) = server.or_else(|| stage.spec.as_ref()?.acceptance_rate()) {
            return Ok(v);
        }
    }
    let Some(report) = telemetry else {
        return Err(Unobserved::NoTelemetry { metric });
    };
    if report.stage(&stage.name).is_none() {
        return Err(Unobserved::StageNotInTelemetry {
            stage: stage.name.clone(),
        });
    }
    telemetry_metric(report, &stage.name, served_by, Some(stage.tokens.output)).ok_or_else(|| {
        if let Some(why) = server_lacks(report, &stage.name, served_by) {
            return why;
        }
        let needs = match served_by {
            TelemetryMetric::KvCacheMax | TelemetryMetric::QueueMax => {
                "a `prometheus` server source"
            }
            TelemetryMetric::SpecAcceptanceRate | TelemetryMetric::SpecAcceptanceLength => {
                "a `prometheus` server source whose server decodes speculatively (vLLM's \
                 `vllm:spec_decode_*` counters, SGLang's `sglang:spec_accept_*` gauges)"
            }
            TelemetryMetric::EnergyJ | TelemetryMetric::TokensPerJoule => {
                "GPU energy counters (`nvml` or dcgm-exporter, Volta or newer)"
            }
            _ => "GPU telemetry (`nvml` or dcgm-exporter)",
        };
        Unobserved::NotMeasured { metric, needs }
    })
}

/// For a server metric: why the stage's server sources, which did answer, have no value —
/// the server exports no such gauge (llama.cpp has no KV-cache gauge) — rather than a missing
/// source.
fn server_lacks(
    report: &TelemetryReport,
    stage: &str,
    metric: TelemetryMetric,
) -> Option<Unobserved> {
    type Has = fn(&crate::telemetry::ServerStageSummary) -> bool;
    let (what, has): (&'static str, Has) = match metric {
        TelemetryMetric::KvCacheMax => ("a KV-cache usage gauge", |s| s.kv_cache_max.is_some()),
        TelemetryMetric::QueueMax => ("a queue-length (waiting requests) gauge", |s| {
            s.waiting_max.is_some()
        }),
        TelemetryMetric::SpecAcceptanceRate | TelemetryMetric::SpecAcceptanceLength => (
            "speculative-decoding counters (no draft model, or none the server exports)",
            |s| s.spec.is_some(),
        ),
        _ => return None,
    };
    let servers: Vec<_> = report
        .stage(stage)?
        .servers
        .iter()
        .filter(|s| s.samples > 0)
        .collect();
    if servers.is_empty() || servers.iter().any(|s| has(s)) {
        return None;
    }
    let names: Vec<String> = servers
        .iter()
        .map(|s| match s.kind {
            Some(k) => format!("{} at `{}`", k.as_str(), s.source),
            None => format!("`{}`", s.source),
        })
        .collect();
    Some(Unobserved::ServerLacks {
        metric: Metric::Telemetry(metric),
        what,
        servers: names.join(", "),
    })
}
