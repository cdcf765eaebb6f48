//! Evaluates parsed assertions against stage summaries (and an optional baseline run).
//!
//! A stage-scoped assertion is evaluated on its stage only. A scenario-level assertion (no
//! stage) is evaluated on every measured stage, one verdict per stage with `stage` set: an SLA
//! is a promise about every load the scenario applies, and a per-stage verdict says which load
//! broke it. Warm-up is never evaluated.

use super::grammar::{Aggregation, Assertion, Metric, Percentile, ScopedAssertion, Threshold};
use super::telemetry::observe_with;
use super::verdict::SlaVerdict;
use crate::metrics::{Dist, StageSummary};
use crate::telemetry::TelemetryReport;

/// A past run whose numbers `baseline` thresholds refer to: its stages and telemetry.
#[derive(Debug, Clone, Copy)]
pub struct Baseline<'a> {
    pub stages: &'a [StageSummary],
    pub telemetry: Option<&'a TelemetryReport>,
}

/// One verdict per (assertion, stage) pair, in assertion order then stage order.
pub fn evaluate(
    assertions: &[ScopedAssertion],
    stages: &[StageSummary],
    baseline: Option<Baseline<'_>>,
) -> Vec<SlaVerdict> {
    evaluate_with(assertions, stages, baseline, None)
}

/// [`evaluate`] with the run's telemetry, which serves the telemetry metrics
/// (`gpu.temp.max`, `queue.max`, …).
pub fn evaluate_with(
    assertions: &[ScopedAssertion],
    stages: &[StageSummary],
    baseline: Option<Baseline<'_>>,
    telemetry: Option<&TelemetryReport>,
) -> Vec<SlaVerdict> {
    let mut verdicts = Vec::new();
    for ScopedAssertion {
        assertion, stage, ..
    } in assertions
    {
        match stage {
            Some(name) => match stages.iter().find(|s| &s.name == name) {
                Some(stage) => {
                    verdicts.push(evaluate_one_with(assertion, stage, baseline, telemetry))
                }
                None => verdicts.push(SlaVerdict {
                    expr: assertion.expr.clone(),
                    stage: Some(name.clone()),
                    observed: 0.0,
                    threshold: absolute_or_zero(assertion),
                    unit: assertion.unit().to_string(),
                    passed: false,
                    note: Some(format!("stage `{name}` has no results (it did not run)")),
                }),
            },
            None => {
                verdicts.extend(
                    stages
                        .iter()
                        .map(|s| evaluate_one_with(assertion, s, baseline, telemetry)),
                );
            }
        }
    }
    verdicts
}

fn absolute_or_zero(a: &Assertion) -> f64 {
    match a.threshold {
        Threshold::Absolute(v) => v,
        Threshold::Baseline { .. } => 0.0,
    }
}

/// Evaluates one assertion on one stage.
pub fn evaluate_one(
    assertion: &Assertion,
    stage: &StageSummary,
    baseline: Option<Baseline<'_>>,
) -> SlaVerdict {
    evaluate_one_with(assertion, stage, baseline, None)
}

/// [`evaluate_one`] with the run's telemetry.
pub fn evaluate_one_with(
    assertion: &Assertion,
    stage: &StageSummary,
    baseline: Option<Baseline<'_>>,
    telemetry: Option<&TelemetryReport>,
) -> SlaVerdict {
    let mut verdict = SlaVerdict {
        expr: assertion.expr.clone(),
        stage: Some(stage.name.clone()),
        observed: 0.0,
        threshold: absolute_or_zero(assertion),
        unit: assertion.unit().to_string(),
        passed: false,
        note: None,
    };
    let observed = match observe_with(assertion.metric, assertion.aggregation, stage, telemetry) {
        Ok(v) => v,
        Err(why) => {
            verdict.note = Some(why);
            return verdict;
        }
    };
    verdict.observed = observed;
    if let Threshold::Baseline { factor } = assertion.threshold {
        let base = baseline.and_then(|b| b.stages.iter().find(|s| s.name == stage.name));
        let Some(base) = base else {
            verdict.note = Some(match baseline {
                None => "no baseline given".to_string(),
                Some(_) => format!("the baseline has no stage `{}`", stage.name),
            });
            return verdict;
        };
        let base_telemetry = baseline.and_then(|b| b.telemetry);
        match observe_with(
            assertion.metric,
            assertion.aggregation,
            base,
            base_telemetry,
        ) {
            Ok(v) => verdict.threshold = v * factor,
            Err(why) => {
                verdict.note = Some(format!("baseline: {why}"));
                return verdict;
            }
        }
    }
    verdict.passed = assertion.op.holds(verdict.observed, verdict.threshold);
    verdict
}

/// The stage's distribution of a per-request latency metric; `None` for the others.
pub fn latency_dist(metric: Metric, stage: &StageSummary) -> Option<&Dist> {
    let lat = &stage.latency;
    Some(match metric {
        Metric::Ttft => &lat.ttft_ms,
        Metric::Itl => &lat.itl_ms,
        Metric::Tpot => &lat.tpot_ms,
        Metric::E2e => &lat.e2e_ms,
        Metric::Ntpot => &lat.ntpot_ms,
        Metric::Ttfa => &lat.ttfa_ms,
        _ => return None,
    })
}

/// The metric's value on a stage in its canonical unit, or why there is none (which fails the
/// assertion: an SLA nobody measured is not met).
pub fn observe(
    metric: Metric,
    aggregation: Option<Aggregation>,
    stage: &StageSummary,
) -> Result<f64, String> {
    let dist = |d: &Dist| -> Result<f64, String> {
        if d.count == 0 {
            return Err(format!("no {metric} samples"));
        }
        Ok(match aggregation.unwrap_or(Aggregation::Mean) {
            Aggregation::Percentile(p) => match p {
                Percentile::P50 => d.p50,
                Percentile::P90 => d.p90,
                Percentile::P95 => d.p95,
                Percentile::P99 => d.p99,
                Percentile::P999 => d.p999,
            },
            Aggregation::Mean => d.mean,
            Aggregation::Max => d.max,
            Aggregation::Min => d.min,
        })
    };
    if let Some(d) = latency_dist(metric, stage) {
        return dist(d);
    }
    let sent = stage.requests.sent;
    let no_requests = || Err("no requests were sent".to_string());
    match metric {
        // Answered by `latency_dist` above.
        Metric::Ttft | Metric::Itl | Metric::Tpot | Metric::E2e | Metric::Ntpot | Metric::Ttfa => {
            Err(format!("no {metric} samples"))
        }
        Metric::SendLag => {
            if sent == 0 {
                return no_requests();
            }
            let lag = &stage.client.send_lag_ms;
            match aggregation {
                Some(Aggregation::Percentile(Percentile::P50)) => Ok(lag.p50),
                Some(Aggregation::Percentile(Percentile::P99)) => Ok(lag.p99),
                Some(Aggregation::Max) => Ok(lag.max),
                // The parser rejects these; a hand-built Assertion still must not panic.
                other => Err(format!(
                    "send_lag does not record {}",
                    other.map_or("this".to_string(), |a| a.to_string())
                )),
            }
        }
        Metric::ErrorRate if sent == 0 => no_requests(),
        Metric::ErrorRate => Ok(stage.requests.failed as f64 / sent as f64 * 100.0),
        Metric::Goodput if sent == 0 => no_requests(),
        Metric::Goodput => Ok(stage.throughput.goodput_ratio * 100.0),
        Metric::GoodputRate => Ok(stage.throughput.goodput_per_s),
        Metric::RequestThroughput => Ok(stage.throughput.requests_per_s),
        Metric::OutputThroughput => Ok(stage.throughput.output_tokens_per_s),
        Metric::InputThroughput => Ok(stage.throughput.input_tokens_per_s),
        Metric::GpuThrottleRatioMin
        | Metric::GpuTempMax
        | Metric::GpuPowerMean
        | Metric::EnergyJ
        | Metric::TokensPerJoule
        | Metric::KvCacheMax
        | Metric::QueueMax => Err(format!(
            "`{metric}` comes from telemetry and is evaluated with the run's telemetry report"
        )),
    }
}
