//! The outcome of one assertion, as recorded in `results.json`: pass, fail, or inconclusive
//! when the data cannot say (the metric's confidence interval straddles the threshold, too few
//! samples for an interval, or a flag on an untrusted stage could have produced it), and the
//! rule that decided it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::grammar::{Assertion, Metric};
use crate::metrics::Distortion;

/// What an assertion's numbers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlaOutcome {
    /// The whole interval meets the threshold (or, without one, the value does).
    Pass,
    /// The whole interval breaks it.
    #[default]
    Fail,
    /// The interval straddles the threshold, there were too few samples for one, or the
    /// stage's numbers are untrusted.
    Inconclusive,
}

impl SlaOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            SlaOutcome::Pass => "pass",
            SlaOutcome::Fail => "fail",
            SlaOutcome::Inconclusive => "inconclusive",
        }
    }
}

/// The interval the verdict was decided on, in the unit of `observed`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerdictInterval {
    pub low: f64,
    pub high: f64,
    /// The coverage the interval achieves.
    pub confidence: f64,
    /// `samples` (one run's requests) or `rounds` (across repeated rounds).
    pub across: Across,
    /// A confidence sequence, valid at whatever point the stage stopped (an `until-decided`
    /// stage), rather than a fixed-sample interval. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sequential: bool,
}

/// What an interval is built from, and what "more" of it would mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Across {
    /// The requests of one run.
    Requests,
    /// Repeated rounds of the stage.
    Rounds,
    /// Two runs (a `baseline` threshold): the bootstrap of their ratio.
    Runs,
}

impl Across {
    /// What "more" of it is: `requests`, `rounds`, `runs`.
    pub fn noun(self) -> &'static str {
        match self {
            Across::Requests => "requests",
            Across::Rounds => "rounds",
            Across::Runs => "runs",
        }
    }
}

/// The most rounds a stage may run (`rounds N`, `--rounds N`).
pub const MAX_ROUNDS: u64 = 100;

/// `100000` as `100,000`.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How much more data would likely decide an inconclusive assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MoreNeeded {
    pub count: u64,
    pub of: Across,
    /// Not even [`MoreNeeded::cap`] requests (or rounds) in all would decide it: `count` only
    /// reaches the cap, and the advice is to loosen the threshold. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
}

impl MoreNeeded {
    /// The most requests, or rounds, a hint speaks of: past it, a number would only mislead.
    pub fn cap(of: Across) -> u64 {
        match of {
            Across::Requests | Across::Runs => 100_000,
            Across::Rounds => MAX_ROUNDS,
        }
    }
}

/// "about 181 more requests would likely decide it", or, past the cap, what to do instead.
impl std::fmt::Display for MoreNeeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let noun = self.of.noun();
        if !self.capped {
            return write!(f, "about {} more {noun} would likely decide it", self.count);
        }
        let cap = grouped(MoreNeeded::cap(self.of));
        match self.of {
            Across::Requests => write!(
                f,
                "a threshold this close needs more than {cap} {noun}: loosen it, or judge it \
                 across `rounds`"
            ),
            Across::Rounds | Across::Runs => write!(
                f,
                "a threshold this close needs more than {cap} {noun}: loosen it"
            ),
        }
    }
}

// One assertion's verdict on one stage. In `results.json` it is an object that writes the
// assertion as its text (`expr`) and the metric's unit (`unit`) beside the numbers. (Not a doc
// comment: the JSON Schema, which doc comments feed, has no description of it.)
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(transform = unit_member)]
pub struct SlaVerdict {
    /// The assertion as written, e.g. `ttft.p95 < 200ms`.
    #[serde(rename = "expr")]
    pub assertion: Assertion,
    /// The stage it was evaluated on; `null` for a scenario-level assertion over all stages.
    pub stage: Option<String>,
    /// The metric's observed value, in the unit of the threshold (ms, %, req/s, tok/s).
    pub observed: f64,
    /// The threshold, in the same unit.
    pub threshold: f64,
    /// `outcome` is `pass`.
    pub passed: bool,
    /// Pass, fail or inconclusive (results written before outcomes existed read as pass or
    /// fail from `passed`).
    #[serde(default)]
    pub outcome: SlaOutcome,
    /// The confidence interval of `observed` the outcome was decided on, where the metric has
    /// one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<VerdictInterval>,
    /// For an inconclusive outcome: about how many more requests (or rounds) would likely
    /// decide it, when that can be estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more: Option<MoreNeeded>,
    /// Which rule decided it: the numbers as they are, or, on an untrusted stage, whether a
    /// flag could have produced it (see `docs/sla.md`). Absent in results from before
    /// schema 3. *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis: Option<Basis>,
    /// Why the verdict is what it is when the numbers alone do not say, e.g. "no ttft samples"
    /// (the assertion then fails with `observed` 0), "no baseline given", or why it is
    /// inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Whether the verdict counts in the run's gate: false for a sweep point's verdict past
    /// the sweep's knee (reported, not gating: finding where the SLAs stop holding is what a
    /// sweep is for) unless its assertion says `every-point=#true`. Written only when false.
    #[serde(default = "gates_by_default")]
    pub gates: bool,
    /// No value was observed (no sample of the metric: every request of the stage failed, or
    /// the API has no such figure; no telemetry; no such window or group): `observed` is then
    /// 0 and means nothing, `note` says why. Written only when true. *Added in schema 3.*
    #[serde(default)]
    pub unobserved: bool,
}

fn gates_by_default() -> bool {
    true
}

/// The `unit` member: written from the assertion's metric, read back by nobody (the metric
/// says it), so it is in the schema but not a field.
fn unit_member(schema: &mut schemars::Schema) {
    if let Some(props) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
        props.insert(
            "unit".into(),
            serde_json::json!({
                "description": "The unit of `observed` and `threshold`.",
                "type": "string",
            }),
        );
    }
    if let Some(required) = schema.get_mut("required").and_then(|r| r.as_array_mut()) {
        let at = required
            .iter()
            .position(|r| r == "threshold")
            .map_or(required.len(), |i| i + 1);
        required.insert(at, "unit".into());
    }
}

/// Members in the order the struct with a `unit` field wrote them.
impl Serialize for SlaVerdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut v = s.serialize_struct("SlaVerdict", 12)?;
        v.serialize_field("expr", &self.assertion)?;
        v.serialize_field("stage", &self.stage)?;
        v.serialize_field("observed", &self.observed)?;
        v.serialize_field("threshold", &self.threshold)?;
        v.serialize_field("unit", self.unit())?;
        v.serialize_field("passed", &self.passed)?;
        v.serialize_field("outcome", &self.outcome)?;
        optional(&mut v, "interval", &self.interval)?;
        optional(&mut v, "more", &self.more)?;
        optional(&mut v, "basis", &self.basis)?;
        optional(&mut v, "note", &self.note)?;
        if self.gates {
            v.skip_field("gates")?;
        } else {
            v.serialize_field("gates", &self.gates)?;
        }
        if self.unobserved {
            v.serialize_field("unobserved", &self.unobserved)?;
        } else {
            v.skip_field("unobserved")?;
        }
        v.end()
    }
}

fn optional<V: serde::ser::SerializeStruct, T: Serialize>(
    v: &mut V,
    key: &'static str,
    value: &Option<T>,
) -> Result<(), V::Error> {
    match value {
        Some(value) => v.serialize_field(key, value),
        None => v.skip_field(key),
    }
}

impl SlaVerdict {
    /// The unit of `observed` and `threshold`: the metric's (`ms`, `%`, `req/s`; empty for
    /// plain numbers).
    pub fn unit(&self) -> &'static str {
        self.assertion.unit()
    }

    /// The assertion's metric.
    pub fn metric(&self) -> Metric {
        self.assertion.metric
    }

    /// How far `observed` is from `threshold`, relative to the threshold (`0.157` = 15.7 % over),
    /// or `None` when the threshold is 0.
    pub fn relative_margin(&self) -> Option<f64> {
        // Nothing observed: no distance to the threshold either.
        (!self.unobserved && self.threshold != 0.0 && self.threshold.is_finite())
            .then(|| (self.observed - self.threshold) / self.threshold.abs())
    }

    /// Sets the outcome (and `passed` with it).
    pub fn set_outcome(&mut self, outcome: SlaOutcome) {
        self.outcome = outcome;
        self.passed = outcome == SlaOutcome::Pass;
    }
}

/// Which rule decided a verdict, as `results.json` records it (`basis`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum Basis {
    /// No flag bears on it: the numbers as they are.
    Numbers,
    /// The stage is untrusted and `untrusted "judge"` asked for its numbers as they are.
    Judged,
    /// Every flag on the stage could only have moved the value away from this outcome.
    Unmoved { by: Vec<Distortion> },
    /// A latency's pass that holds at the planned load: the closed loop's clients were idle
    /// `idle_share` of their time, and the value scaled up by `1 / (1 - idle_share)` (what
    /// the missing load could have added at most, by Little's law) is `scaled`, which still
    /// passes. *Added in schema 3.*
    LoadBounded { idle_share: f64, scaled: f64 },
    /// A failure that holds net of what the client may have added to each request (its send
    /// lag and how late it read): up to `added_ms` at this figure.
    NetOfClient { added_ms: f64 },
    /// A failure of the error rate that holds without the failures a starved client can
    /// cause itself (`removed`: timeouts, cancelled requests).
    WithoutClientFailures { removed: u64 },
    /// Undecided: net of what the client may have added (up to `added_ms` at this figure)
    /// the value no longer shows the failure; it is `margin` (in its unit) past the
    /// threshold.
    ClientMayHaveAdded { added_ms: f64, margin: f64 },
    /// Undecided: without the `removed` failures a starved client can cause, the error rate
    /// no longer shows the failure.
    ClientFailuresMayExplain { removed: u64 },
    /// A rate's failure that holds when the server is credited with what the client's
    /// lateness could have cost it: the stage's count over the least wall time a punctual
    /// client could have taken (`withheld_ms` less than the measured one; the client's own
    /// timeouts counted as completed) is at most `credited`, in the metric's unit.
    /// *Added in schema 3.*
    CreditedServer { withheld_ms: f64, credited: f64 },
    /// Undecided: credited so, the server could have reached `credited`, which meets the
    /// threshold. *Added in schema 3.*
    ClientMayHaveWithheld { withheld_ms: f64, credited: f64 },
    /// Undecided: on a trusted stage, the client's event loop stalled enough to have produced
    /// this pass: any read may have been up to `stall_ms` late (the loop probe's longest
    /// delay plus its period), and moved back by that the value no longer passes; it is
    /// `margin` (ms) from the threshold. *Added in schema 3.*
    ReadStall { stall_ms: f64, margin: f64 },
    /// Undecided: the client's delay could have produced this failure, and this metric has
    /// no measured bound on what it added (goodput, a closed loop's or a session's rates, a
    /// token rate with requests the client gave up on).
    ClientUnbounded,
    /// An `until-decided` stage whose sequence over every request sent is undecided: the
    /// outcome is its complete prefix's at the stop, the first `requests` requests in send
    /// order, all completed (`until_decided.prefix`). *Added in schema 3.*
    Prefix { requests: u64 },
    /// Undecided: a flag on the stage (`flag`, its kind) could have produced this outcome.
    Flagged {
        flag: String,
        distortion: Distortion,
        would: SlaOutcome,
    },
}

impl Basis {
    /// The rule in words, for the verdict's note.
    pub fn sentence(&self, outcome: SlaOutcome) -> String {
        let verb = match outcome {
            SlaOutcome::Pass => "passes",
            _ => "fails",
        };
        match self {
            Basis::Numbers => "numbers judged as they are".into(),
            Basis::Judged => {
                "judged on its numbers although the stage is untrusted (`untrusted \"judge\"`)"
                    .into()
            }
            Basis::Unmoved { by } if by.as_slice() == [Distortion::ClientDelay] => {
                format!("{verb} even if the client added nothing")
            }
            Basis::Unmoved { by } => {
                let nouns: Vec<&str> = by.iter().map(|d| d.noun()).collect();
                format!(
                    "{verb} whatever {} did: it could only have moved the value the other way",
                    nouns.join(" and ")
                )
            }
            Basis::LoadBounded { idle_share, scaled } => format!(
                "{verb} at the planned load too: its clients were idle {:.2}% of their time, \
                 and scaled for that ({scaled:.2}) it still {verb}",
                idle_share * 100.0
            ),
            Basis::NetOfClient { added_ms } => {
                format!("fails even after removing up to {added_ms:.2} ms the client added")
            }
            Basis::WithoutClientFailures { removed: 0 } => "fails on failures a starved client \
                cannot cause (none timed out or was cancelled)"
                .into(),
            Basis::WithoutClientFailures { removed } => format!(
                "fails even without the {removed} failures a starved client can cause \
                 (timeouts, cancelled)"
            ),
            Basis::ReadStall { stall_ms, margin } => format!(
                "undecided: the client's event loop stalled, so a read may have been up to \
                 {stall_ms:.2} ms late, and the margin is {margin:.2} ms"
            ),
            Basis::ClientMayHaveAdded { added_ms, margin } => format!(
                "undecided: the client may have added up to {added_ms:.2} ms and the margin is \
                 {margin:.2} ms"
            ),
            Basis::CreditedServer {
                withheld_ms,
                credited,
            } => format!(
                "fails even after crediting the server with the {withheld_ms:.2} ms the client \
                 withheld: at most {credited:.2} had it sent and read on time"
            ),
            Basis::ClientMayHaveWithheld {
                withheld_ms,
                credited,
            } => format!(
                "undecided: credited with the {withheld_ms:.2} ms the client withheld, the \
                 server could have reached {credited:.2}"
            ),
            Basis::ClientFailuresMayExplain { removed } => format!(
                "undecided: without the {removed} failures a starved client can cause \
                 (timeouts, cancelled) it no longer shows the failure"
            ),
            Basis::Prefix { requests } => format!(
                "{verb}: decided on the first {requests} requests in send order, all completed"
            ),
            Basis::ClientUnbounded => "undecided: the client's delay may explain it, and what \
                it added is not bounded for this metric"
                .into(),
            Basis::Flagged {
                distortion, would, ..
            } => format!(
                "undecided: {} could have made it {}",
                distortion.noun(),
                would.as_str()
            ),
        }
    }
}
