//! Load profiles in the plan: a sweep expands at compile time into one ordinary stage per load
//! point (named `group@40rps` or `group@8c`, marked with a [`LoadPoint`]); a search stays one
//! `Load::Search` entry whose probes (open-loop rates or closed-loop client counts) the runner
//! plans one at a time with [`probe_stage`].

use crate::arrival::{ArrivalSpec, Horizon, LoadPoint, PointKind, SearchAxis, SearchSpec};
use crate::dataset::{DatasetSource, LengthDist};
use crate::scenario::{ProfileSpec, Scenario, Shape, StageSpec, SweepSpec};
use crate::sla::ScopedAssertion;
use crate::units::{Duration, Rate, trim_float};

use super::seed::stage_seed;
use super::stage::{drawn_schedule, stage_plan};
use super::{DatasetPlan, Load, PlanError, StagePlan};

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

/// A shaped sweep's plan stages: its ladder once per shape, shape by shape in file order, each
/// on the stage's data set with that shape's fixed lengths (a data set `name@128/32` added to
/// `datasets`) and seeded from the stage's seed and the shape's position. Each shape's points
/// form a profile group of their own, `stage@128/32` (so its own curve, knee and frontier),
/// and carry the shape's label.
pub(super) fn expand_shapes(
    spec: &StageSpec,
    datasets: &mut Vec<DatasetPlan>,
    base: usize,
    seed: u64,
    drain_default: Duration,
) -> Result<Vec<StagePlan>, PlanError> {
    let mut out = Vec::new();
    for (k, shape) in spec.shapes.iter().enumerate() {
        let label = shape.value.label();
        let dataset = shaped_dataset(&spec.name.value, datasets, base, shape.value)?;
        let mut one = spec.clone();
        one.name.value = shape_group(&spec.name.value, shape.value);
        one.shapes = Vec::new();
        let points = expand(
            &one,
            dataset,
            stage_seed(seed, "shape", k as u64),
            drain_default,
        )?;
        out.extend(points.into_iter().map(|mut p| {
            if let Some(point) = &mut p.profile {
                point.shape = Some(label.clone());
            }
            p
        }));
    }
    Ok(out)
}

/// The profile group of `shape` in the sweep of stage `stage`: `stage@128/32`.
pub fn shape_group(stage: &str, shape: Shape) -> String {
    format!("{stage}@{}", shape.label())
}

/// The data set `base@128/32`: `base` with the shape's fixed lengths (its context, hooks and
/// the rest as they are), added to `datasets` once however many stages use it.
fn shaped_dataset(
    stage: &str,
    datasets: &mut Vec<DatasetPlan>,
    base: usize,
    shape: Shape,
) -> Result<usize, PlanError> {
    let source = DatasetSource::Synthetic {
        input_tokens: LengthDist::Fixed {
            value: shape.input_tokens,
        },
        output_tokens: LengthDist::Fixed {
            value: shape.output_tokens,
        },
    };
    let b = &datasets[base];
    if !matches!(b.source, DatasetSource::Synthetic { .. }) {
        return Err(PlanError::BadStage {
            stage: format!("stage `{stage}`"),
            reason: format!(
                "`shapes` set synthetic lengths, and data set `{}` is not synthetic",
                b.name
            ),
        });
    }
    let name = format!("{}@{}", b.name, shape.label());
    if let Some(i) = datasets.iter().position(|d| d.name == name) {
        if datasets[i].source == source {
            return Ok(i);
        }
        return Err(PlanError::BadStage {
            stage: format!("stage `{stage}`"),
            reason: format!(
                "a data set is already named `{name}`, the name of its shape's data set"
            ),
        });
    }
    let shaped = DatasetPlan {
        name,
        source,
        ..datasets[base].clone()
    };
    datasets.push(shaped);
    Ok(datasets.len() - 1)
}

/// The assertions scoped to a shaped sweep's stage, one per shape (scoped to its group): each
/// shape's points are judged, and its curve read, as a sweep of their own. A `best.`
/// assertion ranks configurations and stays as written.
pub(super) fn rescope_shapes(
    scenario: &Scenario,
    sla: Vec<ScopedAssertion>,
) -> Vec<ScopedAssertion> {
    sla.into_iter()
        .flat_map(|a| {
            let shaped = a
                .stage
                .as_ref()
                .filter(|_| !a.assertion.best)
                .and_then(|name| {
                    scenario
                        .stages
                        .iter()
                        .find(|s| &s.name.value == name && !s.shapes.is_empty())
                });
            match shaped {
                Some(st) => st
                    .shapes
                    .iter()
                    .map(|sh| ScopedAssertion {
                        stage: Some(shape_group(&st.name.value, sh.value)),
                        ..a.clone()
                    })
                    .collect(),
                None => vec![a],
            }
        })
        .collect()
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

#[cfg(test)]
mod shape_tests {
    use crate::dataset::{DatasetSource, LengthDist};

    fn plan(server: &str, sweep: &str) -> crate::plan::Plan {
        let text = format!(
            "target \"http://127.0.0.1:8000/v1\"\n{server}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 4; }} }}\n\
             stage \"p\" {{ dataset \"d\"; requests 4; sweep {{ {sweep} }}\n\
             sla {{ assert \"e2e.p50 < 1s\"; assert \"knee_rate > 1 req/s\"; }} }}\n\
             sla {{ assert \"ttft.p50 < 1s\"; }}\n"
        );
        let s = crate::scenario::parse_str(std::path::Path::new("s.kdl"), &text, &[]).unwrap();
        crate::plan::compile(&s).unwrap()
    }

    #[test]
    fn each_shape_runs_the_ladder_as_a_group_of_its_own() {
        let p = plan("", "concurrency 1 4; shapes \"128/32\" \"1024/128\"");
        let names: Vec<&str> = p.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "p@128/32@1c",
                "p@128/32@4c",
                "p@1024/128@1c",
                "p@1024/128@4c"
            ]
        );
        let point = |i: usize| p.stages[i].profile.clone().unwrap();
        assert_eq!(point(1).group, "p@128/32");
        assert_eq!(point(1).shape.as_deref(), Some("128/32"));
        assert_eq!(point(2).group, "p@1024/128");
        // Each shape's points use its own fixed lengths.
        let shaped = &p.datasets[p.stages[2].dataset];
        assert_eq!(shaped.name, "d@1024/128");
        assert_eq!(
            shaped.source,
            DatasetSource::Synthetic {
                input_tokens: LengthDist::Fixed { value: 1024 },
                output_tokens: LengthDist::Fixed { value: 128 },
            }
        );
        let r = p.request(&p.stages[3], 2);
        assert_eq!((r.input_tokens, r.output_tokens), (1024, 128));
        // The same level on two shapes draws from two seeds; the plan is the same each time.
        assert_ne!(p.stages[0].seed, p.stages[2].seed);
        let again = plan("", "concurrency 1 4; shapes \"128/32\" \"1024/128\"");
        assert_eq!(p.hash, again.hash);
        // The stage's assertions hold on each shape's group, curve assertions included; the
        // scenario's stay scenario-wide.
        let scoped: Vec<(String, Option<&str>)> = p
            .sla
            .iter()
            .map(|a| (a.assertion.to_string(), a.stage.as_deref()))
            .collect();
        assert_eq!(scoped.len(), 5, "{scoped:?}");
        assert_eq!(scoped[0].1, Some("p@128/32"));
        assert_eq!(scoped[1].1, Some("p@1024/128"));
        assert_eq!(scoped[3].1, Some("p@1024/128"));
        assert_eq!(scoped[4].1, None);
    }

    #[test]
    fn a_sweep_without_shapes_keeps_its_plan_and_hash() {
        let p = plan("", "concurrency 1 4");
        assert_eq!(p.datasets.len(), 1);
        assert!(
            p.stages
                .iter()
                .all(|s| s.profile.as_ref().unwrap().shape.is_none())
        );
        let json = serde_json::to_string(&p.stages[0]).unwrap();
        assert!(!json.contains("shape"), "{json}");
    }

    #[test]
    fn shapes_cross_the_server_configurations() {
        let p = plan(
            "server {\ncommand \"sh\" \"--n\" \"1\"\nconfig \"x\"\nconfig \"y\"\n}",
            "rates 1 2; shapes \"16/8\" \"32/8\"",
        );
        assert_eq!(p.stages.len(), 8);
        assert_eq!(p.stages[0].name, "p@16/8@1rps@x");
        assert_eq!(p.stages[0].profile.as_ref().unwrap().group, "p@16/8@x");
        assert_eq!(p.stages[7].profile.as_ref().unwrap().group, "p@32/8@y");
        let scoped: Vec<Option<&str>> = p.sla.iter().map(|a| a.stage.as_deref()).collect();
        assert!(scoped.contains(&Some("p@32/8@y")), "{scoped:?}");
        assert!(!scoped.contains(&Some("p")), "{scoped:?}");
        let lines = crate::plan::sweep_lines(&p);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("p@x: 2 shapes × 2 rates = 4 points, about "),
            "{lines:?}"
        );
    }
}
