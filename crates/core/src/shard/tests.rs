//! The shards' union is the plan: every open-loop request exactly once at its planned offset,
//! every closed-loop worker and request index once, over many seeds, arrivals and shard counts.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::arrival::{ArrivalSpec, ClientRamp};
use crate::plan::{Schedule, StagePlan};
use crate::units::{Duration, Rate};

fn open_stage(arrival: ArrivalSpec, seed: u64, count: u64) -> StagePlan {
    let horizon = crate::arrival::Horizon::Count(count);
    StagePlan {
        name: "main".into(),
        dataset: 0,
        seed,
        load: Load::Open {
            arrival,
            schedule: Schedule::Drawn {
                horizon,
                count,
                last_ns: 0,
            },
        },
        max_requests: Some(count),
        duration: None,
        drain_timeout: Duration::from_millis(1_000),
        profile: None,
        first_item: 0,
        rounds: 1,
        slice: Slice::WHOLE,
        until_decided: None,
        groups: Vec::new(),
        priority_gate: false,
        server: None,
    }
}

fn arrival(kind: u8, rate: f64) -> ArrivalSpec {
    match kind % 4 {
        0 => ArrivalSpec::Constant { rate: Rate(rate) },
        1 => ArrivalSpec::Poisson { rate: Rate(rate) },
        2 => ArrivalSpec::Gamma {
            rate: Rate(rate),
            burstiness: crate::units::Burstiness::new(0.3).unwrap(),
        },
        _ => ArrivalSpec::Ramp {
            from: Rate(rate / 10.0),
            to: Rate(rate),
            over: Duration::from_millis(2_000),
            steps: None,
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn open_loop_shards_union_is_the_plan(
        seed in any::<u64>(),
        kind in 0u8..4,
        rate in 1.0f64..5_000.0,
        count in 0u64..3_000,
        n in 1u32..17,
    ) {
        let whole = open_stage(arrival(kind, rate), seed, count);
        let planned: Vec<(u64, u64)> = whole.sends().unwrap().collect();
        prop_assert_eq!(planned.len() as u64, count);
        let mut union: BTreeMap<u64, u64> = BTreeMap::new();
        for index in 0..n {
            let slice = Slice { index, count: n };
            let mine = StagePlan { slice, ..whole.clone() };
            let sends: Vec<(u64, u64)> = mine.sends().unwrap().collect();
            prop_assert_eq!(sends.len() as u64, slice.share(count));
            // In schedule order within the shard, as the dispatcher sends them.
            prop_assert!(sends.windows(2).all(|w| w[0].1 <= w[1].1 && w[0].0 < w[1].0));
            for (i, t) in sends {
                prop_assert!(union.insert(i, t).is_none(), "request {} sent twice", i);
            }
        }
        let union: Vec<(u64, u64)> = union.into_iter().collect();
        prop_assert_eq!(union, planned);
    }

    #[test]
    fn closed_loop_workers_and_requests_split_exactly(
        clients in 1u32..300,
        requests in 0u64..10_000,
        n in 1u32..17,
        from in 0u32..50,
    ) {
        let ramp = ClientRamp { from: from.min(clients), to: clients, over: Duration::from_millis(10_000), steps: None };
        let mut workers: Vec<(u64, u64)> = Vec::new();
        let mut indexes: Vec<u64> = Vec::new();
        for index in 0..n {
            let slice = Slice { index, count: n };
            workers.extend(slice.members(u64::from(clients)).map(|k| (k, ramp.start_offset_ns(k as u32))));
            // A shard's workers draw k = 0, 1, … from one counter and stop at the plan's count.
            let mine: Vec<u64> = (0..).map(|k| slice.global(k)).take_while(|&i| i < requests).collect();
            prop_assert_eq!(mine.len() as u64, slice.share(requests));
            indexes.extend(mine);
        }
        workers.sort_unstable();
        let planned: Vec<(u64, u64)> = (0..u64::from(clients)).map(|k| (k, ramp.start_offset_ns(k as u32))).collect();
        prop_assert_eq!(workers, planned);
        indexes.sort_unstable();
        prop_assert_eq!(indexes, (0..requests).collect::<Vec<_>>());
    }
}

fn plan_with(stage: StagePlan) -> Plan {
    let mut plan = crate::plan::compile(&crate::plan::tests::scenario()).unwrap();
    plan.stages = vec![stage];
    plan
}

#[test]
fn a_shard_keeps_the_plan_and_its_hash() {
    let mut plan = plan_with(open_stage(arrival(1, 50.0), 3, 100));
    plan.target.endpoint = EndpointPlan::Url("http://server:8000".into());
    let hash = crate::plan::plan_hash(&plan).unwrap();
    let shard = slice(plan.clone(), Slice { index: 1, count: 3 }).unwrap();
    assert_eq!(crate::plan::plan_hash(&shard).unwrap(), hash);
    assert_eq!(shard.hash, plan.hash);
    assert_eq!(shard.stages[0].slice, Slice { index: 1, count: 3 });
    // Only shard 0 resets the server's cache and samples telemetry.
    plan.target.run.reset_cache = Some(crate::protocol::CacheReset::Auto);
    let zero = slice(plan.clone(), Slice { index: 0, count: 3 }).unwrap();
    let two = slice(plan, Slice { index: 2, count: 3 }).unwrap();
    assert!(zero.target.run.reset_cache.is_some() && two.target.run.reset_cache.is_none());
}

#[test]
fn what_cannot_be_split_is_refused_with_every_reason() {
    let mut plan = plan_with(open_stage(arrival(0, 5.0), 1, 10));
    plan.stages[0].rounds = 3;
    plan.target.run.cache_salt = true;
    plan.target.run.network = Some(crate::protocol::NetworkShape {
        delay: crate::units::Duration::from_millis(25),
        jitter: crate::units::Duration::ZERO,
        bandwidth: None,
        loss: crate::units::Percent(0.0),
    });
    plan.sla.push(crate::sla::ScopedAssertion {
        abort_on_fail: true,
        every_point: false,
        ..crate::sla::ScopedAssertion::everywhere(crate::sla::parse("ttft.p95 < 1s").unwrap())
    });
    plan.sla.push(crate::sla::ScopedAssertion::everywhere(
        crate::sla::parse("ttft.p50[window=steady] < 1s").unwrap(),
    ));
    let err = slice(plan, Slice { index: 4, count: 4 }).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.problems.len(), 7, "{text}");
    for want in [
        "below the count",
        "embedded simulator",
        "3 rounds",
        "abort-on-fail",
        "cache-salt",
        "network",
        "steady-state window",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
}

/// Several URLs: each shard routes a session's every turn where one process would (the
/// route is a function of the stage's seed, the session's global index and the turn, all of
/// which a shard keeps), and the shards' sessions are the plan's, each once.
#[test]
fn sessions_keep_their_urls_across_shards() {
    use crate::protocol::{RoutePolicy, RoutedUrl, Routes};
    for policy in [
        RoutePolicy::RoundRobin,
        RoutePolicy::BySession,
        RoutePolicy::ByWeight,
    ] {
        let mut plan = plan_with(open_stage(arrival(1, 50.0), 11, 60));
        let routes = Routes {
            urls: (0..3)
                .map(|i| RoutedUrl {
                    url: format!("http://replica-{i}:8000/v1"),
                    weight: i + 1,
                })
                .collect(),
            policy,
        };
        plan.target.endpoint = EndpointPlan::Urls(routes.clone());
        let whole: BTreeMap<(u64, u32), usize> = (0..60)
            .flat_map(|i| (0..4).map(move |k| (i, k)))
            .map(|(i, k)| ((i, k), routes.pick(plan.stages[0].seed, i, k)))
            .collect();
        let mut union = BTreeMap::new();
        for index in 0..4 {
            let shard = slice(plan.clone(), Slice { index, count: 4 }).unwrap();
            let EndpointPlan::Urls(r) = &shard.target.endpoint else {
                panic!("the shard lost its URLs");
            };
            let s = &shard.stages[0];
            for i in (0..60).filter(|&i| s.slice.owns(i)) {
                for k in 0..4 {
                    assert!(union.insert((i, k), r.pick(s.seed, i, k)).is_none());
                }
            }
        }
        assert_eq!(union, whole, "{policy:?}");
    }
}

fn split() -> Vec<crate::protocol::Group> {
    use crate::protocol::{Group, Grouping, Label};
    let label = |name: &str, weight: u32, priority: Option<i64>| Label {
        name: name.into(),
        weight,
        priority,
        dataset: None,
    };
    vec![
        Group {
            by: Grouping::Model,
            labels: vec![label("base", 3, None), label("lora", 1, None)],
        },
        Group {
            by: Grouping::Class,
            labels: vec![label("interactive", 1, Some(0)), label("batch", 1, Some(9))],
        },
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Models and classes split faithfully: a request's labels depend on the stage's seed and
    /// its index alone, so whichever shard sends request `i` sends it with the labels the
    /// whole plan gives it, and the shards' union keeps the plan's shares.
    #[test]
    fn every_shard_sends_each_request_with_the_plans_labels(
        seed in any::<u64>(),
        count in 1u64..2_000,
        n in 1u32..9,
    ) {
        let whole = StagePlan {
            groups: split(),
            ..open_stage(ArrivalSpec::Poisson { rate: Rate(100.0) }, seed, count)
        };
        let planned: BTreeMap<u64, crate::protocol::Labels> =
            (0..count).map(|i| (i, whole.labels(i))).collect();
        let mut union = BTreeMap::new();
        for index in 0..n {
            let mine = StagePlan { slice: Slice { index, count: n }, ..whole.clone() };
            for (i, _) in mine.sends().unwrap() {
                union.insert(i, mine.labels(i));
            }
        }
        prop_assert_eq!(&union, &planned);
        let lora = planned
            .values()
            .filter(|l| l.get(crate::protocol::Grouping::Model) == Some(1))
            .count() as f64;
        if count >= 1_000 {
            // 1 in 4 by weight; 6 standard deviations of a binomial at 1,000 draws.
            prop_assert!((lora / count as f64 - 0.25).abs() < 0.09, "{lora} of {count}");
        }
    }
}
