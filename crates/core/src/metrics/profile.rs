//! Load-profile markers on stages (which sweep or search a stage belongs to, at what load) and
//! the rate search's summary (the saturation check applied to every point is `saturation.rs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::arrival::{LoadPoint, PointKind};

/// Marks a stage as one point of a load profile, so reports can gather the points of a group.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProfilePoint {
    /// Which point of which profile, as planned.
    #[serde(flatten)]
    pub point: LoadPoint,
    /// Completed requests fell short of the offered rate: the server could not keep up.
    #[serde(default)]
    pub saturated: bool,
    /// The client could not send on time (send rate short of the offered rate, or the stage's
    /// validity check distrusts the client): the point says nothing about the server.
    #[serde(default)]
    pub client_bound: bool,
    /// A probe's verdict: did the stage's SLAs hold?
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
}

impl ProfilePoint {
    /// The point as planned, before it ran.
    pub fn planned(point: LoadPoint) -> Self {
        ProfilePoint {
            point,
            ..ProfilePoint::default()
        }
    }

    /// The point's load on one axis: offered rate, else clients.
    pub fn load(&self) -> f64 {
        self.point.load()
    }
}

/// One probe of a rate search, with the metrics that decided it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProbeResult {
    /// Name of the probe's stage in `stages`.
    pub stage: String,
    /// The offered rate; for a concurrency probe, the request rate it achieved.
    pub rate_per_s: f64,
    /// A concurrency probe's closed-loop clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    pub passed: bool,
    pub saturated: bool,
    pub client_bound: bool,
    pub ttft_p99_ms: f64,
    pub itl_p99_ms: f64,
    pub output_tokens_per_s: f64,
    pub requests_per_s: f64,
    /// The assertions that failed, when it did not pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

/// What a rate (or concurrency) search found.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SearchSummary {
    /// The stage that declared the search.
    pub group: String,
    /// Highest probed rate at which the SLAs held; `None` when even `from` failed.
    pub answer_rate_per_s: Option<f64>,
    /// A concurrency search's answer: the most clients at which the SLAs held (then
    /// `answer_rate_per_s` is `None`, and bounds and bracket count clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_clients: Option<u32>,
    /// True for a search over closed-loop clients rather than the rate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub concurrency: bool,
    /// Highest passing rate and lowest failing rate: the answer lies between them.
    pub bracket_low: Option<f64>,
    pub bracket_high: Option<f64>,
    /// The requested tolerance (a fraction) and the bounds searched.
    pub tolerance: f64,
    pub from: f64,
    pub to: f64,
    /// Why the search ended.
    pub stop_reason: crate::arrival::StopReason,
    /// Seconds spent probing.
    pub elapsed_s: f64,
    /// Every probe in the order it ran.
    pub probes: Vec<ProbeResult>,
}
