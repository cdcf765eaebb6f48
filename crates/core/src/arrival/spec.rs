//! How requests arrive, as the scenario states it: the arrival processes a stage may use. The
//! scenario parses them, the plan compiler expands them into schedules (`schedule.rs`), and the
//! results name each stage's kind ([`ArrivalKind`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::{Burstiness, Duration, Rate};

/// How requests arrive. Open-loop arrivals are scheduled ahead by the plan compiler; a
/// closed-loop one has `clients` workers each sending its next request when the last ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ArrivalSpec {
    /// A fixed interval of `1/rate`.
    Constant { rate: Rate },
    /// Exponential inter-arrival times (coefficient of variation 1).
    Poisson { rate: Rate },
    /// Gamma inter-arrival times: `burstiness` 1 is Poisson, < 1 burstier, > 1 more regular.
    Gamma { rate: Rate, burstiness: Burstiness },
    /// Closed loop: `clients` workers.
    Concurrency { clients: u32 },
    /// Open loop (inhomogeneous Poisson) whose rate goes from `from` to `to` over `over`,
    /// linearly or, with `steps`, in that many equal stairs; it stays at `to` afterwards.
    Ramp {
        from: Rate,
        to: Rate,
        over: Duration,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        steps: Option<u32>,
    },
    /// Closed loop whose client count grows from `from` to `to` over `over`: one more client
    /// every `over / (to − from)`, or, with `steps`, in that many equal stairs.
    RampConcurrency {
        from: u32,
        to: u32,
        over: Duration,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        steps: Option<u32>,
    },
    /// Replays the timestamps of the stage's `trace` dataset, `speedup` times faster, from
    /// `start` into the trace for at most `window` of trace time.
    Trace {
        speedup: f64,
        start: Duration,
        window: Option<Duration>,
    },
}

/// The kind of load a stage applied, as results name it (`planned.arrival`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalKind {
    /// Open loop at a fixed interval.
    #[default]
    Constant,
    /// Open loop, exponential gaps.
    Poisson,
    /// Open loop, gamma gaps.
    Gamma,
    /// Closed loop with a fixed number of clients.
    Concurrency,
    /// Open loop whose rate changes over time.
    Ramp,
    /// Closed loop whose client count grows over time.
    RampConcurrency,
    /// A replayed trace's timestamps.
    Trace,
    /// A rate or concurrency search (its probes are stages of their own).
    Search,
}

impl ArrivalSpec {
    /// The kind of this arrival.
    pub fn kind(&self) -> ArrivalKind {
        match self {
            ArrivalSpec::Constant { .. } => ArrivalKind::Constant,
            ArrivalSpec::Poisson { .. } => ArrivalKind::Poisson,
            ArrivalSpec::Gamma { .. } => ArrivalKind::Gamma,
            ArrivalSpec::Concurrency { .. } => ArrivalKind::Concurrency,
            ArrivalSpec::Ramp { .. } => ArrivalKind::Ramp,
            ArrivalSpec::RampConcurrency { .. } => ArrivalKind::RampConcurrency,
            ArrivalSpec::Trace { .. } => ArrivalKind::Trace,
        }
    }

    /// The offered rate of a steady open-loop arrival; `None` for ramps, traces and closed loops.
    pub fn steady_rate(&self) -> Option<Rate> {
        match self {
            ArrivalSpec::Constant { rate }
            | ArrivalSpec::Poisson { rate }
            | ArrivalSpec::Gamma { rate, .. } => Some(*rate),
            _ => None,
        }
    }
}

impl ArrivalKind {
    /// The name results and reports use (`ramp-concurrency`).
    pub fn as_str(self) -> &'static str {
        match self {
            ArrivalKind::Constant => "constant",
            ArrivalKind::Poisson => "poisson",
            ArrivalKind::Gamma => "gamma",
            ArrivalKind::Concurrency => "concurrency",
            ArrivalKind::Ramp => "ramp",
            ArrivalKind::RampConcurrency => "ramp-concurrency",
            ArrivalKind::Trace => "trace",
            ArrivalKind::Search => "search",
        }
    }
}

impl std::fmt::Display for ArrivalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
