//! The metric vocabulary, defined once: every metric an SLA, a report, `compare` or the CSV can
//! name, with its name as SLAs write it (`ttft`), its kind and unit, which direction is worse,
//! what a late or starved client can do to it, where `results.json` keeps it and its label in
//! reports. The SLA grammar, the histograms and summaries, `compare`, the CSV, the reports and
//! the plots all read these tables (`docs/metrics.md` shows them, checked against the code).
//!
//! Four families, one enum each, none repeating another: the latency distributions
//! ([`LatencyMetric`], in [`super::latency`] with how each is measured), figures counted over
//! the stage ([`CountMetric`]), readings of the server's telemetry ([`TelemetryMetric`],
//! whose values `telemetry` computes) and figures of a sweep's or search's curve
//! ([`CurveMetric`], judged by `sla` on a profile group's points). [`Metric`] is any one of them; what an entry says is
//! [`MetricDef`] (`def.rs`).

use std::fmt;

pub use super::def::{
    Aggregation, ApiScope, LateClient, MetricDef, MetricKind, Percentile, Shape, Worse,
};
pub use super::latency::{LatencyMetric, LatencySpec, Sample};
pub use super::telemetry::TelemetryMetric;

/// Figures counted over a whole stage: shares of its requests and rates over its wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CountMetric {
    ErrorRate,
    OutputThroughput,
    InputThroughput,
    RequestThroughput,
    Goodput,
    GoodputRate,
    InputsRate,
    /// Share of the scored answers judged correct (a data set's `quality { score … }`).
    Accuracy,
    /// Share of the checked answers flagged repetitive (`quality { repetition … }`).
    RepetitionRate,
    /// Share of the checked answers with no answer text.
    EmptyRate,
    /// The mean score an LLM judge gave a sample of the answers (`quality { judge … }`).
    JudgeScore,
    /// Share of the prompts answered in the baseline too whose answers are identical to the
    /// baseline's (`report { baseline … }` and its `answers.jsonl`).
    Agreement,
    /// The start-up time of the server the stage ran on (a `server` block's start: from the
    /// start to ready).
    ServerStartup,
    /// Output tokens per second one user sees while the answer streams: 1000 / TPOT p90 (ms).
    TokensPerSUser,
    /// 1000 / NTPOT p90 (ms): E2E per output token, so TTFT counts (AIPerf's definition).
    E2eNormalizedInteractivity,
    /// Output throughput over the target's declared `gpus`.
    OutputThroughputPerGpu,
}

impl CountMetric {
    pub const ALL: [CountMetric; 16] = [
        CountMetric::ErrorRate,
        CountMetric::OutputThroughput,
        CountMetric::InputThroughput,
        CountMetric::RequestThroughput,
        CountMetric::Goodput,
        CountMetric::GoodputRate,
        CountMetric::InputsRate,
        CountMetric::Accuracy,
        CountMetric::RepetitionRate,
        CountMetric::EmptyRate,
        CountMetric::JudgeScore,
        CountMetric::Agreement,
        CountMetric::ServerStartup,
        CountMetric::TokensPerSUser,
        CountMetric::E2eNormalizedInteractivity,
        CountMetric::OutputThroughputPerGpu,
    ];

    pub fn def(self) -> &'static MetricDef {
        &COUNT_DEFS[self as usize]
    }

    /// Whether the figure judges the answers' text (a data set's `quality` block) rather
    /// than the requests' outcome or pace.
    pub fn is_quality(self) -> bool {
        matches!(
            self,
            CountMetric::Accuracy
                | CountMetric::RepetitionRate
                | CountMetric::EmptyRate
                | CountMetric::Agreement
        )
    }
}

const fn counted(
    name: &'static str,
    label: &'static str,
    key: &'static str,
    kind: MetricKind,
    worse: Worse,
    late_client: LateClient,
    example: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        label,
        key,
        kind,
        worse,
        late_client,
        from_output_tokens: false,
        scope: ApiScope::All,
        example,
    }
}

/// In the order of [`CountMetric`].
const COUNT_DEFS: [MetricDef; 16] = {
    use LateClient as C;
    use MetricKind as K;
    use Worse::{Higher, Lower};
    [
        counted(
            "error_rate",
            "error rate",
            "requests.failed / requests.sent",
            K::Percent,
            Higher,
            C::ClientSideErrors,
            "1%",
        ),
        MetricDef {
            from_output_tokens: true,
            scope: ApiScope::Generated,
            ..counted(
                "output_throughput",
                "output throughput",
                "throughput.output_tokens_per_s",
                K::TokPerSec,
                Lower,
                C::Lowers,
                "2000 tok/s",
            )
        },
        counted(
            "input_throughput",
            "input throughput",
            "throughput.input_tokens_per_s",
            K::TokPerSec,
            Lower,
            C::Lowers,
            "1000 tok/s",
        ),
        counted(
            "request_throughput",
            "request throughput",
            "throughput.requests_per_s",
            K::ReqPerSec,
            Lower,
            C::Lowers,
            "10 req/s",
        ),
        // Its per-request objectives are latencies a late client can only raise.
        counted(
            "goodput",
            "goodput",
            "throughput.goodput_ratio",
            K::Percent,
            Lower,
            C::Lowers,
            "95%",
        ),
        counted(
            "goodput_rate",
            "goodput rate",
            "throughput.goodput_per_s",
            K::ReqPerSec,
            Lower,
            C::Lowers,
            "10 req/s",
        ),
        MetricDef {
            scope: ApiScope::Pooled,
            ..counted(
                "inputs_per_s",
                "inputs per second",
                "throughput.inputs_per_s",
                K::InputsPerSec,
                Lower,
                C::Lowers,
                "500 inputs/s",
            )
        },
        // What an answer says does not depend on when the client read it, nor on the load.
        MetricDef {
            scope: ApiScope::Generated,
            ..counted(
                "accuracy",
                "accuracy",
                "quality.correct / quality.scored",
                K::Percent,
                Lower,
                C::Answers,
                "80%",
            )
        },
        MetricDef {
            scope: ApiScope::Generated,
            ..counted(
                "repetition_rate",
                "repetition rate",
                "quality.repetitive / quality.checked",
                K::Percent,
                Higher,
                C::Answers,
                "5%",
            )
        },
        MetricDef {
            scope: ApiScope::Generated,
            ..counted(
                "empty_rate",
                "empty answers",
                "quality.empty / quality.checked",
                K::Percent,
                Higher,
                C::Answers,
                "1%",
            )
        },
        MetricDef {
            scope: ApiScope::Generated,
            ..counted(
                "judge_score",
                "judge score",
                "quality.judge.mean",
                K::Number,
                Lower,
                C::Answers,
                "4",
            )
        },
        MetricDef {
            scope: ApiScope::Generated,
            ..counted(
                "agreement",
                "agreement",
                "quality.agreement.identical / quality.agreement.paired",
                K::Percent,
                Lower,
                C::Answers,
                "95%",
            )
        },
        // Measured by infermeter from the server's start to ready, before any request: the
        // client's pace cannot touch it.
        counted(
            "server_startup",
            "server start-up",
            "stages[].server.startup_ms",
            K::Latency,
            Higher,
            C::BeforeLoad,
            "60s",
        ),
        // Interactivity: per-user speeds read off the TPOT and NTPOT distributions, so a late
        // client moves them as it moves those (TPOT either way, NTPOT only up).
        MetricDef {
            from_output_tokens: true,
            scope: ApiScope::Generated,
            ..counted(
                "tokens_per_s_user",
                "tokens/s per user",
                "1000 / latency.tpot_ms.p90",
                K::TokPerSec,
                Lower,
                C::Either,
                "20 tok/s",
            )
        },
        MetricDef {
            from_output_tokens: true,
            scope: ApiScope::Generated,
            ..counted(
                "e2e_normalized_interactivity",
                "E2E-normalised interactivity",
                "1000 / latency.ntpot_ms.p90",
                K::TokPerSec,
                Lower,
                C::Lowers,
                "10 tok/s",
            )
        },
        MetricDef {
            from_output_tokens: true,
            scope: ApiScope::Generated,
            ..counted(
                "output_throughput_per_gpu",
                "output throughput per GPU",
                "throughput.output_tokens_per_s / planned.gpus",
                K::TokPerSec,
                Lower,
                C::Lowers,
                "500 tok/s",
            )
        },
    ]
};

/// Figures of a load profile's curve (a sweep's points, or a search's probes), one per
/// profile group: what a sweep or search is run to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CurveMetric {
    /// The highest offered rate whose point met every SLA (a search's answer).
    SlaMaxRate,
    /// The offered rate of the sweep's knee.
    KneeRate,
    /// The most closed-loop clients whose point met every SLA.
    SlaMaxClients,
    /// The clients of a concurrency sweep's knee.
    KneeClients,
}

impl CurveMetric {
    pub const ALL: [CurveMetric; 4] = [
        CurveMetric::SlaMaxRate,
        CurveMetric::KneeRate,
        CurveMetric::SlaMaxClients,
        CurveMetric::KneeClients,
    ];

    pub fn def(self) -> &'static MetricDef {
        &CURVE_DEFS[self as usize]
    }

    /// Whether the figure counts closed-loop clients (else it is an offered rate).
    pub fn of_clients(self) -> bool {
        matches!(self, CurveMetric::SlaMaxClients | CurveMetric::KneeClients)
    }

    /// Whether the figure is the knee (else the SLA-compliant maximum).
    pub fn is_knee(self) -> bool {
        matches!(self, CurveMetric::KneeRate | CurveMetric::KneeClients)
    }
}

/// In the order of [`CurveMetric`]. A late client raises the points' latencies, so fewer
/// points meet their SLAs and the knee comes sooner: it can only lower these.
const CURVE_DEFS: [MetricDef; 4] = {
    use LateClient as C;
    use MetricKind as K;
    use Worse::Lower;
    [
        counted(
            "sla_max_rate",
            "SLA-compliant maximum rate",
            "sla[].observed (sla_max_rate)",
            K::ReqPerSec,
            Lower,
            C::Lowers,
            "20 req/s",
        ),
        counted(
            "knee_rate",
            "knee rate",
            "sla[].observed (knee_rate)",
            K::ReqPerSec,
            Lower,
            C::Lowers,
            "20 req/s",
        ),
        counted(
            "sla_max_clients",
            "SLA-compliant maximum clients",
            "sla[].observed (sla_max_clients)",
            K::Number,
            Lower,
            C::Lowers,
            "8",
        ),
        counted(
            "knee_clients",
            "knee clients",
            "sla[].observed (knee_clients)",
            K::Number,
            Lower,
            C::Lowers,
            "8",
        ),
    ]
};

/// Any metric of the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    Latency(LatencyMetric),
    Count(CountMetric),
    /// Served by telemetry; names are dotted and fixed.
    Telemetry(TelemetryMetric),
    /// A figure of a profile group's curve, judged on the group rather than a stage.
    Curve(CurveMetric),
}

impl Metric {
    /// Every metric: the latency ones, the counted ones, the telemetry ones, each in its
    /// family's order (the order SLA hints list them in).
    pub fn all() -> impl Iterator<Item = Metric> {
        let latency = LatencyMetric::ALL.into_iter().map(Metric::Latency);
        let counted = CountMetric::ALL.into_iter().map(Metric::Count);
        let telemetry = TelemetryMetric::ALL.into_iter().map(Metric::Telemetry);
        let curve = CurveMetric::ALL.into_iter().map(Metric::Curve);
        latency.chain(counted).chain(telemetry).chain(curve)
    }

    pub fn def(self) -> &'static MetricDef {
        match self {
            Metric::Latency(m) => m.def(),
            Metric::Count(m) => m.def(),
            Metric::Telemetry(m) => m.def(),
            Metric::Curve(m) => m.def(),
        }
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::all().find(|m| m.name() == name)
    }

    pub fn kind(self) -> MetricKind {
        self.def().kind
    }

    /// Whether a target whose requests are answered so (`RequestSettings::answer`,
    /// `TargetInfo::answer`) has the metric (see [`ApiScope`]): TTFT means nothing for an
    /// answer that comes whole, output throughput nothing for a pooling API.
    pub fn applies_to(self, answer: crate::protocol::Answer) -> bool {
        self.def().scope.has(answer)
    }

    /// Every metric a target answered so has, in the vocabulary's order.
    pub fn of_answer(answer: crate::protocol::Answer) -> impl Iterator<Item = Metric> {
        Metric::all().filter(move |m| m.applies_to(answer))
    }

    /// The latency metric, for latency distributions.
    pub fn latency(self) -> Option<LatencyMetric> {
        match self {
            Metric::Latency(m) => Some(m),
            _ => None,
        }
    }

    /// The telemetry metric that serves this one, for metrics measured by telemetry sources.
    pub fn telemetry(self) -> Option<TelemetryMetric> {
        match self {
            Metric::Telemetry(m) => Some(m),
            _ => None,
        }
    }

    /// Measured by telemetry sources, not by the client: evaluated from the run's telemetry
    /// report once the run is over.
    pub fn is_telemetry(self) -> bool {
        self.telemetry().is_some()
    }

    /// The curve figure, for metrics of a profile group rather than of a stage.
    pub fn curve(self) -> Option<CurveMetric> {
        match self {
            Metric::Curve(m) => Some(m),
            _ => None,
        }
    }

    /// Whether the metric is a distribution that needs an aggregation (`ttft.p95`).
    pub fn needs_aggregation(self) -> bool {
        self.latency().is_some()
    }

    /// The aggregations this metric's summary records (none for single numbers).
    pub fn supported_aggregations(self) -> &'static [Aggregation] {
        self.latency().map_or(&[], |m| m.spec().aggregations)
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
#[path = "vocab_tests.rs"]
mod tests;
