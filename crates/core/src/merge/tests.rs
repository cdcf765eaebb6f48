//! Merging shards is exact: the merged histograms are those of all requests aggregated in one
//! place, counts add up, rates use the union window, and what cannot be merged is refused with
//! every reason.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};

use super::*;
use crate::metrics::{
    GoodputSlo, LatencyMetric, PlannedLoad, RequestRecord, StageAggregator, StageClock,
    StageSummary, ValidityRules,
};
use crate::results::{ShardStart, TargetInfo};

fn records(n: u64) -> Vec<RequestRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    (0..n)
        .map(|i| {
            let scheduled = i * 10_000_000;
            let first = scheduled + rng.random_range(20_000_000..90_000_000u64);
            let gaps: Vec<u32> = (0..rng.random_range(1..20))
                .map(|_| rng.random_range(5_000..25_000))
                .collect();
            RequestRecord {
                index: i,
                scheduled_ns: scheduled,
                sent_ns: scheduled + 30_000,
                first_token_ns: Some(first),
                first_answer_ns: Some(first),
                done_ns: first + gaps.iter().map(|g| u64::from(*g) * 1_000).sum::<u64>(),
                chunks: gaps.len() as u32 + 1,
                output_tokens: gaps.len() as u32 + 1,
                itl_us: gaps,
                input_tokens: 50,
                error: (i % 17 == 0).then_some(crate::metrics::ErrorKind::Timeout),
                ..RequestRecord::default()
            }
        })
        .collect()
}

fn summary(records: &[&RequestRecord], wall_s: f64) -> StageSummary {
    let mut agg = StageAggregator::new("main", PlannedLoad::default(), GoodputSlo::default());
    for r in records {
        agg.record(r);
    }
    let clock = StageClock {
        wall_ns: (wall_s * 1e9) as u64,
        cores: 4,
        ..StageClock::default()
    };
    agg.finish(clock, &ValidityRules::default())
}

fn shard_result(index: u32, count: u32, stage: StageSummary, offset_ms: f64) -> Results {
    Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario: "s".into(),
        description: None,
        plan_hash: "abcdef01".into(),
        seed: 1,
        passed: true,
        outcome: SlaOutcome::Pass,
        sla_policy: Default::default(),
        compare_tolerances: Default::default(),
        interrupted: false,
        error: None,
        complete: true,
        infermeter_version: "0".into(),
        started_at: format!("2026-01-01T00:00:0{index}Z"),
        target: TargetInfo {
            endpoint: "http://server".into(),
            api: crate::protocol::Api::CHAT,
            stream: true,
            model: "m".into(),
            tokenizer: "cl100k_base".into(),
            cache_salt: None,
            routes: None,
            affinity_header: None,
            priority_header: None,
            network: None,
        },
        warmup: None,
        stages: vec![stage],
        sla: vec![],
        telemetry: None,
        searches: vec![],
        frontiers: vec![],
        provenance: None,
        configs: None,
        mlperf: None,
        shards: Some(Sharding {
            count,
            shards: vec![ShardRecord {
                index,
                coordinated: true,
                starts: vec![ShardStart {
                    stage: "main".into(),
                    round: 0,
                    agreed_unix_ns: 1,
                    offset_ms,
                    clock_error_ms: 0.1,
                    missing: vec![],
                }],
                interrupted: false,
                error: None,
            }],
            missing: vec![],
            max_skew_ms: None,
            assertions: vec![crate::sla::ScopedAssertion::everywhere(
                crate::sla::parse("ttft.p50 < 10s").unwrap(),
            )],
        }),
    }
}

fn shards(n: u32, all: &[RequestRecord]) -> Vec<(String, Results)> {
    (0..n)
        .map(|i| {
            let mine: Vec<&RequestRecord> = all
                .iter()
                .filter(|r| r.index % u64::from(n) == u64::from(i))
                .collect();
            let r = shard_result(
                i,
                n,
                summary(&mine, 10.0 + f64::from(i)),
                f64::from(i) * 0.5,
            );
            (format!("shard-{i}.json"), r)
        })
        .collect()
}

#[test]
fn merged_histograms_are_those_of_one_process() {
    let all = records(2_000);
    let whole = summary(&all.iter().collect::<Vec<_>>(), 10.0);
    let merged = merge(shards(3, &all), &MergeOptions::default()).unwrap();
    let m = &merged.stages[0];
    for metric in LatencyMetric::ALL {
        assert_eq!(
            m.histogram(metric).unwrap().unwrap(),
            whole.histogram(metric).unwrap().unwrap(),
            "{}",
            metric.key()
        );
    }
    assert_eq!(m.latency, whole.latency, "percentiles and intervals");
    assert_eq!(m.requests, whole.requests);
    assert_eq!(m.tokens, whole.tokens);
    // The union of windows: shard 2 started 1 ms late and ran 12 s.
    assert!((m.wall_time_s - 12.001).abs() < 1e-9, "{}", m.wall_time_s);
    assert!((m.throughput.requests_per_s - whole.requests.ok as f64 / 12.001).abs() < 1e-9);
    assert_eq!(m.throughput.goodput_ratio, whole.throughput.goodput_ratio);
    assert!(m.validity.trusted, "{:?}", m.validity.reasons);
    assert_eq!(merged.sla.len(), 1);
    assert_eq!(merged.outcome, SlaOutcome::Pass);
    let s = merged.shards.unwrap();
    assert_eq!((s.count, s.shards.len()), (3, 3));
    assert_eq!(m.timeline.iter().map(|p| p.sent).sum::<u64>(), 2_000);
}

#[test]
fn skew_and_missing_shards_are_flagged() {
    let all = records(300);
    let mut inputs = shards(3, &all);
    inputs[1].1.shards.as_mut().unwrap().shards[0].starts[0].offset_ms = 9.0;
    inputs.remove(2);
    let err = merge(inputs.clone(), &MergeOptions::default()).unwrap_err();
    assert_eq!(err.problems, ["missing shard(s) 2 of 3"]);
    let opts = MergeOptions {
        allow_missing: true,
        ..MergeOptions::default()
    };
    let merged = merge(inputs, &opts).unwrap();
    let v = &merged.stages[0].validity;
    assert!(!v.trusted);
    let reasons = v.reasons.join("\n");
    assert!(reasons.contains("shard 1: started +9.000 ms"), "{reasons}");
    assert!(
        reasons.contains("partial: no numbers from shard(s) 2 of 3"),
        "{reasons}"
    );
    assert!(merged.interrupted && !merged.passed);
    assert_eq!(merged.shards.unwrap().missing, [2]);
}

#[test]
fn different_plans_and_duplicates_are_refused_all_at_once() {
    let all = records(100);
    let mut inputs = shards(2, &all);
    let mut dup = inputs[1].clone();
    dup.0 = "again.json".into();
    dup.1.plan_hash = "other".into();
    inputs.push(dup);
    let mut stray = inputs[0].clone();
    stray.1.shards = None;
    stray.0 = "plain.json".into();
    inputs.push(stray);
    let err = merge(inputs, &MergeOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("plain.json: not a shard's result"), "{text}");
    assert!(text.contains("results of different plans"), "{text}");
    assert!(
        text.contains("shard 1 given 2 times (shard-1.json, again.json)"),
        "{text}"
    );
}

#[test]
fn a_shard_whose_counts_do_not_add_up_is_refused_by_field() {
    let all = records(100);
    let mut inputs = shards(2, &all);
    inputs[1].1.stages[0].requests.ok += 5;
    let text = merge(inputs, &MergeOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("shard-1.json: not a consistent result: stages[0].requests.failed"),
        "{text}"
    );
}

#[test]
fn a_depth_that_will_not_merge_is_named_as_a_depth() {
    // A third of the requests are subagents' turns at depth 1.
    let mut all = records(300);
    for r in all.iter_mut().filter(|r| r.index % 3 == 0) {
        r.depth = 1;
    }
    let inputs = shards(2, &all);
    let merged = merge(inputs.clone(), &MergeOptions::default()).unwrap();
    let depths = &merged.stages[0].per_depth;
    assert_eq!(depths.len(), 1);
    assert_eq!((depths[0].depth, depths[0].figures.sent), (1, 100));
    // Shard 1's depth-1 histograms do not agree with its counts: gone, then garbled.
    let garbled = |h: &mut Option<crate::metrics::TurnHistograms>| {
        if let Some(h) = h {
            h[LatencyMetric::Ttft] = "not a histogram".into();
        }
    };
    for spoil in [
        (|h: &mut Option<crate::metrics::TurnHistograms>| *h = None) as fn(&mut _),
        garbled,
    ] {
        let mut inputs = inputs.clone();
        spoil(&mut inputs[1].1.stages[0].per_depth[0].figures.histograms);
        let text = merge(inputs, &MergeOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            text.contains(
                "shard 1: stage `main`: the turns of subagents at depth 1 have no readable \
                 histograms"
            ),
            "{text}"
        );
        assert!(!text.contains("URL"), "{text}");
    }
}
