//! A metric's value on a stage, in its canonical unit, read from the stage summary through the
//! vocabulary; or why there is none ([`Unobserved`]), which fails the assertion: an SLA nobody
//! measured is not met.

use super::grammar::{Aggregation, Metric};
use crate::metrics::HistogramCodec;
use crate::metrics::{CountMetric, Dist, LatencyMetric, StageSummary, interactivity};

/// Why a metric has no value on a stage.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unobserved {
    #[error("no {metric} samples")]
    NoSamples { metric: Metric },
    #[error("no requests were sent")]
    NoRequests,
    /// The parser rejects these; a hand-built assertion still must not panic.
    #[error("{metric} does not record {}", aggregation.map_or("this".to_string(), |a| a.to_string()))]
    NotRecorded {
        metric: Metric,
        aggregation: Option<Aggregation>,
    },
    #[error("`{metric}` is a figure of a sweep's or search's curve, not of one stage")]
    OfCurve { metric: Metric },
    #[error("`{metric}` comes from telemetry and is evaluated with the run's telemetry report")]
    FromTelemetry { metric: Metric },
    #[error(
        "no telemetry in this run: `{metric}` needs a `telemetry {{ … }}` block with a source \
         that measures it"
    )]
    NoTelemetry { metric: Metric },
    #[error("telemetry has no record of stage `{stage}`")]
    StageNotInTelemetry { stage: String },
    #[error(
        "`{metric}` needs {what}, and the server's metrics ({servers}) have none: this server \
         does not export it"
    )]
    ServerLacks {
        metric: Metric,
        what: &'static str,
        /// The server sources that answered, as a list for the message.
        servers: String,
    },
    #[error(
        "`{metric}` judges answers, and this stage's data set checks none: give it a \
         `quality {{ … }}` block (docs/quality.md)"
    )]
    NotChecked { metric: Metric },
    #[error("no answer was scored: `accuracy` needs records with a `reference` (docs/quality.md)")]
    NoneScored { metric: Metric },
    #[error(
        "stage `{stage}` ran on no server infermeter started: `server_startup` needs a \
         `server` block (docs/server.md)"
    )]
    NoServer { stage: String },
    #[error("`{metric}` needs the GPUs serving the target: declare them, `target {{ gpus 8 }}`")]
    NoGpus { metric: Metric },
    #[error("telemetry did not measure `{metric}` in this stage (needs {needs})")]
    NotMeasured { metric: Metric, needs: &'static str },
}

/// The stage's distribution of a per-request latency metric; `None` for the others (and for
/// send lag, whose figures are the client's health).
pub fn latency_dist(metric: Metric, stage: &StageSummary) -> Option<&Dist> {
    stage.latency.get(metric.latency()?)
}

/// Which figures of a stage a value is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// As measured.
    Measured,
    /// Net of what the client may have added (`client_net`): lower bounds on what the server
    /// took, for the latencies a late client can only raise.
    Net,
}

impl View {
    /// The stage's distribution of `metric` in this view.
    pub fn dist(self, metric: Metric, stage: &StageSummary) -> Option<&Dist> {
        match self {
            View::Measured => latency_dist(metric, stage),
            View::Net => stage.client_net.as_ref()?.latency.get(metric.latency()?),
        }
    }

    /// The stage's histogram of `metric` in this view (µs), when stored.
    pub fn histogram(
        self,
        metric: LatencyMetric,
        stage: &StageSummary,
    ) -> Option<Result<hdrhistogram::Histogram<u64>, crate::stats::StatsError>> {
        match self {
            View::Measured => stage.histogram(metric),
            View::Net => stage
                .client_net
                .as_ref()?
                .histograms
                .as_ref()?
                .decode(metric),
        }
    }

    /// The metric's value on a stage in this view.
    pub fn observe(
        self,
        metric: Metric,
        aggregation: Option<Aggregation>,
        stage: &StageSummary,
    ) -> Result<f64, Unobserved> {
        match self {
            View::Measured => observe(metric, aggregation, stage),
            View::Net => match self.dist(metric, stage) {
                Some(d) if d.count > 0 => Ok(d.get(aggregation.unwrap_or(Aggregation::Mean))),
                _ => Err(Unobserved::NoSamples { metric }),
            },
        }
    }
}

/// The metric's value on a stage in its canonical unit, or why there is none.
pub fn observe(
    metric: Metric,
    aggregation: Option<Aggregation>,
    stage: &StageSummary,
) -> Result<f64, Unobserved> {
    let sent = stage.requests.sent;
    match metric {
        Metric::Latency(LatencyMetric::SendLag) if sent == 0 => Err(Unobserved::NoRequests),
        Metric::Latency(LatencyMetric::SendLag) => aggregation
            .and_then(|a| stage.client.send_lag_ms.get(a))
            .ok_or(Unobserved::NotRecorded {
                metric,
                aggregation,
            }),
        Metric::Latency(m) => match stage.latency.get(m) {
            Some(d) if d.count > 0 => Ok(d.get(aggregation.unwrap_or(Aggregation::Mean))),
            _ => Err(Unobserved::NoSamples { metric }),
        },
        Metric::Count(m) => counted(m, stage),
        Metric::Telemetry(_) => Err(Unobserved::FromTelemetry { metric }),
        Metric::Curve(_) => Err(Unobserved::OfCurve { metric }),
    }
}

fn counted(metric: CountMetric, stage: &StageSummary) -> Result<f64, Unobserved> {
    let sent = stage.requests.sent;
    let t = &stage.throughput;
    match metric {
        CountMetric::ErrorRate | CountMetric::Goodput if sent == 0 => Err(Unobserved::NoRequests),
        CountMetric::ErrorRate => Ok(stage.requests.failed as f64 / sent as f64 * 100.0),
        CountMetric::Goodput => Ok(t.goodput_ratio * 100.0),
        CountMetric::GoodputRate => Ok(t.goodput_per_s),
        CountMetric::RequestThroughput => Ok(t.requests_per_s),
        CountMetric::OutputThroughput => Ok(t.output_tokens_per_s),
        CountMetric::InputThroughput => Ok(t.input_tokens_per_s),
        CountMetric::ServerStartup => {
            stage
                .server
                .as_ref()
                .map(|s| s.startup_ms)
                .ok_or_else(|| Unobserved::NoServer {
                    stage: stage.name.clone(),
                })
        }
        CountMetric::InputsRate => t.inputs_per_s.ok_or(Unobserved::NoSamples {
            metric: Metric::Count(metric),
        }),
        CountMetric::JudgeScore => {
            let m = Metric::Count(metric);
            let q = stage.quality.as_ref();
            match q.and_then(|q| q.judge.as_ref()) {
                None => Err(Unobserved::NotChecked { metric: m }),
                Some(j) => j.mean.ok_or(Unobserved::NoSamples { metric: m }),
            }
        }
        CountMetric::TokensPerSUser => {
            interactivity::tokens_per_s_user(stage).ok_or(Unobserved::NoSamples {
                metric: Metric::Count(metric),
            })
        }
        CountMetric::E2eNormalizedInteractivity => {
            interactivity::e2e_normalized(stage).ok_or(Unobserved::NoSamples {
                metric: Metric::Count(metric),
            })
        }
        CountMetric::OutputThroughputPerGpu => {
            interactivity::output_per_gpu(stage).ok_or(Unobserved::NoGpus {
                metric: Metric::Count(metric),
            })
        }
        CountMetric::Accuracy
        | CountMetric::RepetitionRate
        | CountMetric::EmptyRate
        | CountMetric::Agreement => {
            let m = Metric::Count(metric);
            let Some(q) = &stage.quality else {
                return Err(Unobserved::NotChecked { metric: m });
            };
            match proportion_counts(metric, stage) {
                Some((_, 0)) if metric == CountMetric::Accuracy && q.checked > 0 => {
                    Err(Unobserved::NoneScored { metric: m })
                }
                Some((k, n)) if n > 0 => Ok(k as f64 / n as f64 * 100.0),
                _ => Err(Unobserved::NoSamples { metric: m }),
            }
        }
    }
}

/// Why `agreement` cannot be judged on a stage that checked answers: no baseline was given,
/// or none of its answers paired with the baseline's. Such an assertion is undecided, as a
/// `baseline` threshold without a baseline is, never failed on a share of nothing; `None`
/// for other metrics and for a stage with pairs.
pub fn unpaired_agreement(
    metric: Metric,
    stage: &StageSummary,
    has_baseline: bool,
) -> Option<String> {
    if metric != Metric::Count(CountMetric::Agreement) {
        return None;
    }
    let q = stage.quality.as_ref()?;
    match &q.agreement {
        Some(a) if a.paired > 0 => None,
        Some(a) => Some(format!(
            "{}, so there is no agreement to judge",
            a.unpaired
                .as_deref()
                .unwrap_or("no answer was paired with the baseline's")
        )),
        None if has_baseline => Some(
            "no answer was paired with the baseline's, so there is no agreement to judge"
                .to_string(),
        ),
        None => Some(
            "no baseline given: `agreement` compares the answers with those of the run \
             `report { baseline \"…/results.json\" }` names (its answers.jsonl beside it)"
                .to_string(),
        ),
    }
}

/// A proportion's count and its denominator on a stage (`k` of `n`): failed of sent, good of
/// sent, correct of scored, repetitive or empty of checked. `None` for a figure that is no
/// proportion, and for a quality figure of a stage whose answers are not checked.
pub fn proportion_counts(metric: CountMetric, stage: &StageSummary) -> Option<(u64, u64)> {
    let sent = stage.requests.sent;
    let q = stage.quality.as_ref();
    match metric {
        CountMetric::ErrorRate => Some((stage.requests.failed, sent)),
        CountMetric::Goodput => Some((
            (stage.throughput.goodput_ratio * sent as f64).round() as u64,
            sent,
        )),
        CountMetric::Accuracy => q.map(|q| (q.correct, q.scored)),
        CountMetric::RepetitionRate => q.map(|q| (q.repetitive, q.checked)),
        CountMetric::EmptyRate => q.map(|q| (q.empty, q.checked)),
        CountMetric::Agreement => q
            .and_then(|q| q.agreement.as_ref())
            .map(|a| (a.identical, a.paired)),
        CountMetric::OutputThroughput
        | CountMetric::InputThroughput
        | CountMetric::RequestThroughput
        | CountMetric::GoodputRate
        | CountMetric::InputsRate
        | CountMetric::JudgeScore
        | CountMetric::ServerStartup
        | CountMetric::TokensPerSUser
        | CountMetric::E2eNormalizedInteractivity
        | CountMetric::OutputThroughputPerGpu => None,
    }
}
