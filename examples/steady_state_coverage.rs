//! The simulation half of `scripts/steady-state.sh`: whether the batch interval a steady-state
//! window's figures carry (`stats::batch_interval`) covers the true value as often as it
//! claims when neighbouring requests' latencies are correlated, beside the interval that
//! takes them as independent (order statistics, `stats::order_statistic_ranks`, which a whole
//! stage's percentiles carry).
//!
//! Latencies are `exp(0.5·Z)` of a stationary AR(1) series `Z` (`φ` the correlation of one
//! request with the next, unit marginal variance): a queue that makes its neighbours slow
//! together. The true quantiles are known exactly (`exp(0.5·z_q)`), so coverage is counted,
//! not estimated. Every run is seeded (run i uses seed i): the same figures on every machine.
//!
//!     cargo run --example steady_state_coverage -- --runs 1000 --n 4000

use infermeter_core::stats::{BatchCi, Ranks, batch_interval, order_statistic_ranks, z};
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

const CONFIDENCE: f64 = 0.95;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let runs = flag("--runs", 1000);
    let n = flag("--n", 4000);
    println!(
        "steady-state intervals, simulated: {runs} seeded runs of {n} requests per case, \
         latency exp(0.5·AR(1)), nominal coverage {:.0} %",
        CONFIDENCE * 100.0
    );
    println!(
        "{:>5} {:>6} {:>22} {:>22} {:>16}",
        "φ", "figure", "batch coverage", "naive coverage", "width ratio"
    );
    for phi in [0.0, 0.5, 0.9, 0.97] {
        for (q, name) in [(0.5, "p50"), (0.95, "p95"), (0.99, "p99")] {
            let c = coverage(phi, q, n, runs);
            println!(
                "{phi:>5} {name:>6} {:>21.1}% {:>21.1}% {:>15.2}x",
                c.batch * 100.0,
                c.naive * 100.0,
                c.width_ratio
            );
        }
    }
}

struct Coverage {
    batch: f64,
    naive: f64,
    /// Mean batch width over mean naive width.
    width_ratio: f64,
}

fn coverage(phi: f64, q: f64, n: usize, runs: usize) -> Coverage {
    // exp(0.5·Φ⁻¹(q)); `z` is two-sided, so Φ⁻¹(q) = z(2q − 1) above the median.
    let truth = if q == 0.5 {
        1.0
    } else {
        (0.5 * z(2.0 * q - 1.0).expect("a quantile in [0.75, 1)")).exp()
    };
    let (mut batch_hits, mut naive_hits, mut batch_w, mut naive_w) = (0, 0, 0.0, 0.0);
    for seed in 0..runs as u64 {
        let values = series(phi, n, seed);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        let estimate = sorted[rank - 1];
        if let Ok(BatchCi::Interval { low, high, .. }) =
            batch_interval(&values, Some(q), estimate, CONFIDENCE)
        {
            batch_hits += usize::from(low <= truth && truth <= high);
            batch_w += high - low;
        }
        if let Ok(Ranks::Interval { low, high, .. }) =
            order_statistic_ranks(n as u64, q, CONFIDENCE)
        {
            let (low, high) = (sorted[low as usize - 1], sorted[high as usize - 1]);
            naive_hits += usize::from(low <= truth && truth <= high);
            naive_w += high - low;
        }
    }
    Coverage {
        batch: batch_hits as f64 / runs as f64,
        naive: naive_hits as f64 / runs as f64,
        width_ratio: batch_w / naive_w.max(f64::MIN_POSITIVE),
    }
}

/// `n` latencies `exp(0.5·Z)`, `Z` a stationary AR(1) series with correlation `phi` and unit
/// variance, started in its stationary distribution.
fn series(phi: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let innovation = (1.0 - phi * phi).sqrt();
    let mut z: f64 = StandardNormal.sample(&mut rng);
    (0..n)
        .map(|_| {
            let e: f64 = StandardNormal.sample(&mut rng);
            z = phi * z + innovation * e;
            (0.5 * z).exp()
        })
        .collect()
}
