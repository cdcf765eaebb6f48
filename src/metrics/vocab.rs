//! The metric vocabulary, defined once: every metric an SLA, a report, `compare` or the CSV can
//! name, with its name as SLAs write it (`ttft`), its kind and unit, which direction is worse,
//! what a late or starved client can do to it, where `results.json` keeps it and its label in
//! reports. The SLA grammar, the histograms and summaries, `compare`, the CSV, the reports and
//! the plots all read these tables (`docs/metrics.md` shows them, checked against the code).
//!
//! Three families, one enum each, none repeating another: the latency distributions
//! ([`LatencyMetric`], in [`super::latency`] with how each is measured), figures counted over
//! the stage ([`CountMetric`]) and readings of the server's telemetry ([`TelemetryMetric`],
//! whose values `telemetry` computes). [`Metric`] is any one of them.

use std::fmt;

use crate::units::trim_float;

pub use super::latency::{LatencyMetric, LatencySpec, Sample};

/// What kind of value a metric is, which fixes the unit its threshold must be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Milliseconds; written with ms, s or us.
    Latency,
    /// A share, written with `%` and stored in percent (1% → 1.0).
    Percent,
    /// Requests per second, written `req/s`.
    ReqPerSec,
    /// Tokens per second, written `tok/s`.
    TokPerSec,
    /// A plain number (telemetry: clock ratio, KV-cache usage 0–1, queue depth); `%` is
    /// accepted for ratios and divided by 100.
    Number,
    /// Degrees Celsius, unit optional (`°C` or `C`).
    Celsius,
    /// Watts, unit optional (`W`).
    Watts,
    /// Joules, unit optional (`J`).
    Joules,
    /// Output tokens per joule, unit optional (`tok/J`).
    TokPerJoule,
}

/// What a metric's value is made of, which decides how sure it can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A distribution of per-request samples (a histogram): read through an aggregation.
    Distribution,
    /// A share of the stage's requests (a binomial count).
    Proportion,
    /// A count over the stage's wall time.
    Rate,
    /// A reading of the server's telemetry.
    Reading,
}

impl MetricKind {
    /// The unit observed values and thresholds are stored in.
    pub fn unit(self) -> &'static str {
        match self {
            MetricKind::Latency => "ms",
            MetricKind::Percent => "%",
            MetricKind::ReqPerSec => "req/s",
            MetricKind::TokPerSec => "tok/s",
            MetricKind::Number => "",
            MetricKind::Celsius => "°C",
            MetricKind::Watts => "W",
            MetricKind::Joules => "J",
            MetricKind::TokPerJoule => "tok/J",
        }
    }

    /// Telemetry thresholds may be written as bare numbers.
    pub fn unit_optional(self) -> bool {
        self.shape() == Shape::Reading
    }

    pub fn shape(self) -> Shape {
        match self {
            MetricKind::Latency => Shape::Distribution,
            MetricKind::Percent => Shape::Proportion,
            MetricKind::ReqPerSec | MetricKind::TokPerSec => Shape::Rate,
            MetricKind::Number
            | MetricKind::Celsius
            | MetricKind::Watts
            | MetricKind::Joules
            | MetricKind::TokPerJoule => Shape::Reading,
        }
    }
}

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    Higher,
    Lower,
}

/// What a late or starved client (one that sends after the scheduled instant, or reads what
/// arrived after it arrived) can do to a metric's value, by the way it is measured. Load aside:
/// a client that sent less than planned also spared the server, which can make any server-side
/// figure look better; that is a question of the load achieved, not of the metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LateClient {
    /// Only raise it: measured from the request's scheduled instant, so whatever the client
    /// delays is added, never removed (TTFT, E2E, …; send lag measures that delay itself).
    Raises,
    /// Move it either way: measured between two events the client sees, and a delay in seeing
    /// the first shortens the interval while one in seeing the second lengthens it (ITL,
    /// TPOT).
    Either,
    /// Only lower it: a count per second of the stage, and a late client completes fewer.
    Lowers,
    /// Raise it only through the failures the client itself declares
    /// ([`super::ErrorKind::client_side`]: its own timeouts, requests cancelled when the drain
    /// ran out); every other kind of failure is the server's answer.
    ClientSideErrors,
    /// Nothing, except through the load it offered: a reading of the server's own telemetry.
    LoadOnly,
}

/// One metric's entry in the vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// As SLAs, `compare` tolerances and reports write it: `ttft`, `error_rate`,
    /// `gpu.temp.max`.
    pub name: &'static str,
    /// How reports title it: `TTFT`, `error rate`.
    pub label: &'static str,
    /// Where `results.json` keeps it: a latency metric's key in a stage's `latency` and
    /// `histograms` (`ttft_ms`); for the others, the fields of a stage (`throughput.…`) or of
    /// the run's `telemetry` they are computed from.
    pub key: &'static str,
    pub kind: MetricKind,
    pub worse: Worse,
    pub late_client: LateClient,
    /// Computed from output token counts, which may be estimates (the server sent no usage).
    pub from_output_tokens: bool,
    /// A threshold as a hint shows it: `200ms`, `1%`.
    pub example: &'static str,
}

impl MetricDef {
    /// Whether a late or starved client can make the value look worse than the server made
    /// it: then a failure of the metric may be the client's, until what the client added is
    /// bounded and taken off.
    pub fn client_can_worsen(&self) -> bool {
        match self.late_client {
            LateClient::Raises | LateClient::ClientSideErrors => self.worse == Worse::Higher,
            LateClient::Lowers => self.worse == Worse::Lower,
            LateClient::Either => true,
            LateClient::LoadOnly => false,
        }
    }

    /// Whether a late or starved client can make the value look better than the server made
    /// it, by the way it is measured (see [`LateClient`] for the load it offered): when not,
    /// a pass holds whatever the client did, provided the server got the planned load.
    pub fn client_can_improve(&self) -> bool {
        match self.late_client {
            LateClient::Raises | LateClient::ClientSideErrors => self.worse == Worse::Lower,
            LateClient::Lowers => self.worse == Worse::Higher,
            LateClient::Either => true,
            LateClient::LoadOnly => false,
        }
    }
}

/// Figures counted over a whole stage: shares of its requests and rates over its wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CountMetric {
    ErrorRate,
    OutputThroughput,
    InputThroughput,
    RequestThroughput,
    Goodput,
    GoodputRate,
}

impl CountMetric {
    pub const ALL: [CountMetric; 6] = [
        CountMetric::ErrorRate,
        CountMetric::OutputThroughput,
        CountMetric::InputThroughput,
        CountMetric::RequestThroughput,
        CountMetric::Goodput,
        CountMetric::GoodputRate,
    ];

    pub fn def(self) -> &'static MetricDef {
        &COUNT_DEFS[self as usize]
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
        example,
    }
}

/// In the order of [`CountMetric`].
const COUNT_DEFS: [MetricDef; 6] = {
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
    ]
};

/// Readings of the server's telemetry over a stage, served by `telemetry::telemetry_metric`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TelemetryMetric {
    /// Lowest SM-clock ratio of the stage's GPUs.
    GpuThrottleRatioMin,
    /// Highest GPU temperature, °C.
    GpuTempMax,
    /// Mean total GPU power draw, W.
    GpuPowerMean,
    /// GPU energy spent during the stage, J.
    EnergyJ,
    /// Output tokens per joule of GPU energy.
    TokensPerJoule,
    /// Highest KV-cache usage the server reported (0–1).
    KvCacheMax,
    /// Longest server queue (waiting requests).
    QueueMax,
}

impl TelemetryMetric {
    pub const ALL: [TelemetryMetric; 7] = [
        TelemetryMetric::GpuThrottleRatioMin,
        TelemetryMetric::GpuTempMax,
        TelemetryMetric::GpuPowerMean,
        TelemetryMetric::EnergyJ,
        TelemetryMetric::TokensPerJoule,
        TelemetryMetric::KvCacheMax,
        TelemetryMetric::QueueMax,
    ];

    pub fn def(self) -> &'static MetricDef {
        &TELEMETRY_DEFS[self as usize]
    }
}

const fn reading(
    name: &'static str,
    label: &'static str,
    key: &'static str,
    kind: MetricKind,
    worse: Worse,
    example: &'static str,
) -> MetricDef {
    MetricDef {
        name,
        label,
        key,
        kind,
        worse,
        late_client: LateClient::LoadOnly,
        from_output_tokens: false,
        example,
    }
}

/// In the order of [`TelemetryMetric`].
const TELEMETRY_DEFS: [MetricDef; 7] = {
    use MetricKind as K;
    use Worse::{Higher, Lower};
    [
        reading(
            "gpu.throttle_ratio.min",
            "GPU clock ratio (min)",
            "telemetry.stages[].gpus[].clock_ratio_min",
            K::Number,
            Lower,
            "0.9",
        ),
        reading(
            "gpu.temp.max",
            "GPU temperature (max)",
            "telemetry.stages[].gpus[].temp_max_c",
            K::Celsius,
            Higher,
            "85",
        ),
        reading(
            "gpu.power.mean",
            "GPU power (mean)",
            "telemetry.stages[].gpus[].power_mean_w",
            K::Watts,
            Higher,
            "600 W",
        ),
        reading(
            "energy_j",
            "GPU energy",
            "telemetry.stages[].gpus[].energy_j",
            K::Joules,
            Higher,
            "50000 J",
        ),
        MetricDef {
            from_output_tokens: true,
            ..reading(
                "tokens_per_joule",
                "tokens per joule",
                "tokens.output / telemetry.stages[].gpus[].energy_j",
                K::TokPerJoule,
                Lower,
                "2",
            )
        },
        reading(
            "kv_cache.max",
            "KV-cache usage (max)",
            "telemetry.stages[].servers[].kv_cache_max",
            K::Number,
            Higher,
            "0.9",
        ),
        reading(
            "queue.max",
            "queue (max)",
            "telemetry.stages[].servers[].waiting_max",
            K::Number,
            Higher,
            "10",
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
}

impl Metric {
    /// Every metric: the latency ones, the counted ones, the telemetry ones, each in its
    /// family's order (the order SLA hints list them in).
    pub fn all() -> impl Iterator<Item = Metric> {
        let latency = LatencyMetric::ALL.into_iter().map(Metric::Latency);
        let counted = CountMetric::ALL.into_iter().map(Metric::Count);
        let telemetry = TelemetryMetric::ALL.into_iter().map(Metric::Telemetry);
        latency.chain(counted).chain(telemetry)
    }

    pub fn def(self) -> &'static MetricDef {
        match self {
            Metric::Latency(m) => m.def(),
            Metric::Count(m) => m.def(),
            Metric::Telemetry(m) => m.def(),
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

/// The percentiles a [`super::Dist`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Percentile {
    P50,
    P90,
    P95,
    P99,
    P999,
}

impl Percentile {
    pub const ALL: [Percentile; 5] = [
        Percentile::P50,
        Percentile::P90,
        Percentile::P95,
        Percentile::P99,
        Percentile::P999,
    ];

    pub fn value(self) -> f64 {
        match self {
            Percentile::P50 => 50.0,
            Percentile::P90 => 90.0,
            Percentile::P95 => 95.0,
            Percentile::P99 => 99.0,
            Percentile::P999 => 99.9,
        }
    }

    /// The percentile whose value is `v`, if it is one the summaries keep.
    pub fn from_value(v: f64) -> Option<Percentile> {
        Percentile::ALL
            .into_iter()
            .find(|p| (p.value() - v).abs() < 1e-9)
    }
}

/// How a distribution is read as one number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregation {
    Percentile(Percentile),
    Mean,
    Max,
    Min,
}

impl Aggregation {
    /// Every aggregation a [`super::Dist`] keeps.
    pub const ALL: [Aggregation; 8] = [
        Aggregation::Percentile(Percentile::P50),
        Aggregation::Percentile(Percentile::P90),
        Aggregation::Percentile(Percentile::P95),
        Aggregation::Percentile(Percentile::P99),
        Aggregation::Percentile(Percentile::P999),
        Aggregation::Mean,
        Aggregation::Max,
        Aggregation::Min,
    ];
}

impl fmt::Display for Aggregation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Aggregation::Percentile(p) => write!(f, "p{}", trim_float(p.value())),
            Aggregation::Mean => f.write_str("mean"),
            Aggregation::Max => f.write_str("max"),
            Aggregation::Min => f.write_str("min"),
        }
    }
}

#[cfg(test)]
#[path = "vocab_tests.rs"]
mod tests;
