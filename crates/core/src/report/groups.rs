//! A stage split by `model` or `class`, as reports show it: a row per label (its requests,
//! errors, throughput and first-token and end-to-end latencies with their intervals), and
//! the priority check in one sentence. The terminal summary, report.md and report.html all
//! read these; names are the user's, so every sink escapes them as it escapes any text.

use serde::Serialize;

use super::numbers::num;
use std::borrow::Cow;

use crate::metrics::{Dist, Figure, LatencyMetric as L, PairOutcome, StageSummary};

/// One label of a stage, its figures formatted.
#[derive(Debug, Serialize)]
pub struct GroupRow {
    /// `model` or `class`.
    pub by: String,
    pub label: String,
    /// A class's priority, or empty.
    pub priority: String,
    pub sent: u64,
    pub failed: u64,
    pub requests_per_s: String,
    /// `p50 [low, high]`, and the p95 the same way.
    pub first_p50: String,
    pub first_p95: String,
    pub e2e_p95: String,
    /// The label's answers' accuracy and LLM judge's score (docs/quality.md), empty where
    /// not measured.
    pub accuracy: String,
    pub judge: String,
}

/// The rows of every label of a stage, in the scenario's order.
pub fn group_rows(s: &StageSummary) -> Vec<GroupRow> {
    let first = first_metric(s);
    s.groups
        .iter()
        .map(|g| {
            let l = &g.summary.latency;
            let (accuracy, judge) = super::quality::label_cells(g.summary.quality.as_ref());
            GroupRow {
                by: g.by.to_string(),
                label: g.label.clone(),
                priority: g.priority.map(|p| p.to_string()).unwrap_or_default(),
                sent: g.summary.requests.sent,
                failed: g.summary.requests.failed,
                requests_per_s: num(g.summary.throughput.requests_per_s),
                first_p50: figure(&l[first], Figure::P50),
                first_p95: figure(&l[first], Figure::P95),
                e2e_p95: figure(&l[L::E2e], Figure::P95),
                accuracy,
                judge,
            }
        })
        .collect()
}

/// Whether some label of the stage has an accuracy, and a judge's score: the split table's
/// quality columns.
pub fn quality_columns(rows: &[GroupRow]) -> (bool, bool) {
    (
        rows.iter().any(|r| !r.accuracy.is_empty()),
        rows.iter().any(|r| !r.judge.is_empty()),
    )
}

/// TTFT, or E2E for an API answered whole.
fn first_metric(s: &StageSummary) -> L {
    if s.pooled() { L::E2e } else { L::Ttft }
}

/// The label of the first-token column.
pub fn first_label(s: &StageSummary) -> &'static str {
    first_metric(s).label()
}

/// `123 [110, 140]`, `123` without an interval, `–` without a sample.
fn figure(d: &Dist, f: Figure) -> String {
    if d.count == 0 {
        return "–".into();
    }
    let v = num(f.of(d));
    match d.intervals.and_then(|i| i.get(f).range()) {
        Some((lo, hi)) => format!("{v} [{}, {}]", num(lo), num(hi)),
        None => v,
    }
}

/// "priority: INVERTED: class `interactive` (told to go first) was served slower than `batch`:
/// TTFT p50 1815 [1620, 1818] ms against 1424 [1252, 1620] ms", or "priority: honoured …",
/// or "priority: not shown either way …".
pub fn priority_sentence(s: &StageSummary) -> Option<String> {
    let check = s.priority.as_ref()?;
    let shown = |p: &crate::metrics::PriorityPair| {
        let iv = |i: Option<(f64, f64)>| {
            i.map_or_else(String::new, |(lo, hi)| {
                format!(" [{}, {}]", num(lo), num(hi))
            })
        };
        format!(
            "{} {} {}{} ms against {}{} ms",
            check.metric,
            p.figure,
            num(p.higher_ms),
            iv(p.higher_interval),
            num(p.lower_ms),
            iv(p.lower_interval)
        )
    };
    let gate = if check.gates { " (gates the run)" } else { "" };
    if let Some(p) = check
        .pairs
        .iter()
        .find(|p| p.outcome == PairOutcome::Inverted)
    {
        return Some(format!(
            "priority INVERTED{gate}: class `{}` was told to go before `{}` but was served \
             slower: {}",
            p.higher,
            p.lower,
            shown(p)
        ));
    }
    let honoured = check
        .pairs
        .iter()
        .filter(|p| p.outcome == PairOutcome::Honoured)
        .count();
    let first = check.pairs.first()?;
    let decided = check
        .pairs
        .iter()
        .find(|p| p.outcome == PairOutcome::Honoured);
    Some(if let Some(p) = decided {
        format!(
            "priority honoured{gate}: the classes told to go first were served faster where \
             the intervals tell ({honoured} of {} comparisons; {})",
            check.pairs.len(),
            shown(p)
        )
    } else {
        format!(
            "priority: no inversion shown{gate} ({honoured} of {} comparisons show the order \
             honoured, the rest overlap; {})",
            check.pairs.len(),
            shown(first)
        )
    })
}

/// The stages, each followed by its labels' summaries named `stage[model=NAME]`: what
/// `compare` matches between two runs, so each model and class is compared apart.
pub fn with_labels(stages: &[StageSummary]) -> Vec<Cow<'_, StageSummary>> {
    let mut out = Vec::with_capacity(stages.len());
    for s in stages {
        out.push(Cow::Borrowed(s));
        for g in &s.groups {
            let mut part = g.summary.clone();
            part.name = format!("{}[{}={}]", s.name, g.by, g.label);
            out.push(Cow::Owned(part));
        }
    }
    out
}
