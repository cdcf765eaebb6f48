//! The typed form of an SLA assertion (`ttft.p95 < 200ms`): metric, aggregation, operator and
//! threshold as enums, each with its canonical unit, so evaluation never re-reads text.

use std::fmt;

use crate::telemetry::TelemetryMetric;
use crate::units::trim_float;

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
        matches!(
            self,
            MetricKind::Number
                | MetricKind::Celsius
                | MetricKind::Watts
                | MetricKind::Joules
                | MetricKind::TokPerJoule
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    Ttft,
    Itl,
    Tpot,
    E2e,
    Ntpot,
    Ttfa,
    SendLag,
    ErrorRate,
    OutputThroughput,
    InputThroughput,
    RequestThroughput,
    Goodput,
    GoodputRate,
    // Served by telemetry ([`Metric::telemetry`]); names are dotted and fixed.
    GpuThrottleRatioMin,
    GpuTempMax,
    GpuPowerMean,
    EnergyJ,
    TokensPerJoule,
    KvCacheMax,
    QueueMax,
}

impl Metric {
    pub const ALL: [Metric; 20] = [
        Metric::Ttft,
        Metric::Itl,
        Metric::Tpot,
        Metric::E2e,
        Metric::Ntpot,
        Metric::Ttfa,
        Metric::SendLag,
        Metric::ErrorRate,
        Metric::OutputThroughput,
        Metric::InputThroughput,
        Metric::RequestThroughput,
        Metric::Goodput,
        Metric::GoodputRate,
        Metric::GpuThrottleRatioMin,
        Metric::GpuTempMax,
        Metric::GpuPowerMean,
        Metric::EnergyJ,
        Metric::TokensPerJoule,
        Metric::KvCacheMax,
        Metric::QueueMax,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Itl => "itl",
            Metric::Tpot => "tpot",
            Metric::E2e => "e2e",
            Metric::Ntpot => "ntpot",
            Metric::Ttfa => "ttfa",
            Metric::SendLag => "send_lag",
            Metric::ErrorRate => "error_rate",
            Metric::OutputThroughput => "output_throughput",
            Metric::InputThroughput => "input_throughput",
            Metric::RequestThroughput => "request_throughput",
            Metric::Goodput => "goodput",
            Metric::GoodputRate => "goodput_rate",
            Metric::GpuThrottleRatioMin => "gpu.throttle_ratio.min",
            Metric::GpuTempMax => "gpu.temp.max",
            Metric::GpuPowerMean => "gpu.power.mean",
            Metric::EnergyJ => "energy_j",
            Metric::TokensPerJoule => "tokens_per_joule",
            Metric::KvCacheMax => "kv_cache.max",
            Metric::QueueMax => "queue.max",
        }
    }

    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn kind(self) -> MetricKind {
        match self {
            Metric::Ttft
            | Metric::Itl
            | Metric::Tpot
            | Metric::E2e
            | Metric::Ntpot
            | Metric::Ttfa
            | Metric::SendLag => MetricKind::Latency,
            Metric::ErrorRate | Metric::Goodput => MetricKind::Percent,
            Metric::RequestThroughput | Metric::GoodputRate => MetricKind::ReqPerSec,
            Metric::OutputThroughput | Metric::InputThroughput => MetricKind::TokPerSec,
            Metric::GpuThrottleRatioMin | Metric::KvCacheMax | Metric::QueueMax => {
                MetricKind::Number
            }
            Metric::GpuTempMax => MetricKind::Celsius,
            Metric::GpuPowerMean => MetricKind::Watts,
            Metric::EnergyJ => MetricKind::Joules,
            Metric::TokensPerJoule => MetricKind::TokPerJoule,
        }
    }

    /// The telemetry metric that serves this one, for metrics measured by telemetry sources.
    pub fn telemetry(self) -> Option<TelemetryMetric> {
        Some(match self {
            Metric::GpuThrottleRatioMin => TelemetryMetric::GpuThrottleRatioMin,
            Metric::GpuTempMax => TelemetryMetric::GpuTempMax,
            Metric::GpuPowerMean => TelemetryMetric::GpuPowerMean,
            Metric::EnergyJ => TelemetryMetric::EnergyJ,
            Metric::TokensPerJoule => TelemetryMetric::TokensPerJoule,
            Metric::KvCacheMax => TelemetryMetric::KvCacheMax,
            Metric::QueueMax => TelemetryMetric::QueueMax,
            _ => return None,
        })
    }

    /// Measured by telemetry sources, not by the client: evaluated from the run's telemetry
    /// report once the run is over.
    pub fn is_telemetry(self) -> bool {
        self.telemetry().is_some()
    }

    /// Whether the metric is a distribution that needs an aggregation (`ttft.p95`).
    pub fn needs_aggregation(self) -> bool {
        self.kind() == MetricKind::Latency
    }

    /// The aggregations this metric's summary records. `send_lag` keeps only p50, p99 and max.
    pub fn supported_aggregations(self) -> &'static [Aggregation] {
        use Aggregation as A;
        use Percentile as P;
        match self {
            Metric::SendLag => &[A::Percentile(P::P50), A::Percentile(P::P99), A::Max],
            m if m.needs_aggregation() => &[
                A::Percentile(P::P50),
                A::Percentile(P::P90),
                A::Percentile(P::P95),
                A::Percentile(P::P99),
                A::Percentile(P::P999),
                A::Mean,
                A::Max,
                A::Min,
            ],
            _ => &[],
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The percentiles a [`crate::metrics::Dist`] keeps.
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregation {
    Percentile(Percentile),
    Mean,
    Max,
    Min,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
        }
    }

    /// Whether `observed OP threshold` holds. `==` allows a relative 1e-9 so that a value that
    /// went through a unit conversion still compares equal.
    pub fn holds(self, observed: f64, threshold: f64) -> bool {
        match self {
            Op::Lt => observed < threshold,
            Op::Le => observed <= threshold,
            Op::Gt => observed > threshold,
            Op::Ge => observed >= threshold,
            Op::Eq => {
                (observed - threshold).abs() <= 1e-9 * observed.abs().max(threshold.abs()).max(1.0)
            }
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// The right-hand side of an assertion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A fixed value in the metric's canonical unit ([`MetricKind::unit`]).
    Absolute(f64),
    /// The baseline's value of the same stage and metric, times `factor`.
    Baseline { factor: f64 },
}

/// One parsed SLA assertion, e.g. `ttft.p95 < 200ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct Assertion {
    /// The text as written (trimmed), reported back in verdicts.
    pub expr: String,
    pub metric: Metric,
    /// `None` exactly for metrics that are single numbers (throughputs, rates).
    pub aggregation: Option<Aggregation>,
    pub op: Op,
    pub threshold: Threshold,
}

impl Assertion {
    /// The unit of the threshold and of the observed value.
    pub fn unit(&self) -> &'static str {
        self.metric.kind().unit()
    }

    /// `ttft.p95` / `error_rate`: the metric as it is named in reports.
    pub fn metric_ref(&self) -> String {
        match self.aggregation {
            Some(a) => format!("{}.{a}", self.metric),
            None => self.metric.to_string(),
        }
    }
}

impl fmt::Display for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

/// An assertion with where it applies: a scenario-level one (every stage) or a stage's own,
/// and whether failing it stops the run at once.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScopedAssertion {
    /// Serialised as the text as written.
    #[serde(rename = "expr")]
    pub assertion: Assertion,
    /// `None`: evaluated on every measured stage.
    pub stage: Option<String>,
    pub abort_on_fail: bool,
}

impl ScopedAssertion {
    /// A scenario-level assertion that does not abort.
    pub fn everywhere(assertion: Assertion) -> Self {
        ScopedAssertion {
            assertion,
            stage: None,
            abort_on_fail: false,
        }
    }

    /// An assertion on stage `stage` only.
    pub fn on(assertion: Assertion, stage: impl Into<String>) -> Self {
        ScopedAssertion {
            assertion,
            stage: Some(stage.into()),
            abort_on_fail: false,
        }
    }
}

impl std::str::FromStr for Assertion {
    type Err = super::parse::SlaError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        super::parse::parse(s)
    }
}

/// Serialised as the text as written, so a plan's JSON (and its hash) holds the expression.
impl serde::Serialize for Assertion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.expr)
    }
}

impl<'de> serde::Deserialize<'de> for Assertion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for Assertion {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Assertion".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}
