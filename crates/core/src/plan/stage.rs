//! One stage of the scenario as one [`StagePlan`]: its load (closed-loop clients, a
//! concurrency ramp, or an open-loop schedule drawn once to count it) and its limits. Sweeps
//! and searches (`profile.rs`) plan each of their points through it.

use crate::arrival::{self, ArrivalSpec, Horizon};
use crate::scenario::{StageLimit, StageSpec};
use crate::units::Duration;

use super::seed::arrival_rng;
use super::{Load, PlanError, Schedule, StagePlan};

/// Draws an open-loop schedule once to count it; an error when it schedules nothing.
pub(super) fn drawn_schedule(
    arrival: &ArrivalSpec,
    horizon: Horizon,
    seed: u64,
    stage: &str,
    detail: impl FnOnce() -> String,
) -> Result<Schedule, PlanError> {
    let extent = arrival::extent(arrival, horizon, arrival_rng(seed))
        .map_err(|source| PlanError::Arrival {
            stage: stage.to_string(),
            source,
        })?
        .filter(|e| e.count > 0)
        .ok_or_else(|| PlanError::NoArrivals {
            stage: stage.to_string(),
            detail: detail(),
        })?;
    Ok(Schedule::Drawn {
        horizon,
        count: extent.count,
        last_ns: extent.last_ns,
    })
}

pub(super) fn bad_stage(who: &str, reason: &str) -> PlanError {
    PlanError::BadStage {
        stage: who.to_string(),
        reason: reason.to_string(),
    }
}

/// `(max_requests, duration)` of a closed-loop stage.
pub(super) fn closed_limits(
    who: &str,
    limit: StageLimit,
) -> Result<(Option<u64>, Option<Duration>), PlanError> {
    match limit {
        StageLimit::Requests(0) => Err(bad_stage(who, "`requests 0` sends nothing; use ≥ 1")),
        StageLimit::Requests(n) => Ok((Some(n), None)),
        StageLimit::Duration(d) if d == Duration::ZERO => {
            Err(bad_stage(who, "a duration of 0s sends nothing"))
        }
        StageLimit::Duration(d) => Ok((None, Some(d))),
    }
}

pub(super) fn stage_plan(
    spec: &StageSpec,
    dataset: usize,
    seed: u64,
    drain_default: Duration,
) -> Result<StagePlan, PlanError> {
    let name = spec.name.value.clone();
    let who = format!("stage `{name}`");
    // An `until-decided` stage is planned to its maximum; it may stop before.
    let limit = spec.until_decided.as_ref().map_or(spec.limit, |m| m.value);
    let (load, max_requests, duration) = match &spec.arrival.value {
        ArrivalSpec::Trace { .. } => {
            return Err(bad_stage(&who, "a trace replay needs its data set"));
        }
        ArrivalSpec::Concurrency { clients } => closed_load(&who, limit, *clients, None)?,
        ArrivalSpec::RampConcurrency {
            from,
            to,
            over,
            steps,
        } => {
            if *from == 0 || to <= from {
                return Err(bad_stage(
                    &who,
                    "a concurrency ramp needs 1 ≤ from < to clients",
                ));
            }
            let ramp = crate::arrival::ClientRamp {
                from: *from,
                to: *to,
                over: *over,
                steps: *steps,
            };
            closed_load(&who, limit, *to, Some(ramp))?
        }
        arrival @ (ArrivalSpec::Constant { rate }
        | ArrivalSpec::Poisson { rate }
        | ArrivalSpec::Gamma { rate, .. }
        | ArrivalSpec::Ramp { from: rate, .. }) => {
            open_load(&who, &name, arrival, *rate, limit, seed)?
        }
    };
    let until_decided = spec
        .until_decided
        .as_ref()
        .map(|_| until_minimum(spec.limit, &load, seed));
    Ok(StagePlan {
        name,
        dataset,
        seed,
        load,
        max_requests,
        duration,
        drain_timeout: spec.drain_timeout.unwrap_or(drain_default),
        profile: None,
        first_item: 0,
        rounds: 1,
        slice: Default::default(),
        until_decided,
        groups: Vec::new(),
        priority_gate: false,
        server: None,
    })
}

/// A stage's load, the most requests it sends and how long it runs.
type Planned = (Load, Option<u64>, Option<Duration>);

/// A closed loop of `clients` (the most a ramp reaches), limited by requests or time.
fn closed_load(
    who: &str,
    limit: StageLimit,
    clients: u32,
    ramp: Option<crate::arrival::ClientRamp>,
) -> Result<Planned, PlanError> {
    if clients == 0 {
        return Err(bad_stage(who, "concurrency needs at least 1 client"));
    }
    let (max, dur) = closed_limits(who, limit)?;
    Ok((Load::Closed { clients, ramp }, max, dur))
}

/// An open-loop arrival's schedule, drawn from the seed to its request count or duration.
fn open_load(
    who: &str,
    name: &str,
    arrival: &ArrivalSpec,
    rate: impl std::fmt::Display,
    limit: StageLimit,
    seed: u64,
) -> Result<Planned, PlanError> {
    let (horizon, over, duration) = match limit {
        StageLimit::Requests(0) => {
            return Err(bad_stage(who, "`requests 0` sends nothing; use ≥ 1"));
        }
        StageLimit::Requests(n) => (Horizon::Count(n), Duration::ZERO, None),
        StageLimit::Duration(d) => (Horizon::Within(d), d, Some(d)),
    };
    let schedule = drawn_schedule(arrival, horizon, seed, name, || {
        format!("rate {rate} over {over}")
    })?;
    let count = schedule.count();
    let load = Load::Open {
        arrival: arrival.clone(),
        schedule,
    };
    Ok((load, Some(count), duration))
}

/// An `until-decided` stage's minimum, its written limit: a count, or a duration (with the
/// count an open-loop schedule sends in it, which the confidence sequences are tuned by).
fn until_minimum(min: StageLimit, load: &Load, seed: u64) -> super::UntilDecided {
    match min {
        StageLimit::Requests(n) => super::UntilDecided {
            min_requests: Some(n),
            min_duration: None,
        },
        StageLimit::Duration(d) => super::UntilDecided {
            min_requests: match load {
                Load::Open { arrival, .. } => Some(
                    arrival::extent(arrival, Horizon::Within(d), arrival_rng(seed))
                        .ok()
                        .flatten()
                        .map_or(0, |e| e.count),
                ),
                _ => None,
            },
            min_duration: Some(d),
        },
    }
}
