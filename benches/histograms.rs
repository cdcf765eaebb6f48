//! Histogram storage and statistics benchmark: how many bytes a stage's histograms add to
//! results.json and how long they take to encode and decode, for a 60 s stage at 20 req/s and
//! for 100,000 requests; then the cost of a percentile's interval at n = 10⁷ and of a
//! 2,000-replicate bootstrap between two 10⁶-sample histograms. Run with
//! `cargo bench --bench histograms`; figures are recorded in docs/statistics.md.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use infermeter_core::metrics::{
    GoodputSlo, HistogramCodec, LatencyMetric, PlannedLoad, RequestRecord, StageAggregator,
    StageClock, StageHistograms, StageSummary, ValidityRules,
};
use infermeter_core::stats::{BootstrapOptions, hist, quantile_interval, relative_change};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, LogNormal};

/// A stage of `requests` at `rate` req/s: TTFT ~80 ms, 32–512 output tokens 20 ms apart,
/// send lag ~50 µs (lognormal spreads).
fn stage(requests: u64, rate: f64) -> StageSummary {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let ttft = LogNormal::new((80e6f64).ln(), 0.5).unwrap();
    let gap = LogNormal::new((20e3f64).ln(), 0.3).unwrap();
    let lag = LogNormal::new((50e3f64).ln(), 1.0).unwrap();
    let mut agg = StageAggregator::new("bench", PlannedLoad::default(), GoodputSlo::default());
    for i in 0..requests {
        let scheduled = (i as f64 * 1e9 / rate) as u64;
        let first = scheduled + ttft.sample(&mut rng) as u64;
        let tokens: u32 = rng.random_range(32..=512);
        let itl_us: Vec<u32> = (1..tokens).map(|_| gap.sample(&mut rng) as u32).collect();
        let done = first + itl_us.iter().map(|g| u64::from(*g) * 1_000).sum::<u64>();
        agg.record(&RequestRecord {
            index: i,
            scheduled_ns: scheduled,
            sent_ns: scheduled + lag.sample(&mut rng) as u64,
            done_ns: done,
            first_token_ns: Some(first),
            first_answer_ns: Some(first),
            itl_us,
            chunks: tokens,
            input_tokens: 512,
            output_tokens: tokens,
            ..RequestRecord::default()
        });
    }
    let clock = StageClock {
        wall_ns: (requests as f64 * 1e9 / rate) as u64,
        cores: 1,
        ..StageClock::default()
    };
    agg.finish(clock, &ValidityRules::default())
}

fn median_time(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn storage(label: &str, requests: u64, rate: f64) {
    let s = stage(requests, rate);
    let stored = s.histograms.clone().expect("histograms stored");
    let decoded: Vec<Histogram<u64>> = LatencyMetric::ALL
        .iter()
        .map(|m| stored.decode(*m).unwrap().unwrap())
        .collect();
    let total: usize = LatencyMetric::ALL.iter().map(|m| stored[*m].len()).sum();
    let without = StageSummary {
        histograms: None,
        ..s.clone()
    };
    let json = serde_json::to_string_pretty(&s).unwrap().len();
    let json_without = serde_json::to_string_pretty(&without).unwrap().len();
    println!(
        "{label}: {requests} requests, {} ITL samples",
        s.latency[LatencyMetric::Itl].count
    );
    for (m, h) in LatencyMetric::ALL.iter().zip(&decoded) {
        println!(
            "  {:<12} {:>8} samples {:>7} bytes",
            m.key(),
            h.len(),
            stored[*m].len()
        );
    }
    println!("  all histograms {total} bytes; stage in results.json {json_without} → {json} bytes");
    let encode = median_time(21, || {
        let h = StageHistograms::encode(|m| {
            &decoded[LatencyMetric::ALL.iter().position(|x| *x == m).unwrap()]
        })
        .unwrap();
        std::hint::black_box(h);
    });
    let decode = median_time(21, || {
        for m in LatencyMetric::ALL {
            std::hint::black_box(stored.decode(m).unwrap().unwrap());
        }
    });
    println!(
        "  encode all 7: {:.2} ms, decode all 7: {:.2} ms (median of 21)",
        encode.as_secs_f64() * 1e3,
        decode.as_secs_f64() * 1e3
    );
}

fn runner_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 86_400_000_000, 3).unwrap()
}

fn statistics() {
    let d = LogNormal::new((80e3f64).ln(), 0.5).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut fill = |n: u64, scale: f64| {
        let mut h = runner_histogram();
        for _ in 0..n {
            h.saturating_record((d.sample(&mut rng) * scale) as u64);
        }
        h
    };
    let big = fill(10_000_000, 1.0);
    for p in [0.5, 0.99] {
        let t = median_time(5, || {
            std::hint::black_box(quantile_interval(&big, p, 0.95).unwrap());
        });
        println!(
            "quantile_interval, n = 10^7, p = {p}: {:.2} ms",
            t.as_secs_f64() * 1e3
        );
    }
    let (a, b) = (fill(1_000_000, 1.0), fill(1_000_000, 1.02));
    let t = median_time(5, || {
        std::hint::black_box(relative_change(&a, &b, 0.95, &BootstrapOptions::default()).unwrap());
    });
    println!(
        "relative_change, 2 × 10^6 samples, 2,000 replicates: {:.2} ms",
        t.as_secs_f64() * 1e3
    );
    let size = hist::encode(&big).unwrap().len();
    println!("a 10^7-sample TTFT histogram encodes to {size} bytes");
}

fn main() {
    storage("60 s at 20 req/s", 1_200, 20.0);
    storage("100k requests at 100 req/s", 100_000, 100.0);
    statistics();
}
