//! What a sweep or search is judged on: its curve. A sweep runs past its knee on purpose, so a
//! point past the knee that fails its per-point SLAs is reported but does not gate the run
//! (unless its assertion says `every-point=#true`); the gate on the curve is an assertion on
//! one of its figures, `sla_max_rate > 20 req/s` or `knee_rate >= 15 req/s` (and
//! `sla_max_clients`, `knee_clients` for closed loop), judged once per profile group.
//!
//! Each point has one verdict ([`point_outcome`]): failed when an assertion on it failed,
//! undecided when none failed and one was undecided, passed otherwise. The SLA-compliant
//! maximum is the highest load whose point passed, below the lowest point that failed; an
//! undecided point is not a failed one, so while points are undecided the maximum is a range
//! (those points may pass or fail), and an assertion on it is decided only when the whole
//! range is on one side of its threshold.

use super::evaluate::{Context, judge};
use super::grammar::{ScopedAssertion, Threshold};
use super::profile::profile_inputs;
use super::verdict::{SlaOutcome, SlaVerdict};
use crate::metrics::{
    CurveMetric, PointKind, SearchSummary, StageSummary, knee_load, sweep_points,
};

/// What a verdict that does not gate says, wherever it is shown.
pub const NOT_GATING: &str = "past the sweep's knee: reported, does not gate the run";

/// Every verdict of a run's assertions on its stages, sweeps and searches: the per-stage
/// ones (a sweep's expanded to its points, a search's judged on its answer), points past a
/// sweep's knee marked as not gating, then one verdict per curve assertion and group.
pub fn judge_run(
    assertions: &[ScopedAssertion],
    stages: &[StageSummary],
    searches: &[SearchSummary],
    cx: &Context<'_>,
) -> Vec<SlaVerdict> {
    // `best.` assertions are judged on the configurations' ranking, after this (`configs.rs`).
    let (curve, per_stage): (Vec<ScopedAssertion>, Vec<ScopedAssertion>) = assertions
        .iter()
        .filter(|a| !a.assertion.best)
        .cloned()
        .partition(|a| a.assertion.metric.curve().is_some());
    let (scoped, judged) = profile_inputs(&per_stage, stages, searches);
    let mut verdicts = judge(&scoped, &judged, cx);
    past_the_knee(&mut verdicts, &per_stage, stages);
    let mut on_curves = Vec::new();
    for a in &curve {
        on_curves.extend(judge_curve(a, stages, searches, &verdicts));
    }
    verdicts.extend(on_curves);
    verdicts
}

/// The one verdict of profile point `stage`: failed when any assertion on it failed, undecided
/// when none failed and one was undecided, passed when all passed; `None` when nothing was
/// asserted on it. Every view of a point (the SLA table, the profile table and plot, the
/// terminal summary, the SLA-compliant maximum) reads it from here.
pub fn point_outcome(verdicts: &[SlaVerdict], stage: &str) -> Option<SlaOutcome> {
    let on: Vec<SlaOutcome> = verdicts
        .iter()
        .filter(|v| v.stage.as_deref() == Some(stage))
        .map(|v| v.outcome)
        .collect();
    if on.is_empty() {
        None
    } else if on.contains(&SlaOutcome::Fail) {
        Some(SlaOutcome::Fail)
    } else if on.contains(&SlaOutcome::Inconclusive) {
        Some(SlaOutcome::Inconclusive)
    } else {
        Some(SlaOutcome::Pass)
    }
}

/// The SLA-compliant maximum of points `(load, outcome)` sorted by load (a point with nothing
/// asserted passes): `low`, the highest load whose point passed below the lowest failed one;
/// `high`, the same counting undecided points as passed. Equal when nothing is undecided;
/// `None` when no point qualifies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlaMax {
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl SlaMax {
    pub fn of(points: &[(f64, Option<SlaOutcome>)]) -> SlaMax {
        let mut out = SlaMax {
            low: None,
            high: None,
        };
        for (load, outcome) in points {
            match outcome.unwrap_or(SlaOutcome::Pass) {
                SlaOutcome::Fail => break,
                SlaOutcome::Pass => {
                    out.low = Some(*load);
                    out.high = Some(*load);
                }
                SlaOutcome::Inconclusive => out.high = Some(*load),
            }
        }
        out
    }

    /// Whether undecided points leave the maximum open.
    pub fn is_range(&self) -> bool {
        self.low != self.high
    }
}

/// Marks the verdicts on sweep points past their sweep's knee as not gating, unless their
/// assertion asks for every point.
fn past_the_knee(
    verdicts: &mut [SlaVerdict],
    assertions: &[ScopedAssertion],
    stages: &[StageSummary],
) {
    for group in sweep_groups(stages) {
        let points = sweep_points(stages, &group);
        let Some(knee) = knee_load(&points) else {
            continue;
        };
        let past: Vec<&str> = points
            .iter()
            .filter(|s| s.profile.as_ref().is_some_and(|p| p.load() > knee))
            .map(|s| s.name.as_str())
            .collect();
        for v in verdicts.iter_mut() {
            let on_past = v.stage.as_deref().is_some_and(|s| past.contains(&s));
            let every = assertions.iter().any(|a| {
                a.every_point
                    && a.assertion.expr == v.assertion.expr
                    && a.stage.as_deref().is_none_or(|s| s == group)
            });
            if on_past && !every {
                v.gates = false;
            }
        }
    }
}

/// The groups of the run's sweeps, in the order their first point ran.
fn sweep_groups(stages: &[StageSummary]) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    for p in stages.iter().filter_map(|s| s.profile.as_ref()) {
        if p.point.kind == PointKind::Sweep && !groups.contains(&p.point.group) {
            groups.push(p.point.group.clone());
        }
    }
    groups
}

/// The verdicts of one curve assertion: on its stage's sweep or search, or on every profile
/// group of the run when it is scenario-level.
fn judge_curve(
    a: &ScopedAssertion,
    stages: &[StageSummary],
    searches: &[SearchSummary],
    verdicts: &[SlaVerdict],
) -> Vec<SlaVerdict> {
    let groups: Vec<String> = match &a.stage {
        Some(group) => vec![group.clone()],
        None => sweep_groups(stages)
            .into_iter()
            .chain(searches.iter().map(|s| s.group.clone()))
            .collect(),
    };
    if groups.is_empty() {
        let mut v = blank(a, None);
        v.note = Some(format!(
            "the run has no sweep or search: `{}` is a figure of a load profile's curve",
            a.assertion.metric
        ));
        return vec![v];
    }
    groups
        .iter()
        .map(|g| judge_group(a, g, stages, searches, verdicts))
        .collect()
}

fn blank(a: &ScopedAssertion, stage: Option<&str>) -> SlaVerdict {
    SlaVerdict {
        assertion: a.assertion.clone(),
        stage: stage.map(str::to_string),
        observed: 0.0,
        threshold: match a.assertion.threshold {
            Threshold::Absolute(v) => v,
            Threshold::Baseline { .. } => 0.0,
        },
        passed: false,
        outcome: SlaOutcome::Fail,
        interval: None,
        more: None,
        // A curve figure is read from its points' verdicts, each weighed against its own
        // stage's flags and recording its own rule: the figure has none of its own.
        basis: None,
        note: None,
        gates: true,
        unobserved: false,
    }
}

/// Where curve figure `metric` of profile group `group` lies, `(low, high, note)`, or why it
/// cannot be read: what a curve assertion on the group would judge (the configurations'
/// ranking reads a search's or sweep's answer through it).
pub(super) fn curve_range(
    metric: CurveMetric,
    group: &str,
    stages: &[StageSummary],
    searches: &[SearchSummary],
    verdicts: &[SlaVerdict],
) -> Result<(f64, f64, Option<String>), String> {
    let range = match searches.iter().find(|s| s.group == group) {
        Some(search) => search_range(metric, search, verdicts),
        None => sweep_range(metric, group, stages, verdicts),
    };
    range.map_err(|why| why.to_string())
}

/// Where a curve figure lies: between `low` and `high` (equal when known exactly; `high`
/// infinite for a knee beyond the last point), or why it cannot be read.
type Range = Result<(f64, f64, Option<String>), Unreadable>;

/// Why a curve assertion's figure cannot be read off its group; the verdict's note.
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    #[error(
        "a search has no knee (its probes are too few below its answer); sweep the load to \
         find one, or assert `{instead}` on the search"
    )]
    SearchKnee { instead: &'static str },
    #[error("`{group}` profiles {has}: assert `{instead}` on it, not `{metric}`")]
    Axis {
        group: String,
        has: &'static str,
        instead: &'static str,
        metric: &'static str,
    },
    #[error("stage `{group}` is not a sweep or search, so it has no curve")]
    NoCurve { group: String },
}

fn judge_group(
    a: &ScopedAssertion,
    group: &str,
    stages: &[StageSummary],
    searches: &[SearchSummary],
    verdicts: &[SlaVerdict],
) -> SlaVerdict {
    let mut v = blank(a, Some(group));
    let Some(metric) = a.assertion.metric.curve() else {
        return v;
    };
    if let Threshold::Baseline { .. } = a.assertion.threshold {
        v.note = Some(format!(
            "`{}` takes a fixed threshold (e.g. `{} > {}`), not a baseline",
            a.assertion.metric,
            a.assertion.metric,
            a.assertion.metric.def().example
        ));
        return v;
    }
    let range = match searches.iter().find(|s| s.group == group) {
        Some(search) => search_range(metric, search, verdicts),
        None => sweep_range(metric, group, stages, verdicts),
    };
    let (low, high, note) = match range {
        Ok(r) => r,
        Err(why) => {
            v.note = Some(why.to_string());
            v.unobserved = true;
            return v;
        }
    };
    let op = a.assertion.op;
    v.observed = low;
    let outcome = match (op.holds(low, v.threshold), op.holds(high, v.threshold)) {
        (true, true) => SlaOutcome::Pass,
        (false, false) => SlaOutcome::Fail,
        _ => SlaOutcome::Inconclusive,
    };
    v.set_outcome(outcome);
    v.note = note;
    v
}

fn search_range(metric: CurveMetric, search: &SearchSummary, verdicts: &[SlaVerdict]) -> Range {
    if metric.is_knee() {
        return Err(Unreadable::SearchKnee {
            instead: if search.concurrency {
                "sla_max_clients"
            } else {
                "sla_max_rate"
            },
        });
    }
    let answer = if metric.of_clients() {
        if !search.concurrency {
            return Err(axis_mismatch(metric, &search.group, false));
        }
        search.answer_clients.map(f64::from)
    } else {
        if search.concurrency {
            return Err(axis_mismatch(metric, &search.group, true));
        }
        search.answer_rate_per_s
    };
    // The answer's probe passed on its values; the gate judged it again on its intervals (as
    // the search's stage), and the curve reads that verdict as the profile table does.
    let judged: Vec<SlaVerdict> = verdicts
        .iter()
        .filter(|v| v.assertion.metric.curve().is_none())
        .cloned()
        .collect();
    match (answer, point_outcome(&judged, &search.group)) {
        (Some(v), Some(SlaOutcome::Inconclusive)) => Ok((
            0.0,
            v,
            Some(format!(
                "the answer, {v}, passed on its values but the gate left it undecided"
            )),
        )),
        (Some(v), Some(SlaOutcome::Fail)) => Ok((
            0.0,
            0.0,
            Some(format!(
                "the answer, {v}, passed on its values but failed on its intervals"
            )),
        )),
        (Some(v), _) => Ok((v, v, None)),
        (None, _) => Ok((
            0.0,
            0.0,
            Some("no probe met the SLAs, not even the lowest".into()),
        )),
    }
}

fn sweep_range(
    metric: CurveMetric,
    group: &str,
    stages: &[StageSummary],
    verdicts: &[SlaVerdict],
) -> Range {
    let points = sweep_points(stages, group);
    let Some(first) = points.first().and_then(|s| s.profile.as_ref()) else {
        return Err(Unreadable::NoCurve {
            group: group.to_string(),
        });
    };
    let of_clients = first.point.offered_rate_per_s.is_none();
    if metric.of_clients() != of_clients {
        return Err(axis_mismatch(metric, group, of_clients));
    }
    let loads = points
        .iter()
        .map(|s| s.profile.as_ref().map_or(0.0, |p| p.load()));
    if metric.is_knee() {
        let last = loads.fold(0.0, f64::max);
        return Ok(match knee_load(&points) {
            Some(k) => (k, k, None),
            None => (
                last,
                f64::INFINITY,
                Some(format!(
                    "knee not reached: it lies at or beyond the highest point ({})",
                    crate::units::trim_float(last)
                )),
            ),
        });
    }
    let outcomes: Vec<(f64, Option<SlaOutcome>)> = loads
        .zip(&points)
        .map(|(load, s)| (load, point_outcome(verdicts, &s.name)))
        .collect();
    let max = SlaMax::of(&outcomes);
    let unit = if of_clients { "clients" } else { "req/s" };
    let shown = |v: f64| format!("{} {unit}", crate::units::trim_float(v));
    let note = if let (true, Some(high)) = (max.is_range(), max.high) {
        Some(match max.low {
            Some(low) => format!(
                "undecided points leave the SLA-compliant maximum between {} and {}",
                shown(low),
                shown(high)
            ),
            None => format!(
                "no point is shown to meet every SLA; counting the undecided ones as passing, \
                 the maximum would be {}",
                shown(high)
            ),
        })
    } else if max.low.is_none() {
        Some("no point met every SLA".into())
    } else {
        None
    };
    Ok((max.low.unwrap_or(0.0), max.high.unwrap_or(0.0), note))
}

fn axis_mismatch(metric: CurveMetric, group: &str, of_clients: bool) -> Unreadable {
    let (has, instead) = match (of_clients, metric.is_knee()) {
        (true, false) => ("closed-loop clients", "sla_max_clients"),
        (true, true) => ("closed-loop clients", "knee_clients"),
        (false, false) => ("offered rates", "sla_max_rate"),
        (false, true) => ("offered rates", "knee_rate"),
    };
    Unreadable::Axis {
        group: group.to_string(),
        has,
        instead,
        metric: metric.def().name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SlaOutcome::{Fail, Inconclusive as Undecided, Pass};

    #[test]
    fn the_sla_maximum_stops_at_the_first_failure_and_undecided_points_leave_it_open() {
        let max = |pts: &[(f64, Option<SlaOutcome>)]| {
            let m = SlaMax::of(pts);
            (m.low, m.high)
        };
        // A pass above a failure is noise, not capacity.
        let pts = [(5.0, Some(Pass)), (10.0, Some(Fail)), (20.0, Some(Pass))];
        assert_eq!(max(&pts), (Some(5.0), Some(5.0)));
        // Undecided is not failed: it may pass.
        let pts = [
            (5.0, Some(Pass)),
            (10.0, Some(Undecided)),
            (20.0, Some(Fail)),
        ];
        assert_eq!(max(&pts), (Some(5.0), Some(10.0)));
        let pts = [(5.0, Some(Undecided)), (10.0, Some(Pass))];
        assert_eq!(max(&pts), (Some(10.0), Some(10.0)));
        assert_eq!(max(&[(5.0, Some(Fail))]), (None, None));
        // Nothing asserted on a point: it passes.
        assert_eq!(max(&[(5.0, None), (8.0, None)]), (Some(8.0), Some(8.0)));
    }

    #[test]
    fn a_point_has_one_verdict() {
        let v = |stage: &str, o: SlaOutcome| {
            let mut v = SlaVerdict {
                assertion: "ttft.p50 < 1s".parse().unwrap(),
                stage: Some(stage.into()),
                observed: 0.0,
                threshold: 1000.0,
                passed: false,
                outcome: o,
                interval: None,
                more: None,
                basis: None,
                note: None,
                gates: true,
                unobserved: false,
            };
            v.set_outcome(o);
            v
        };
        let all = [
            v("a", Pass),
            v("a", Undecided),
            v("b", Pass),
            v("b", Fail),
            v("b", Undecided),
            v("c", Pass),
        ];
        assert_eq!(point_outcome(&all, "a"), Some(Undecided));
        assert_eq!(point_outcome(&all, "b"), Some(Fail));
        assert_eq!(point_outcome(&all, "c"), Some(Pass));
        assert_eq!(point_outcome(&all, "d"), None);
    }
}
