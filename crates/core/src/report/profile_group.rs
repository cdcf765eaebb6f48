//! A profile's table, as the reports and plots read it: one row per sweep point or search
//! probe, the group they make, and the group's answer in words. Data only: `profile.rs`
//! gathers it, `profile_quality.rs` adds the points' accuracy.

use serde::Serialize;

use super::numbers::short;
use crate::protocol::Answer;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProfileRow {
    pub stage: String,
    /// Offered rate (req/s) or clients.
    pub load: f64,
    /// What the schedule actually held (sent / planned duration) for open-loop points; the
    /// knee rule compares throughput with this, so a Poisson draw off its mean is not a knee.
    pub scheduled: f64,
    pub ttft_p50_ms: f64,
    pub ttft_p99_ms: f64,
    pub itl_p99_ms: f64,
    pub e2e_p99_ms: f64,
    /// Completed requests per second: the x of the profile plot.
    pub achieved_per_s: f64,
    pub output_tokens_per_s: f64,
    pub saturated: bool,
    pub client_bound: bool,
    /// The point's one verdict (`sla::point_outcome`; a search probe's own): `pass`, `fail`
    /// or `inconclusive` (undecided is not failed).
    pub outcome: &'static str,
    /// ✅, ❌ or ❔, as the SLA table marks the same outcome.
    pub icon: &'static str,
    /// The point passed: `outcome` is `pass`.
    pub sla_ok: bool,
    /// Its verdicts count in the gate (false past a sweep's knee: reported only).
    pub gates: bool,
    pub knee: bool,
    /// The point's accuracy with its interval, when its answers were scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<RowAccuracy>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProfileGroup {
    pub group: String,
    /// `req/s` or `clients`.
    pub axis: &'static str,
    pub kind: &'static str,
    /// Sorted by load.
    pub rows: Vec<ProfileRow>,
    pub knee_load: Option<f64>,
    /// Highest load whose point passed, below the lowest that failed (a search's answer).
    pub sla_max_load: Option<f64>,
    /// While points are undecided, the highest the SLA-compliant maximum may be (counting
    /// them as passed); `None` when nothing leaves it open.
    pub sla_max_upper: Option<f64>,
    /// Points whose verdict is undecided.
    pub undecided: usize,
    /// The knee and the SLA-compliant maximum in words ([`ProfileGroup::answer`]).
    pub answer: String,
    /// The plot's file name (written beside the report unless plots are off).
    pub plot: String,
    /// Latency thresholds of the SLA assertions on the group's points, as (ms, assertion),
    /// drawn on the plot.
    #[serde(skip)]
    pub thresholds: Vec<(f64, String)>,
    /// How the target's requests were answered: which metrics its points have (no TTFT or
    /// ITL for answers that come whole, no output for a pooling API's), read through the
    /// vocabulary's `ApiScope`.
    #[serde(skip)]
    pub answer_kind: Answer,
    /// Its points have TTFT and ITL (the tables' columns).
    pub streamed: bool,
    /// Its points have output tokens (the tables' column).
    pub generates: bool,
    /// The accuracy-against-load plot's file name, when a point scored answers (the tables'
    /// accuracy column too).
    pub quality_plot: Option<String>,
    /// The `accuracy` thresholds asserted on its points, drawn on that plot.
    #[serde(skip)]
    pub accuracy_thresholds: Vec<(f64, String)>,
}

impl ProfileGroup {
    /// `knee at 20 req/s · SLA-compliant maximum 15 req/s (up to 20 req/s: 1 point undecided)`:
    /// the group's answer in words, the same in the terminal, the reports and the plot.
    pub fn answer(&self) -> String {
        let at = |v: f64| format!("{} {}", short(v), self.axis);
        let knee = match self.knee_load {
            Some(k) => format!("knee at {}", at(k)),
            None if self.kind == "sweep" => "knee not reached".to_string(),
            None => "no knee (a search)".to_string(),
        };
        let max = match (self.sla_max_load, self.sla_max_upper) {
            (Some(low), Some(high)) => format!(
                "SLA-compliant maximum {} (up to {}: {} undecided)",
                at(low),
                at(high),
                points(self.undecided)
            ),
            (None, Some(high)) => format!(
                "SLA-compliant maximum not shown: no point decided to pass (up to {}: {} \
                 undecided)",
                at(high),
                points(self.undecided)
            ),
            (Some(low), None) => format!("SLA-compliant maximum {}", at(low)),
            (None, None) => "SLA-compliant maximum none (no point met every SLA)".to_string(),
        };
        format!("{knee} · {max}")
    }
}

pub(super) fn points(n: usize) -> String {
    if n == 1 {
        "1 point".to_string()
    } else {
        format!("{n} points")
    }
}

/// A point's accuracy, in percent, with its interval, and in words for the tables.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RowAccuracy {
    pub value: f64,
    pub low: f64,
    pub high: f64,
    /// `94.3 % [91.1, 96.4]`.
    pub text: String,
}
