//! Merge benchmark: `infermeter merge` of 100 shard results, each a 10-minute stage (a
//! per-second timeline of 600 points, whole histograms of ~30,000 requests and ~1.5 million
//! inter-token gaps, as a shard at 50 req/s records), timed as the command does it: parse the
//! 100 results.json texts, then merge (decode, add and re-encode every histogram, sum the
//! counts, judge the SLAs). Prints the best of 5. `cargo bench --bench merge`; the figure is
//! quoted in docs/distributed.md.

use std::time::{Duration, Instant};

use infermeter_core::merge::{MergeOptions, merge};
use infermeter_core::metrics::{
    GoodputSlo, LatencyMetric, PlannedLoad, RequestRecord, StageAggregator, StageClock,
    ValidityRules,
};
use infermeter_core::results::{
    RESULTS_SCHEMA_VERSION, Results, ShardRecord, ShardStart, Sharding, TargetInfo,
};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, LogNormal};

const SHARDS: u32 = 100;
const DISTINCT: u32 = 10;
const STAGE_S: u64 = 600;
const RATE: u64 = 50;

/// One shard's stage: the requests of a 10-minute stage at `RATE`, seeded by the shard.
fn stage(index: u32) -> infermeter_core::metrics::StageSummary {
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(index));
    let ttft = LogNormal::new((80e6f64).ln(), 0.5).unwrap();
    let gap = LogNormal::new((20e3f64).ln(), 0.3).unwrap();
    let mut agg = StageAggregator::new("steady", PlannedLoad::default(), GoodputSlo::default());
    for i in 0..STAGE_S * RATE {
        let scheduled = i * 1_000_000_000 / RATE;
        let first = scheduled + ttft.sample(&mut rng) as u64;
        let itl_us: Vec<u32> = (0..rng.random_range(20..80))
            .map(|_| gap.sample(&mut rng) as u32)
            .collect();
        let done = first + itl_us.iter().map(|g| u64::from(*g) * 1_000).sum::<u64>();
        agg.record(&RequestRecord {
            index: i,
            scheduled_ns: scheduled,
            sent_ns: scheduled + 40_000,
            done_ns: done,
            first_token_ns: Some(first),
            first_answer_ns: Some(first),
            chunks: itl_us.len() as u32 + 1,
            output_tokens: itl_us.len() as u32 + 1,
            itl_us,
            input_tokens: 200,
            ..RequestRecord::default()
        });
    }
    let clock = StageClock {
        wall_ns: STAGE_S * 1_000_000_000,
        cores: 4,
        ..StageClock::default()
    };
    agg.finish(clock, &ValidityRules::default())
}

fn shard(index: u32) -> Results {
    Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario: "bench".into(),
        description: None,
        plan_hash: "bench".into(),
        seed: 1,
        passed: true,
        outcome: Default::default(),
        sla_policy: Default::default(),
        compare_tolerances: Default::default(),
        interrupted: false,
        error: None,
        complete: true,
        infermeter_version: "0".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        target: TargetInfo {
            endpoint: "http://server".into(),
            api: infermeter_core::protocol::Api::CHAT,
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
        stages: vec![stage(index)],
        sla: vec![],
        telemetry: None,
        searches: vec![],
        frontiers: Vec::new(),
        provenance: None,
        configs: None,
        mlperf: None,
        shards: Some(sharding(index)),
    }
}

/// The shard's record in its result: coordinated, started on time.
fn sharding(index: u32) -> Sharding {
    Sharding {
        count: SHARDS,
        shards: vec![ShardRecord {
            index,
            coordinated: true,
            starts: vec![ShardStart {
                stage: "steady".into(),
                round: 0,
                agreed_unix_ns: 0,
                offset_ms: 0.2,
                clock_error_ms: 0.05,
                missing: vec![],
            }],
            interrupted: false,
            error: None,
        }],
        missing: vec![],
        max_skew_ms: None,
        assertions: vec![infermeter_core::sla::ScopedAssertion::everywhere(
            infermeter_core::sla::parse("ttft.p99 < 1s").unwrap(),
        )],
    }
}

fn main() {
    let distinct: Vec<Results> = (0..DISTINCT).map(shard).collect();
    let texts: Vec<String> = (0..SHARDS)
        .map(|i| {
            let mut r = distinct[(i % DISTINCT) as usize].clone();
            if let Some(s) = r.shards.as_mut() {
                s.shards[0].index = i;
            }
            serde_json::to_string_pretty(&r).unwrap()
        })
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let (mut parse_best, mut merge_best) = (Duration::MAX, Duration::MAX);
    let mut merged = None;
    for _ in 0..5 {
        let t0 = Instant::now();
        let inputs: Vec<(String, Results)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (format!("shard-{i}"), serde_json::from_str(t).unwrap()))
            .collect();
        let t1 = Instant::now();
        let m = merge(inputs, &MergeOptions::default()).expect("merge");
        let t2 = Instant::now();
        parse_best = parse_best.min(t1 - t0);
        merge_best = merge_best.min(t2 - t1);
        merged = Some(m);
    }
    let m = merged.unwrap();
    let s = &m.stages[0];
    println!(
        "merge of {SHARDS} shard results, one {STAGE_S} s stage each ({:.1} MB of JSON, {} requests, {} ITL samples in all):",
        bytes as f64 / 1e6,
        s.requests.sent,
        s.latency[LatencyMetric::Itl].count
    );
    println!(
        "  parse {:.0} ms + merge {:.0} ms = {:.0} ms (best of 5)",
        parse_best.as_secs_f64() * 1e3,
        merge_best.as_secs_f64() * 1e3,
        (parse_best + merge_best).as_secs_f64() * 1e3
    );
    println!(
        "  merged TTFT p99 {:.2} ms, verdicts {}",
        s.latency[LatencyMetric::Ttft].p99,
        m.sla.len()
    );
}
