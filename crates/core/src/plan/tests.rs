//! Compiler, recipe, hash, render and JSON tests, on scenarios built directly in code.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::arrival::ArrivalSpec;
use crate::dataset::{LengthDist, TokenizerSpec};
use crate::protocol::{RequestSettings, RunSettings};
use crate::scenario::{
    AssertionSpec, Dataset, DatasetKind, Endpoint, GoodputSpec, ParamValue, ReportSpec, Scenario,
    Source, Spanned, StageLimit, StageSpec, SyntheticSpec, Target, Warmup,
};
use crate::units::{Duration, Rate};

fn sp<T>(v: T) -> Spanned<T> {
    Spanned::new(v, (0usize, 0usize))
}

pub(crate) fn stage(
    name: &str,
    dataset: &str,
    arrival: ArrivalSpec,
    limit: StageLimit,
) -> StageSpec {
    StageSpec {
        name: sp(name.into()),
        dataset: sp(dataset.into()),
        arrival: sp(arrival),
        limit,
        drain_timeout: None,
        profile: None,
        rounds: None,
        until_decided: None,
        groups: Vec::new(),
        priority_gate: false,
        shapes: Vec::new(),
    }
}

pub(crate) fn synthetic(name: &str, input: LengthDist, output: LengthDist) -> Dataset {
    Dataset {
        name: sp(name.into()),
        kind: DatasetKind::Synthetic(SyntheticSpec {
            input_tokens: sp(input),
            output_tokens: sp(output),
        }),
        context: Default::default(),
        hooks: None,
        session: None,
        images: None,
        quality: None,
    }
}

/// A scenario with one `chat` dataset and a 100-request Poisson stage `steady`.
pub(crate) fn scenario() -> Scenario {
    Scenario {
        source: Source {
            path: "bench.kdl".into(),
            text: Arc::from(""),
        },
        name: "test".into(),
        description: None,
        seed: 42,
        tags: vec![],
        params: BTreeMap::from([("rate".to_string(), ParamValue::Int(10))]),
        target: Target {
            endpoint: Endpoint::Sim(Box::default()),
            request: RequestSettings {
                api_key_env: Some("MY_API_KEY".into()),
                ..RequestSettings::default()
            },
            run: RunSettings::default(),
        },
        tokenizer: TokenizerSpec::Cl100kBase,
        datasets: vec![synthetic(
            "chat",
            LengthDist::Uniform { min: 100, max: 500 },
            LengthDist::Fixed { value: 128 },
        )],
        warmup: None,
        stages: vec![stage(
            "steady",
            "chat",
            ArrivalSpec::Poisson { rate: Rate(10.0) },
            StageLimit::Requests(100),
        )],
        sla: vec![],
        sla_policy: Default::default(),
        rounds: 1,
        goodput: None,
        telemetry: None,
        server: None,
        infra: Vec::new(),
        mlperf: None,
        report: ReportSpec::default(),
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_millis(s * 1000)
}

#[test]
fn compiles_an_open_loop_stage() {
    let plan = compile(&scenario()).unwrap();
    assert_eq!(plan.format, PLAN_FORMAT);
    assert_eq!(plan.scenario, "test");
    assert_eq!(plan.params["rate"], serde_json::json!(10));
    let s = &plan.stages[0];
    assert_eq!(s.name, "steady");
    assert_eq!(s.dataset, 0);
    let Load::Open { arrival, schedule } = &s.load else {
        panic!("expected an open loop: {:?}", s.load)
    };
    assert_eq!(arrival, &ArrivalSpec::Poisson { rate: Rate(10.0) });
    let offsets_ns: Vec<u64> = s.offsets().unwrap().collect();
    assert_eq!(offsets_ns.len(), 100);
    assert_eq!(schedule.count(), 100);
    assert_eq!(schedule.last_ns(), offsets_ns[99]);
    assert!(offsets_ns.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(s.max_requests, Some(100));
    assert_eq!(s.duration, None);
    assert_eq!(
        s.drain_timeout,
        secs(60),
        "drain defaults to the target timeout"
    );
    assert_eq!(
        plan.target.request.api_key_env.as_deref(),
        Some("MY_API_KEY")
    );
}

#[test]
fn duration_limits_closed_loops_and_warmup() {
    let mut sc = scenario();
    sc.datasets.push(synthetic(
        "long",
        LengthDist::Fixed { value: 4000 },
        LengthDist::Fixed { value: 10 },
    ));
    sc.stages = vec![
        stage(
            "grid",
            "long",
            ArrivalSpec::Constant { rate: Rate(2.0) },
            StageLimit::Duration(secs(5)),
        ),
        stage(
            "closed",
            "chat",
            ArrivalSpec::Concurrency { clients: 8 },
            StageLimit::Duration(secs(30)),
        ),
    ];
    sc.stages[1].drain_timeout = Some(secs(5));
    sc.warmup = Some(Warmup {
        limit: StageLimit::Requests(20),
        dataset: None,
        clients: 4,
        until: None,
    });
    let plan = compile(&sc).unwrap();
    let grid = &plan.stages[0];
    assert_eq!(grid.dataset, 1);
    assert_eq!(grid.request_count(), Some(10));
    assert_eq!(
        (grid.max_requests, grid.duration),
        (Some(10), Some(secs(5)))
    );
    let closed = &plan.stages[1];
    assert_eq!(
        closed.load,
        Load::Closed {
            clients: 8,
            ramp: None
        }
    );
    assert_eq!(
        (closed.max_requests, closed.duration),
        (None, Some(secs(30)))
    );
    assert_eq!(closed.request_count(), None);
    assert_eq!(closed.drain_timeout, secs(5));
    let warm = plan.warmup.as_ref().unwrap();
    assert_eq!(warm.name, "warmup");
    assert_eq!(
        warm.load,
        Load::Closed {
            clients: 4,
            ramp: None
        }
    );
    assert_eq!(warm.dataset, 1, "defaults to the first stage's dataset");
    assert_eq!(warm.max_requests, Some(20));
    let seeds = [warm.seed, grid.seed, closed.seed];
    assert!(seeds[0] != seeds[1] && seeds[1] != seeds[2] && seeds[0] != seeds[2]);
}

#[test]
fn equal_inputs_give_equal_plans_and_hashes() {
    let a = compile(&scenario()).unwrap();
    let b = compile(&scenario()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.hash.len(), 16);
    assert!(a.hash.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(
        plan_hash(&a).unwrap(),
        a.hash,
        "the stored hash can be re-derived"
    );
}

#[test]
fn hash_changes_with_seed_params_and_workload() {
    let base = compile(&scenario()).unwrap();
    let mut other_seed = scenario();
    other_seed.seed = 43;
    let mut other_param = scenario();
    other_param
        .params
        .insert("rate".into(), ParamValue::Int(20));
    let mut other_rate = scenario();
    other_rate.stages[0].arrival = sp(ArrivalSpec::Poisson { rate: Rate(20.0) });
    let mut other_sla = scenario();
    other_sla.sla.push(AssertionSpec {
        expr: sp(crate::sla::parse("ttft.p95 < 200ms").unwrap()),
        stage: None,
        abort_on_fail: false,
        every_point: false,
    });
    // A param's value counts through its effect on the workload, not as a raw value: one
    // that changes nothing the plan sends (a URL, say) keeps the hash.
    assert_eq!(
        compile(&other_param).unwrap().hash,
        base.hash,
        "unused param"
    );
    for (what, sc) in [
        ("seed", other_seed),
        ("rate", other_rate),
        ("sla", other_sla),
    ] {
        let plan = compile(&sc).unwrap();
        assert_ne!(plan.hash, base.hash, "{what}");
    }
    // The seed reaches the schedule, not just the hash.
    let mut reseeded = scenario();
    reseeded.seed = 43;
    assert_ne!(
        compile(&reseeded).unwrap().stages[0].load,
        base.stages[0].load
    );
}

#[test]
fn recipes_are_pure_bounded_and_distinct() {
    let plan = compile(&scenario()).unwrap();
    let s = &plan.stages[0];
    let recipes: Vec<RequestRecipe> = (0..2000).map(|i| plan.request(s, i)).collect();
    assert_eq!(plan.request(s, 1234), recipes[1234]);
    assert_eq!(
        plan.request(s, 1_000_000_000),
        plan.request(s, 1_000_000_000)
    );
    for (i, r) in recipes.iter().enumerate() {
        assert_eq!(r.index, i as u64);
        assert!((100..=500).contains(&r.input_tokens));
        assert_eq!(r.output_tokens, 128);
    }
    let inputs: std::collections::BTreeSet<u32> = recipes.iter().map(|r| r.input_tokens).collect();
    assert!(inputs.len() > 300, "lengths vary: {}", inputs.len());
    let items: std::collections::BTreeSet<u64> = recipes.iter().map(|r| r.item).collect();
    assert_eq!(items.len(), recipes.len());
    // Another stage on the same dataset draws other requests.
    let mut two = scenario();
    two.stages.push(stage(
        "again",
        "chat",
        ArrivalSpec::Concurrency { clients: 1 },
        StageLimit::Requests(5),
    ));
    let plan2 = compile(&two).unwrap();
    assert_ne!(
        plan2.request(&plan2.stages[1], 0),
        plan2.request(&plan2.stages[0], 0)
    );
    assert_eq!(
        plan2.request(&plan2.stages[0], 7),
        recipes[7],
        "adding a stage shifts nothing"
    );
}

#[test]
fn errors_name_the_stage_or_dataset() {
    let mut sc = scenario();
    sc.stages[0].dataset = sp("missing".into());
    let msg = compile(&sc).unwrap_err().to_string();
    assert!(
        msg.contains("stage `steady`") && msg.contains("`missing`") && msg.contains("`chat`"),
        "{msg}"
    );

    let mut sc = scenario();
    sc.stages[0].arrival = sp(ArrivalSpec::Poisson { rate: Rate(0.001) });
    sc.stages[0].limit = StageLimit::Duration(secs(1));
    let msg = compile(&sc).unwrap_err().to_string();
    assert_eq!(
        msg,
        "stage `steady`: rate 0.001/s over 1s schedules no request; raise the rate or the duration"
    );

    let mut sc = scenario();
    sc.datasets[0] = synthetic(
        "chat",
        LengthDist::Uniform { min: 9, max: 3 },
        LengthDist::Fixed { value: 1 },
    );
    let msg = compile(&sc).unwrap_err().to_string();
    assert!(
        msg.contains("dataset `chat`") && msg.contains("input-tokens"),
        "{msg}"
    );

    let mut sc = scenario();
    sc.stages[0].limit = StageLimit::Requests(0);
    assert!(compile(&sc).unwrap_err().to_string().contains("requests 0"));

    let mut sc = scenario();
    sc.stages.clear();
    assert!(matches!(compile(&sc), Err(PlanError::NoStages(_))));
}

#[test]
fn render_text_summarises_without_secrets() {
    let mut sc = scenario();
    sc.stages.push(stage(
        "closed",
        "chat",
        ArrivalSpec::Concurrency { clients: 8 },
        StageLimit::Duration(secs(30)),
    ));
    sc.goodput = Some(GoodputSpec {
        ttft: Some(Duration::from_millis(200)),
        ..GoodputSpec::default()
    });
    let plan = compile(&sc).unwrap();
    let text = render_text(&plan);
    for needle in [
        "scenario   test",
        "seed       42",
        &plan.hash,
        "embedded simulator",
        "api key from $MY_API_KEY",
        "tokenizer  cl100k_base",
        "dataset    chat: synthetic, input uniform 100..=500, output 128",
        "stage `steady` (dataset chat)",
        "load      poisson 10/s",
        "(expected ≈ 10.0s at the mean rate)",
        "requests  100\n",
        "over all 100 requests",
        "output    min 128 / p50 128 / max 128 tokens",
        "load      closed loop, 8 clients",
        "requests  until 30s",
        "over the first 10000 requests",
        "goodput    ttft ≤ 200ms",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let first = plan.stages[0].offsets().unwrap().next().unwrap();
    assert!(text.contains(&format!("{:.3}s", first as f64 / 1e9)));
}

#[test]
fn json_streams_the_plan_and_every_bounded_recipe() {
    let mut sc = scenario();
    sc.stages.push(stage(
        "closed",
        "chat",
        ArrivalSpec::Concurrency { clients: 2 },
        StageLimit::Duration(secs(30)),
    ));
    let plan = compile(&sc).unwrap();
    let mut buf = Vec::new();
    write_json(&plan, &mut buf).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
    let back: Plan = serde_json::from_value(v["plan"].clone()).unwrap();
    assert_eq!(back, plan);
    let requests = v["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["stage"], "steady");
    let recipes: Vec<RequestRecipe> =
        serde_json::from_value(requests[0]["recipes"].clone()).unwrap();
    assert_eq!(recipes.len(), 100);
    assert_eq!(recipes[57], plan.request(&plan.stages[0], 57));
    let offset_57 = plan.stages[0].offsets().unwrap().nth(57).unwrap();
    assert_eq!(requests[0]["recipes"][57]["offset_ns"], offset_57);
    assert!(requests[1]["recipes"].is_null());
}

/// The plan stores how to draw an open-loop schedule, not the schedule: its size does not
/// grow with the stage's length, and every read yields the same offsets as drawing it whole.
#[test]
fn open_loop_schedules_are_drawn_on_demand_and_repeat() {
    let mut sc = scenario();
    sc.stages[0].limit = StageLimit::Duration(secs(3600));
    let plan = compile(&sc).unwrap();
    let s = &plan.stages[0];
    let Load::Open { arrival, schedule } = &s.load else {
        unreachable!()
    };
    let a: Vec<u64> = s.offsets().unwrap().collect();
    let b: Vec<u64> = s.offsets().unwrap().collect();
    assert_eq!(a, b);
    assert_eq!(schedule.count(), a.len() as u64);
    assert_eq!(schedule.last_ns(), *a.last().unwrap());
    assert!(a.iter().all(|&t| t < 3_600_000_000_000));
    let whole = crate::arrival::schedule(
        arrival,
        crate::arrival::Horizon::Within(secs(3600)),
        &mut super::seed::arrival_rng(s.seed),
    )
    .unwrap()
    .unwrap();
    assert_eq!(a, whole);
    // An hour at 10 req/s: 36,000 sends, and the plan's JSON stays small.
    assert!((34_000..38_000).contains(&a.len()), "{}", a.len());
    let json = serde_json::to_string(&plan).unwrap();
    assert!(json.len() < 4_000, "{} bytes", json.len());
}

/// Pins the random draws themselves (schedule, recipes): a change here changes every plan's
/// workload, so it must come with a PLAN_FORMAT bump and this value updated.
#[test]
fn draws_are_pinned_across_versions() {
    use sha2::{Digest, Sha256};
    let plan = compile(&scenario()).unwrap();
    let s = &plan.stages[0];
    let mut h = Sha256::new();
    for (i, t) in s.offsets().unwrap().enumerate() {
        let r = plan.request(s, i as u64);
        h.update(t.to_le_bytes());
        h.update(r.input_tokens.to_le_bytes());
        h.update(r.output_tokens.to_le_bytes());
        h.update(r.item.to_le_bytes());
    }
    let got: String = h
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        got, "7dd90dabf008251c",
        "draws changed: bump PLAN_FORMAT and update this value"
    );
}
