//! The compiler proper: resolves every default, expands open-loop arrivals into schedules,
//! derives per-stage seeds, then hashes the result.

use crate::arrival::ArrivalSpec;
use crate::dataset::{DatasetSource, validate_length};
use crate::scenario::{Dataset, DatasetKind, Endpoint, Scenario, Target, Warmup};
use crate::sla::ScopedAssertion;
use crate::units::Duration;

use super::load::{LazyTokenizer, load_dataset, load_hooks, trace_stage};
use super::seed::stage_seed;
use super::stage::{bad_stage, closed_limits};
use super::{
    DatasetPlan, EndpointPlan, GoodputPlan, Load, PLAN_FORMAT, Plan, PlanError, StagePlan,
    TargetPlan, plan_hash,
};

/// Compiles a scenario (params already substituted) into its plan. Pure: equal scenarios give
/// equal plans, with equal hashes, on any machine.
pub fn compile(scenario: &Scenario) -> Result<Plan, PlanError> {
    if scenario.stages.is_empty() {
        return Err(PlanError::NoStages(scenario.name.clone()));
    }
    let base_dir = scenario.source.base_dir();
    judges_reach_a_simulator(scenario)?;
    let mut tokenizer = LazyTokenizer::new(&scenario.tokenizer, &base_dir);
    let mut datasets = scenario
        .datasets
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let seed = stage_seed(scenario.seed, "dataset", i as u64);
            dataset_plan(
                d,
                &base_dir,
                &mut tokenizer,
                seed,
                scenario.target.request.api,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let drain_default = scenario.target.request.timeout;
    let warmup = match &scenario.warmup {
        None => None,
        Some(w) => Some(warmup_plan(scenario, w, &datasets, drain_default)?),
    };
    let stages = stage_plans(scenario, &mut datasets, drain_default)?;
    let sla = scenario
        .sla
        .iter()
        .map(|a| ScopedAssertion {
            assertion: a.expr.value.clone(),
            stage: a.stage.as_ref().map(|s| s.value.clone()),
            abort_on_fail: a.abort_on_fail,
            every_point: a.every_point,
        })
        .collect();
    let sla = super::profile::rescope_shapes(scenario, sla);
    let (stages, sla, server_configs) = super::server_axis::cross(scenario, stages, sla);
    let mut plan = Plan {
        format: PLAN_FORMAT,
        scenario: scenario.name.clone(),
        description: scenario.description.clone(),
        seed: scenario.seed,
        hash: String::new(),
        params: scenario
            .params
            .iter()
            .map(|(k, v)| {
                let value = serde_json::to_value(v).unwrap_or(serde_json::Value::Null);
                (k.clone(), value)
            })
            .collect(),
        target: TargetPlan::from(&scenario.target),
        tokenizer: scenario.tokenizer.clone(),
        datasets,
        warmup,
        stages,
        sla,
        goodput: scenario
            .goodput
            .as_ref()
            .map(|g| GoodputPlan {
                ttft: g.ttft,
                tpot: g.tpot,
                itl: g.itl,
                e2e: g.e2e,
            })
            .unwrap_or_default(),
        telemetry: scenario.telemetry.clone(),
        warmup_until: scenario.warmup.as_ref().and_then(|w| w.until.clone()),
        server_configs,
        mlperf: mlperf_rule(scenario),
    };
    plan.hash = plan_hash(&plan)?;
    Ok(plan)
}

/// The scenario's preset as the run judges it (the parser has named its stage).
fn mlperf_rule(scenario: &Scenario) -> Option<crate::sla::mlperf::MlperfRule> {
    let m = scenario.mlperf.as_ref()?;
    Some(crate::sla::mlperf::MlperfRule {
        benchmark: m.benchmark.value.clone(),
        scenario: m.scenario,
        stage: m.stage.as_ref()?.value.clone(),
        ttft_ms: m.ttft_ms,
        tpot_ms: m.tpot_ms,
        require: m.require,
        smoke: m.smoke,
    })
}

/// Where the data set `name` that `who` uses is in `datasets`.
fn dataset_index(datasets: &[DatasetPlan], who: String, name: &str) -> Result<usize, PlanError> {
    datasets
        .iter()
        .position(|d| d.name == name)
        .ok_or_else(|| PlanError::UnknownDataset {
            stage: who,
            dataset: name.to_string(),
            declared: declared_names(datasets),
        })
}

/// The warm-up: closed loop, on its data set or the first stage's.
fn warmup_plan(
    scenario: &Scenario,
    w: &Warmup,
    datasets: &[DatasetPlan],
    drain_default: Duration,
) -> Result<StagePlan, PlanError> {
    // Falls back to the first stage's dataset, which exists: stages is non-empty.
    let name = w.dataset.as_ref().unwrap_or(&scenario.stages[0].dataset);
    let dataset = dataset_index(datasets, "warmup".into(), &name.value)?;
    let (max_requests, duration) = closed_limits("warmup", w.limit)?;
    if w.clients == 0 {
        return Err(bad_stage("warmup", "warm-up needs at least 1 client"));
    }
    Ok(StagePlan {
        name: "warmup".into(),
        dataset,
        seed: stage_seed(scenario.seed, "warmup", 0),
        load: Load::Closed {
            clients: w.clients,
            ramp: None,
        },
        max_requests,
        duration,
        drain_timeout: drain_default,
        profile: None,
        first_item: 0,
        rounds: 1,
        slice: Default::default(),
        until_decided: None,
        groups: Vec::new(),
        priority_gate: false,
        server: None,
    })
}

/// Every stage's plans (a sweep or search expands into several), each with its rounds.
fn stage_plans(
    scenario: &Scenario,
    datasets: &mut Vec<DatasetPlan>,
    drain_default: Duration,
) -> Result<Vec<StagePlan>, PlanError> {
    let mut stages = Vec::with_capacity(scenario.stages.len());
    for (i, spec) in scenario.stages.iter().enumerate() {
        let who = format!("stage `{}`", spec.name.value);
        let dataset = dataset_index(datasets, who, &spec.dataset.value)?;
        let seed = stage_seed(scenario.seed, "stage", i as u64);
        let rounds = spec.rounds.unwrap_or(scenario.rounds).max(1);
        let trace = matches!(spec.arrival.value, ArrivalSpec::Trace { .. });
        let groups = super::groups::stage_groups(spec, datasets, dataset, trace)?;
        let planned = if trace {
            let source = &datasets[dataset].source;
            vec![trace_stage(spec, dataset, source, seed, drain_default)?]
        } else if !spec.shapes.is_empty() {
            super::profile::expand_shapes(spec, datasets, dataset, seed, drain_default)?
        } else {
            super::profile::expand(spec, dataset, seed, drain_default)?
        };
        // A search picks its probes as it goes: each runs once (see docs/sla.md, "Rounds").
        stages.extend(planned.into_iter().map(|mut s| {
            if !matches!(s.load, Load::Search(_)) {
                s.rounds = rounds;
            }
            s.groups = groups.clone();
            s.priority_gate = spec.priority_gate;
            s
        }));
    }
    Ok(stages)
}

/// A judge at `url "sim"` asks the simulator the target runs: refused for another target.
fn judges_reach_a_simulator(scenario: &Scenario) -> Result<(), PlanError> {
    if matches!(scenario.target.endpoint, Endpoint::Sim(_)) {
        return Ok(());
    }
    let sim_judged = scenario.datasets.iter().find(|d| {
        let judge = d.quality.as_ref().and_then(|q| q.judge.as_ref());
        judge.is_some_and(|j| j.url == "sim")
    });
    match sim_judged {
        Some(d) => Err(PlanError::JudgeSimWithoutSim {
            dataset: d.name.value.clone(),
        }),
        None => Ok(()),
    }
}

fn dataset_plan(
    d: &Dataset,
    base_dir: &std::path::Path,
    tokenizer: &mut LazyTokenizer<'_>,
    seed: u64,
    api: crate::protocol::Api,
) -> Result<DatasetPlan, PlanError> {
    let name = d.name.value.clone();
    let agentic = matches!(
        d.kind,
        DatasetKind::Agentic(_) | DatasetKind::AgenticSynthetic(_)
    );
    if !api.kind().conversation() && (d.session.is_some() || agentic) {
        return Err(PlanError::NeedsChat {
            dataset: name,
            what: "multi-turn sessions",
            api,
        });
    }
    // Images go in a chat message's content parts; a one-string API has nowhere to put them.
    if !api.kind().conversation() && d.images.is_some() {
        return Err(PlanError::NeedsChat {
            dataset: name,
            what: "images",
            api,
        });
    }
    if !api.kind().answer().streams() && d.hooks.is_some() {
        return Err(PlanError::HooksOnPooled { dataset: name, api });
    }
    if !api.kind().answer().generates() && d.quality.is_some() {
        return Err(PlanError::QualityOnPooled { dataset: name, api });
    }
    let source = match &d.kind {
        DatasetKind::Synthetic(s) => {
            for (which, dist) in [
                ("input-tokens", &s.input_tokens.value),
                ("output-tokens", &s.output_tokens.value),
            ] {
                validate_length(dist).map_err(|reason| PlanError::BadLength {
                    dataset: name.clone(),
                    which,
                    reason,
                })?;
            }
            DatasetSource::Synthetic {
                input_tokens: s.input_tokens.value.clone(),
                output_tokens: s.output_tokens.value.clone(),
            }
        }
        _ => load_dataset(d, base_dir, tokenizer, seed, api)?,
    };
    Ok(DatasetPlan {
        name,
        source,
        context: d.context,
        hooks: load_hooks(d, base_dir)?,
        session: super::session::session_plan(d)?,
        images: d.images.clone(),
        quality: d.quality.clone(),
    })
}

fn declared_names(datasets: &[DatasetPlan]) -> String {
    if datasets.is_empty() {
        return "none".into();
    }
    datasets
        .iter()
        .map(|d| format!("`{}`", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The plan's form of a target: its endpoint resolved, its settings as they are.
impl From<&Target> for TargetPlan {
    fn from(t: &Target) -> TargetPlan {
        TargetPlan {
            endpoint: match &t.endpoint {
                Endpoint::Sim(cfg) => EndpointPlan::Sim(cfg.clone()),
                Endpoint::Url(url) => EndpointPlan::Url(url.value.clone()),
                Endpoint::Urls(routes) => EndpointPlan::Urls(routes.clone()),
            },
            request: t.request.clone(),
            run: t.run,
        }
    }
}
