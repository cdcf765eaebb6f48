//! What a coordinator admits from a shard, judged against the plan it runs: how large a
//! shard's result may be ([`result_cap`], sized from the plan's steps), and whether a result
//! is that of the shard that sends it — its plan, its index of this run's N, the plan's stages
//! in order, and as many requests as its slice of each stage plans (fewer only when the shard
//! stopped early) — once the shared validator (`results::validate`) has found it consistent.

use std::time::Duration;

use crate::metrics::StageSummary;
use crate::plan::{Load, Plan, Slice, StagePlan};
use crate::results::Results;

/// What any result holds besides its steps: provenance, SLA verdicts.
const CAP_BASE: u64 = 2 << 20;
/// Each step's histograms (seven, and two per session turn), summary, notes and telemetry.
const CAP_PER_STEP: u64 = 2 << 20;
/// Each planned second of a step: one timeline point (about 130 bytes as JSON).
const CAP_PER_SECOND: u64 = 256;
/// A step whose length the plan does not bound (a closed loop bounded by count): room for
/// a timeline of about twelve hours.
const CAP_UNBOUNDED_STEP: u64 = 8 << 20;

/// The steps of a plan in order (warm-up, then each stage's rounds), as shards number them.
pub(super) fn steps(plan: &Plan) -> impl Iterator<Item = &StagePlan> {
    plan.warmup.iter().chain(
        plan.stages
            .iter()
            .flat_map(|s| std::iter::repeat_n(s, s.rounds.max(1) as usize)),
    )
}

/// How long a stage can take: its planned sending span plus its drain time; `None` for a
/// closed loop bounded by a request count only.
pub(super) fn planned_bound(stage: &StagePlan) -> Option<Duration> {
    let sending = match (&stage.load, stage.duration) {
        (_, Some(d)) => d.as_std(),
        (Load::Open { schedule, .. }, None) => Duration::from_nanos(schedule.last_ns()),
        _ => return None,
    };
    Some(sending + stage.drain_timeout.as_std())
}

/// The largest result a shard of `plan` may send, in bytes: 2 MiB, plus 2 MiB and 256 bytes
/// a planned second for each step (8 MiB for a step the plan does not bound in time). A
/// 10-minute stage's result is about 160 KB, so this refuses only what no run writes.
pub fn result_cap(plan: &Plan) -> u64 {
    steps(plan).fold(CAP_BASE, |cap, stage| {
        let step = match planned_bound(stage) {
            Some(d) => CAP_PER_STEP.saturating_add(d.as_secs().saturating_add(1) * CAP_PER_SECOND),
            None => CAP_UNBOUNDED_STEP,
        };
        cap.saturating_add(step)
    })
}

/// How many requests a shard's slice of a stage sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Planned {
    Exactly(u64),
    AtMost(u64),
    Unknown,
}

fn planned(plan: &Plan, stage: &StagePlan, slice: Slice) -> Planned {
    let Some(n) = plan.planned_requests(stage, slice) else {
        return Planned::Unknown;
    };
    // A session may end early; a time limit cuts a closed loop short; a shard without a
    // closed-loop worker of its own idles through the stage.
    let exact = plan.session_plan(stage).is_none()
        && match &stage.load {
            Load::Open { .. } => true,
            Load::Closed { clients, .. } => {
                stage.duration.is_none() && slice.share(u64::from(*clients)) > 0
            }
            Load::Search(_) => false,
        };
    if exact {
        Planned::Exactly(n)
    } else {
        Planned::AtMost(n)
    }
}

/// Why shard `index` of a `count`-shard run of `plan` cannot have sent `r`: empty when it is
/// that shard's result.
pub(super) fn result_problems(plan: &Plan, count: u32, index: u32, r: &Results) -> Vec<String> {
    let mut problems = Vec::new();
    if r.plan_hash != plan.hash {
        problems.push(format!(
            "a result of plan {}; this run's plan is {}",
            r.plan_hash, plan.hash
        ));
        return problems;
    }
    let own = r.shards.as_ref().filter(|s| s.count == count);
    let record = match own.map(|s| s.shards.as_slice()) {
        Some([rec]) if rec.index == index => rec,
        _ => {
            problems.push(format!(
                "not shard {index}'s own result of this {count}-shard run (its `shards` names \
                 other shards, or none)"
            ));
            return problems;
        }
    };
    if !record.coordinated {
        problems.push(format!(
            "shard {index} ran without a coordinator: not a step of this run"
        ));
    }
    let stopped_early = r.interrupted || record.interrupted || r.error.is_some() || !r.complete;
    let slice = Slice { index, count };
    let mut pairs: Vec<(&str, &StagePlan, &StageSummary)> = Vec::new();
    match (&plan.warmup, &r.warmup) {
        (Some(p), Some(s)) => pairs.push(("warm-up", p, s)),
        (None, Some(_)) => problems.push("a warm-up the plan does not have".to_string()),
        (Some(_), None) if !stopped_early => {
            problems.push("no warm-up, though the plan has one".to_string());
        }
        _ => {}
    }
    if r.stages.len() > plan.stages.len() || (!stopped_early && r.stages.len() < plan.stages.len())
    {
        problems.push(format!(
            "{} stages; the plan has {}",
            r.stages.len(),
            plan.stages.len()
        ));
    }
    for (i, (s, p)) in r.stages.iter().zip(&plan.stages).enumerate() {
        if s.name != p.name {
            problems.push(format!(
                "stages[{i}] is `{}`; the plan's is `{}`",
                s.name, p.name
            ));
        } else {
            pairs.push(("stage", p, s));
        }
    }
    for (what, p, s) in pairs {
        let sent = s.requests.sent;
        let wrong = match planned(plan, p, slice) {
            Planned::Exactly(n) if !stopped_early && sent != n => Some(format!("exactly {n}")),
            Planned::Exactly(n) | Planned::AtMost(n) if sent > n => Some(format!("at most {n}")),
            _ => None,
        };
        if let Some(want) = wrong {
            problems.push(format!(
                "{what} `{}` sent {sent} requests; shard {index} of {count} plans {want}",
                p.name
            ));
        }
    }
    problems
}
