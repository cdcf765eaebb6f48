//! What the vocabulary says of a metric ([`MetricDef`]): its kind and unit ([`MetricKind`],
//! [`Shape`]), which direction is worse ([`Worse`]), what a late client can do to it
//! ([`LateClient`]); and how a distribution is read as one number ([`Aggregation`]). The
//! metrics themselves are in `vocab.rs` and `latency.rs`.

use std::fmt;

use crate::units::trim_float;

/// What kind of value a metric is, which fixes the unit its threshold must be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Milliseconds; written with us, ms, s or m.
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
    /// A pooling API's inputs (texts embedded, documents scored) per second, written
    /// `inputs/s`.
    InputsPerSec,
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
            MetricKind::InputsPerSec => "inputs/s",
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
            MetricKind::ReqPerSec | MetricKind::TokPerSec | MetricKind::InputsPerSec => Shape::Rate,
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
    /// Nothing: it judges what the answers say (accuracy, repetition), which neither the
    /// client's pace nor the load, a warm cache or a throttled GPU change (they change when
    /// an answer comes, not what it is).
    Answers,
    /// Nothing: measured before the first request (the server's start to ready), so neither
    /// the client's pace nor the load it offered reaches it.
    BeforeLoad,
}

/// Which APIs have a metric, by how they answer (`protocol::Answer`): a pooling API's answer
/// comes whole, so it has no first token, no gaps between tokens and no output tokens; a
/// generation API asked for its whole answer has output tokens, but no first token or gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiScope {
    /// Every API.
    All,
    /// The APIs that stream generated text (chat, completions, responses): what needs tokens
    /// to arrive one by one (TTFT, ITL, TPOT).
    Streamed,
    /// The APIs that generate text, streamed or answered whole (`stream #false`): what needs
    /// output tokens (output throughput).
    Generated,
    /// The pooling APIs, answered whole (embeddings, rerank, score).
    Pooled,
}

impl ApiScope {
    /// Whether an API that answers so has the metric.
    pub fn has(self, answer: crate::protocol::Answer) -> bool {
        match self {
            ApiScope::All => true,
            ApiScope::Streamed => answer.streams(),
            ApiScope::Generated => answer.generates(),
            ApiScope::Pooled => !answer.streams(),
        }
    }
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
    /// The APIs that have it.
    pub scope: ApiScope,
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
            LateClient::LoadOnly | LateClient::Answers | LateClient::BeforeLoad => false,
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
            LateClient::LoadOnly | LateClient::Answers | LateClient::BeforeLoad => false,
        }
    }
}

/// The percentiles a latency distribution (the library's `metrics::Dist`) keeps.
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
    /// Every aggregation a latency distribution (`metrics::Dist`) keeps.
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
