//! What the plan says of one stage, as the stage runner needs it: its name on the progress
//! line, its planned span, load and request total, the facts its summary is told, how many
//! connections to warm, the goodput SLO, and the cores the client has.

use std::thread;

use crate::dataset::DatasetSource;
use crate::metrics::{GoodputSlo, PlannedLoad, PointKind, StageFacts};
use crate::plan::{Load, Plan, StagePlan};

/// The stage's name as the progress line shows it: with its place in a sweep or search and
/// its round.
pub(super) fn shown_name(
    stage: &StagePlan,
    round: u32,
    position: Option<(usize, usize)>,
) -> String {
    let mut notes = Vec::new();
    if let Some((i, n)) = position {
        notes.push(match stage.profile.as_ref().map(|p| p.kind) {
            Some(PointKind::Probe) => format!("probe {i} of at most {n}"),
            _ => format!("point {i} of {n}"),
        });
    }
    if stage.rounds > 1 {
        notes.push(format!("round {} of {}", round + 1, stage.rounds));
    }
    if notes.is_empty() {
        stage.name.clone()
    } else {
        format!("{} ({})", stage.name, notes.join(", "))
    }
}

/// The planned sending span of an open-loop stage (its last scheduled offset).
pub(super) fn planned_span(stage: &StagePlan) -> Option<u64> {
    match &stage.load {
        Load::Open { schedule, .. } => Some(schedule.last_ns()),
        Load::Closed { .. } | Load::Search(_) => None,
    }
}

/// How long the plan says the stage sends: its schedule's span, or its duration bound.
pub(super) fn planned_sending(stage: &StagePlan) -> Option<std::time::Duration> {
    match planned_span(stage) {
        Some(ns) => Some(std::time::Duration::from_nanos(ns)),
        None => stage.duration.map(|d| d.as_std()),
    }
}

pub(super) fn cores() -> u32 {
    thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// What the plan says about the stage's prompts: whether they share prefixes on purpose, and
/// how many distinct ones a file data set has.
pub(super) fn stage_facts(plan: &Plan, stage: &StagePlan) -> StageFacts {
    let dataset = plan.datasets.get(stage.dataset);
    let sessions = plan.session_plan(stage).is_some();
    let (prefix_blocks, distinct) = match dataset.map(|d| &d.source) {
        Some(DatasetSource::Trace { rows, .. }) => {
            (rows.iter().any(|r| !r.hash_ids.is_empty()), None)
        }
        Some(DatasetSource::Items { items, .. }) if !sessions => (false, Some(items.len() as u64)),
        _ => (false, None),
    };
    StageFacts {
        ignore_eos: plan.target.request.ignore_eos,
        shares_prefixes: sessions
            || prefix_blocks
            || dataset.is_some_and(|d| d.context.shared_prefix.is_some()),
        distinct_prompts: distinct,
        quality: dataset
            .and_then(|d| d.quality.as_ref())
            .map(|q| q.score.as_ref().map(crate::dataset::ScoreSpec::name)),
    }
}

pub(super) fn planned_load(stage: &StagePlan) -> PlannedLoad {
    let mut p = PlannedLoad {
        requests: stage.max_requests,
        duration_s: stage.duration.map(|d| d.as_secs_f64()),
        ..PlannedLoad::default()
    };
    match &stage.load {
        Load::Open { arrival, schedule } => {
            p.requests = Some(schedule.count());
            p.arrival = arrival.kind();
            p.rate_per_s = arrival.steady_rate().map(|r| r.per_sec());
        }
        Load::Closed { clients, ramp } => {
            p.arrival = if ramp.is_some() {
                crate::arrival::ArrivalKind::RampConcurrency
            } else {
                crate::arrival::ArrivalKind::Concurrency
            };
            p.clients = Some(*clients);
        }
        Load::Search(_) => p.arrival = crate::arrival::ArrivalKind::Search,
    }
    p
}

/// Requests the progress bar counts to: every turn of every session. A ShareGPT session's
/// turn count is only known as it runs, so those stages count without a total.
pub(super) fn planned_total(plan: &Plan, stage: &StagePlan) -> Option<u64> {
    plan.planned_requests(stage, stage.slice)
}

/// The most connections a closed loop opens before its clock starts.
const MAX_WARM_CLIENTS: usize = 4096;

/// Connections to open before the clock starts: the expected concurrency, within reason.
pub(super) fn pool_warmth(stage: &StagePlan) -> usize {
    match &stage.load {
        Load::Open { schedule, .. } => {
            let secs = schedule.last_ns() as f64 / 1e9;
            let count = stage.slice.share(schedule.count());
            let rate = if secs > 0.0 { count as f64 / secs } else { 1.0 };
            (rate as usize).clamp(4, 256).min(count.max(1) as usize)
        }
        // Every client's connection: at 1,000 clients a cap of 512 left the rest to connect
        // as the clock started, and their first requests' TTFT carried the handshakes (the
        // accuracy card's first two seconds: 242 ms mean error, against 3.7 ms after).
        Load::Closed { clients, .. } => {
            (stage.slice.share(u64::from(*clients)) as usize).min(MAX_WARM_CLIENTS)
        }
        Load::Search(_) => 4,
    }
}

pub(super) fn goodput_slo(plan: &Plan) -> GoodputSlo {
    let g = &plan.goodput;
    GoodputSlo {
        ttft_ns: g.ttft.map(|d| d.as_nanos()),
        tpot_ns: g.tpot.map(|d| d.as_nanos()),
        itl_ns: g.itl.map(|d| d.as_nanos()),
        e2e_ns: g.e2e.map(|d| d.as_nanos()),
    }
}
