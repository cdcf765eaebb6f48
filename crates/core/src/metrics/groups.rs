//! A stage's results per label (`model`, `class`: see `protocol::Grouping`): each label's
//! requests summarised as a stage of their own ([`GroupSummary`]), and the priority check of
//! a stage whose classes carry different priorities ([`PriorityCheck`]): a class the server
//! was told to serve first that was served slower than one it was told to serve later, shown
//! by their intervals rather than their point estimates.

use super::dist::{Dist, Figure};
use super::priority::{PairOutcome, PriorityCheck, PriorityPair};
use super::record::RequestRecord;
use super::summary::{GroupSummary, StageSummary};
use super::vocab::LatencyMetric;
use crate::protocol::{Group, Grouping, LabelRef};

impl StageSummary {
    /// The summary of one label's requests, when the stage has that label.
    pub fn group(&self, on: &LabelRef) -> Option<&StageSummary> {
        self.groups
            .iter()
            .find(|g| g.by == on.by && g.label == on.name)
            .map(|g| &g.summary)
    }
}

/// One grouping's accumulators: one per label (a stage aggregator; generic so that this file
/// and the aggregator's do not import each other).
pub(super) struct GroupAcc<T> {
    group: Group,
    parts: Vec<T>,
}

impl<T> GroupAcc<T> {
    pub(super) fn new(group: &Group, part: impl Fn() -> T) -> GroupAcc<T> {
        GroupAcc {
            group: group.clone(),
            parts: group.labels.iter().map(|_| part()).collect(),
        }
    }

    /// The accumulator of `r`'s label, when it has one in this grouping.
    pub(super) fn part_of(&mut self, r: &RequestRecord) -> Option<&mut T> {
        let i = r.labels.get(self.group.by)?;
        self.parts.get_mut(usize::from(i))
    }

    /// The group's configuration: its grouping and labels.
    pub(super) fn group(&self) -> &Group {
        &self.group
    }

    /// Empty parts for the same group, each made by `empty_like` from this one's.
    pub(super) fn empty_like(&self, empty_like: impl Fn(&T) -> T) -> GroupAcc<T> {
        GroupAcc {
            group: self.group.clone(),
            parts: self.parts.iter().map(empty_like).collect(),
        }
    }

    /// Takes in another accumulator's parts, label by label, by `merge`; `false`, taking in
    /// nothing, when its group differs (another grouping, or other labels).
    pub(super) fn merge(&mut self, other: GroupAcc<T>, merge: impl Fn(&mut T, T)) -> bool {
        if self.group != other.group {
            return false;
        }
        for (p, o) in self.parts.iter_mut().zip(other.parts) {
            merge(p, o);
        }
        true
    }

    /// Each label's summary, by `summarise`.
    pub(super) fn summaries(&self, summarise: impl Fn(&T) -> StageSummary) -> Vec<GroupSummary> {
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

    pub(super) fn finish(self, finish: impl Fn(T) -> StageSummary) -> Vec<GroupSummary> {
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
