//! How an `until-decided` stage ran ([`UntilDecided`]): its minimum and maximum, why and
//! when it stopped sending ([`UntilStop`]), and what was still in flight at a look
//! ([`Pending`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How an `until-decided` stage ran: sent at least its minimum, then until every assertion
/// on it was decided, or its maximum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UntilDecided {
    /// The minimum: requests (`requests 200 until-decided …`; for a `duration` minimum of an
    /// open-loop stage, the requests its schedule sends in that time)…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_requests: Option<u64>,
    /// … and seconds (`duration "60s" until-decided …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_s: Option<f64>,
    /// The maximum: requests (an open-loop stage's whole schedule) or seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_s: Option<f64>,
    /// The number of requests the stage's confidence sequences are tightest at.
    pub tuned_for: u64,
    /// Why it stopped sending.
    pub stopped: UntilStop,
    /// Seconds from the stage's start to the look that decided it (or to the end of sending).
    pub stopped_at_s: f64,
    /// Requests completed at that look (those still in flight were then drained and count
    /// in the stage's figures).
    pub stopped_at_requests: u64,
    /// How many times the stage was judged while it ran.
    pub looks: u32,
    /// At a look while the stage runs: the requests begun whose values are not known yet.
    /// Never in a finished stage's summary.
    #[serde(skip)]
    #[schemars(skip)]
    pub pending: Option<Pending>,
    /// Which look stopped it: `in_flight` (every request begun, those in flight as unknown)
    /// or `prefix` (the complete prefix). Only on a stage that `stopped` `decided`.
    /// *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<super::DecidedBy>,
    /// The complete prefix at the last look (the stop): its length and its verdicts. A
    /// verdict the whole stage leaves undecided is the prefix's decision here. Absent when
    /// no look judged it. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<super::PrefixLook>,
}

/// Requests an `until-decided` stage has begun but not yet recorded, at a look: the
/// verdicts then hold whatever those turn out to be (a failure or a success, a latency from
/// 0 to `longest_ms`), so that a stage stopped on them is decided the same way once they
/// are drained.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pending {
    pub requests: u64,
    /// The longest a successful request's latency can be: its timeout.
    pub longest_ms: f64,
}

/// Why an `until-decided` stage stopped sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UntilStop {
    /// Every assertion holding it open was decided (pass or fail).
    Decided,
    /// It sent its maximum undecided.
    MaxReached,
    /// Ctrl-C, a signal, or an `abort-on-fail` assertion stopped it first.
    Interrupted,
}

impl UntilStop {
    pub fn as_str(self) -> &'static str {
        match self {
            UntilStop::Decided => "decided",
            UntilStop::MaxReached => "max reached",
            UntilStop::Interrupted => "interrupted",
        }
    }
}
