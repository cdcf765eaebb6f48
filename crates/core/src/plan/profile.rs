//! Load profiles in the plan: a sweep expands at compile time into one ordinary stage per load
//! point (named `group@40rps` or `group@8c`, marked with a [`LoadPoint`]); a search stays one
//! `Load::Search` entry whose probes (open-loop rates or closed-loop client counts) the runner
//! plans one at a time with [`probe_stage`].

use crate::arrival::{ArrivalSpec, Horizon, LoadPoint, PointKind, SearchAxis, SearchSpec};
use crate::scenario::{ProfileSpec, StageSpec, SweepSpec};
use crate::units::{Duration, Rate, trim_float};

use super::seed::stage_seed;
use super::stage::{drawn_schedule, stage_plan};
use super::{Load, PlanError, StagePlan};

/// The plan stages of one scenario stage: itself, its sweep points, or its search.
pub(super) fn expand(
    spec: &StageSpec,
    dataset: usize,
    seed: u64,
    drain_default: Duration,
) -> Result<Vec<StagePlan>, PlanError> {
    let group = spec.name.value.clone();
    match &spec.profile {
        None => Ok(vec![stage_plan(spec, dataset, seed, drain_default)?]),
        Some(ProfileSpec::Sweep(sweep)) => {
            let points: Vec<(ArrivalSpec, LoadPoint)> = match sweep {
                SweepSpec::Rates(rates) => rates
                    .iter()
                    .map(|r| {
                        let r = Rate(round_rate(r.0));
                        let point = LoadPoint {
                            group: group.clone(),
                            offered_rate_per_s: Some(r.0),
                            ..LoadPoint::default()
                        };
                        (with_rate(&spec.arrival.value, r), point)
                    })
                    .collect(),
                SweepSpec::Concurrency(levels) => levels
                    .iter()
                    .map(|&c| {
                        let point = LoadPoint {
                            group: group.clone(),
                            clients: Some(c),
                            ..LoadPoint::default()
                        };
                        (ArrivalSpec::Concurrency { clients: c }, point)
                    })
                    .collect(),
            };
            let mut out = Vec::with_capacity(points.len());
            for (j, (arrival, point)) in points.into_iter().enumerate() {
                let mut one = spec.clone();
                one.name.value = point_name(&point);
                one.arrival.value = arrival;
                one.profile = None;
                let point_seed = stage_seed(seed, "sweep-point", j as u64);
                let mut plan = stage_plan(&one, dataset, point_seed, drain_default)?;
                if out.iter().any(|s: &StagePlan| s.name == plan.name) {
                    return Err(PlanError::BadStage {
                        stage: format!("stage `{group}`"),
                        reason: format!("the sweep lists the load point `{}` twice", plan.name),
                    });
                }
                plan.profile = Some(point);
                out.push(plan);
            }
            Ok(out)
        }
        Some(ProfileSpec::Search(search)) => Ok(vec![StagePlan {
            name: group,
            dataset,
            seed,
            load: Load::Search(search.clone()),
            max_requests: None,
            duration: Some(search.probe),
            drain_timeout: spec.drain_timeout.unwrap_or(drain_default),
            profile: None,
            first_item: 0,
            rounds: 1,
            slice: Default::default(),
            until_decided: None,
            groups: Vec::new(),
            priority_gate: false,
            server: None,
        }]),
    }
}

/// Two decimals are plenty for a load point and keep stage names readable.
fn round_rate(r: f64) -> f64 {
    let rounded = (r * 100.0).round() / 100.0;
    if rounded > 0.0 { rounded } else { r }
}

/// The stage's own open-loop kind at rate `r` (Poisson when it has no open-loop arrival).
fn with_rate(arrival: &ArrivalSpec, rate: Rate) -> ArrivalSpec {
    match arrival {
        ArrivalSpec::Constant { .. } => ArrivalSpec::Constant { rate },
        ArrivalSpec::Gamma { burstiness, .. } => ArrivalSpec::Gamma {
            rate,
            burstiness: *burstiness,
        },
        _ => ArrivalSpec::Poisson { rate },
    }
}

/// `group@40rps`, `group@2.5rps` or `group@8c`.
pub fn point_name(p: &LoadPoint) -> String {
    match (p.offered_rate_per_s, p.clients) {
        (Some(r), _) => format!("{}@{}rps", p.group, trim_float(round_rate(r))),
        (None, Some(c)) => format!("{}@{c}c", p.group),
        (None, None) => p.group.clone(),
    }
}

/// The stage of one search probe at `load`: Poisson arrivals at that rate for `probe`, or
/// that many closed-loop clients for a concurrency search; seeded from the search's seed and
/// the load, so equal probes replay equal workloads.
pub fn probe_stage(
    search: &StagePlan,
    spec: &SearchSpec,
    load: f64,
) -> Result<StagePlan, PlanError> {
    if spec.axis == SearchAxis::Concurrency {
        return Ok(closed_probe(search, spec, load));
    }
    let rate = load;
    let rate = Rate(round_rate(rate));
    let seed = stage_seed(search.seed, "probe", rate.0.to_bits());
    let arrival = ArrivalSpec::Poisson { rate };
    let schedule = drawn_schedule(
        &arrival,
        Horizon::Within(spec.probe),
        seed,
        &search.name,
        || format!("probe at {rate} over {}", spec.probe),
    )?;
    let point = LoadPoint {
        group: search.name.clone(),
        kind: PointKind::Probe,
        offered_rate_per_s: Some(rate.0),
        ..LoadPoint::default()
    };
    Ok(StagePlan {
        name: point_name(&point),
        dataset: search.dataset,
        seed,
        max_requests: Some(schedule.count()),
        load: Load::Open { arrival, schedule },
        duration: Some(spec.probe),
        drain_timeout: search.drain_timeout,
        profile: Some(point),
        first_item: search.first_item,
        rounds: 1,
        slice: Default::default(),
        until_decided: None,
        groups: search.groups.clone(),
        priority_gate: search.priority_gate,
        server: search.server.clone(),
    })
}

/// A concurrency probe: `clients` closed-loop workers for `probe`.
fn closed_probe(search: &StagePlan, spec: &SearchSpec, clients: f64) -> StagePlan {
    let clients = (clients.round() as u32).max(1);
    let point = LoadPoint {
        group: search.name.clone(),
        kind: PointKind::Probe,
        clients: Some(clients),
        ..LoadPoint::default()
    };
    StagePlan {
        name: point_name(&point),
        dataset: search.dataset,
        seed: stage_seed(search.seed, "probe-clients", u64::from(clients)),
        load: Load::Closed {
            clients,
            ramp: None,
        },
        max_requests: None,
        duration: Some(spec.probe),
        drain_timeout: search.drain_timeout,
        profile: Some(point),
        first_item: search.first_item,
        rounds: 1,
        slice: Default::default(),
        until_decided: None,
        groups: search.groups.clone(),
        priority_gate: search.priority_gate,
        server: search.server.clone(),
    }
}

/// How `infermeter plan` shows a search: its bounds and rules (probes are chosen at run time).
pub(super) fn describe_search(s: &SearchSpec) -> String {
    if s.axis == SearchAxis::Concurrency {
        return format!(
            "concurrency search {} .. {} clients (closed-loop probes of {}, tolerance {}% or \
             adjacent counts, at most {} probes / {})",
            s.from.0,
            s.to.0,
            s.probe,
            trim_float(s.tolerance * 100.0),
            s.max_probes,
            s.max_time
        );
    }
    format!(
        "rate search {} .. {} (poisson probes of {}, tolerance {}%, at most {} probes / {})",
        s.from,
        s.to,
        s.probe,
        trim_float(s.tolerance * 100.0),
        s.max_probes,
        s.max_time
    )
}
