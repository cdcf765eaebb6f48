//! A stage's results per label (`model`, `class`: see `protocol::Grouping`): each label's
//! requests summarised as a stage of their own ([`GroupSummary`]), and the priority check of
//! a stage whose classes carry different priorities ([`PriorityCheck`]): a class the server
//! was told to serve first that was served slower than one it was told to serve later, shown
//! by their intervals rather than their point estimates.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::aggregate::StageAggregator;
use super::dist::{Dist, Figure};
use super::record::RequestRecord;
use super::summary::StageSummary;
use super::vocab::LatencyMetric;
use crate::protocol::{Group, Grouping, LabelRef};

/// One label's requests of a stage, summarised as a stage of their own (latencies with their
/// intervals, counts, throughput over the stage's wall time). *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupSummary {
    pub by: Grouping,
    pub label: String,
    /// A class's priority as sent to the server (lower is served first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    pub summary: StageSummary,
}

/// Whether a stage's classes were served in their priority order. *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PriorityCheck {
    /// The latency compared: `ttft` (`e2e` for an API answered whole).
    pub metric: String,
    /// Some class told to go first was served slower than one told to go later, on p50 or
    /// p95, their intervals apart.
    pub inverted: bool,
    /// The stage's `priority-inversion "fail"`: an inversion fails the run's gate.
    pub gates: bool,
    /// Every pair of classes with different priorities, the higher first, on p50 and p95.
    pub pairs: Vec<PriorityPair>,
}

/// One comparison of a higher-priority class with a lower one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PriorityPair {
    /// The class told to go first (the lower `priority` value).
    pub higher: String,
    pub lower: String,
    /// `p50` or `p95`.
    pub figure: String,
    /// The figure of each class, ms.
    pub higher_ms: f64,
    pub lower_ms: f64,
    /// Each figure's confidence interval, where there are enough samples for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub higher_interval: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_interval: Option<(f64, f64)>,
    pub outcome: PairOutcome,
}

/// What a pair's intervals show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PairOutcome {
    /// The higher class's interval lies wholly below the lower's: served first.
    Honoured,
    /// The higher class's interval lies wholly above the lower's: served slower.
    Inverted,
    /// The intervals overlap (or one is missing): nothing shown either way.
    Undecided,
}

impl StageSummary {
    /// The summary of one label's requests, when the stage has that label.
    pub fn group(&self, on: &LabelRef) -> Option<&StageSummary> {
        self.groups
            .iter()
            .find(|g| g.by == on.by && g.label == on.name)
            .map(|g| &g.summary)
    }
}

/// One grouping's accumulators: a stage aggregator per label.
pub(super) struct GroupAcc {
    group: Group,
    parts: Vec<StageAggregator>,
}

impl GroupAcc {
    pub(super) fn new(group: &Group, part: impl Fn() -> StageAggregator) -> GroupAcc {
        GroupAcc {
            group: group.clone(),
            parts: group.labels.iter().map(|_| part()).collect(),
        }
    }

    pub(super) fn record(&mut self, r: &RequestRecord, read: Option<&dyn Fn(u64) -> u64>) {
        if let Some(i) = r.labels.get(self.group.by)
            && let Some(p) = self.parts.get_mut(usize::from(i))
        {
            p.record_with(r, read);
        }
    }

    /// Each label's summary, by `summarise`.
    pub(super) fn summaries(
        &self,
        summarise: impl Fn(&StageAggregator) -> StageSummary,
    ) -> Vec<GroupSummary> {
        self.group
            .labels
            .iter()
            .zip(&self.parts)
            .map(|(l, p)| GroupSummary {
                by: self.group.by,
                label: l.name.clone(),
                priority: l.priority,
                summary: summarise(p),
            })
            .collect()
    }

    pub(super) fn finish(
        self,
        finish: impl Fn(StageAggregator) -> StageSummary,
    ) -> Vec<GroupSummary> {
        let by = self.group.by;
        self.group
            .labels
            .into_iter()
            .zip(self.parts)
            .map(|(l, p)| GroupSummary {
                by,
                label: l.name,
                priority: l.priority,
                summary: finish(p),
            })
            .collect()
    }
}

/// The priority check of a stage's classes, when at least two carry different priorities.
pub fn priority_check(groups: &[GroupSummary], pooled: bool, gates: bool) -> Option<PriorityCheck> {
    let metric = if pooled {
        LatencyMetric::E2e
    } else {
        LatencyMetric::Ttft
    };
    let classes: Vec<(&GroupSummary, i64)> = groups
        .iter()
        .filter(|g| g.by == Grouping::Class)
        .filter_map(|g| Some((g, g.priority?)))
        .collect();
    let mut pairs = Vec::new();
    for (hi, hp) in &classes {
        for (lo, lp) in &classes {
            if hp >= lp {
                continue;
            }
            let (Some(h), Some(l)) = (
                hi.summary.latency.get(metric),
                lo.summary.latency.get(metric),
            ) else {
                continue;
            };
            for figure in [Figure::P50, Figure::P95] {
                pairs.push(pair(&hi.label, &lo.label, h, l, figure));
            }
        }
    }
    if pairs.is_empty() {
        return None;
    }
    Some(PriorityCheck {
        metric: metric.name().to_string(),
        inverted: pairs.iter().any(|p| p.outcome == PairOutcome::Inverted),
        gates,
        pairs,
    })
}

fn pair(higher: &str, lower: &str, h: &Dist, l: &Dist, figure: Figure) -> PriorityPair {
    let interval = |d: &Dist| {
        (d.count > 0)
            .then_some(d.intervals.as_ref())
            .flatten()
            .and_then(|i| i.get(figure).range())
    };
    let (hi, li) = (interval(h), interval(l));
    let outcome = match (hi, li) {
        (Some((_, hh)), Some((ll, _))) if hh < ll => PairOutcome::Honoured,
        (Some((hl, _)), Some((_, lh))) if hl > lh => PairOutcome::Inverted,
        _ => PairOutcome::Undecided,
    };
    let (name, hv, lv) = match figure {
        Figure::P50 => ("p50", h.p50, l.p50),
        _ => ("p95", h.p95, l.p95),
    };
    PriorityPair {
        higher: higher.to_string(),
        lower: lower.to_string(),
        figure: name.to_string(),
        higher_ms: hv,
        lower_ms: lv,
        higher_interval: hi,
        lower_interval: li,
        outcome,
    }
}
