//! The analysis half of `scripts/gate-power.sh`: how often the gate and `compare` reach the
//! right verdict over many runs of one scenario against the simulator with jitter.
//!
//!     cargo run --release --example gate_power -- calibrate RESULTS.json
//!     cargo run --release --example gate_power -- analyze WORKDIR
//!
//! `calibrate` prints the TTFT p95 (ms) of a long run's `steady` stage: the "true" p95 the
//! thresholds are set from. `analyze` reads WORKDIR/base-*/results.json (runs against the
//! baseline simulator) and WORKDIR/slow-*/results.json (against one 15 % slower) and prints:
//! the verdict counts of each assertion, false regressions in pairs of identical runs, detected
//! regressions in baseline/slow pairs, and the smallest slowdown detected in 95 % of pairs —
//! found by scaling the current run's histograms of the identical pairs, which keeps the real
//! run-to-run noise of the baseline (stated as an estimate).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use infermeter_core::metrics::{Bound, StageSummary};
use infermeter_core::metrics::{HistogramCodec, LatencyMetric, StageHistograms};
use infermeter_core::report::{CompareOptions, compare};
use infermeter_core::results::{Results, read_results};
use infermeter_core::sla::{Context, Policy, Untrusted, judge_one, parse};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("calibrate") if args.len() == 2 => calibrate(Path::new(&args[1])),
        Some("analyze") if args.len() == 2 => analyze(Path::new(&args[1])),
        _ => {
            eprintln!("usage: gate_power calibrate RESULTS.json | gate_power analyze WORKDIR");
            std::process::exit(2);
        }
    }
}

fn load(path: &Path) -> Results {
    read_results(path).unwrap_or_else(|e| {
        eprintln!("error: {}", infermeter_core::error::chain(&e));
        std::process::exit(3)
    })
}

fn calibrate(path: &Path) {
    println!(
        "{:.3}",
        steady(&load(path)).latency[LatencyMetric::Ttft].p95
    );
}

fn runs(dir: &Path, prefix: &str) -> Vec<Results> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the work directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
                && p.join("results.json").is_file()
        })
        .collect();
    dirs.sort();
    dirs.iter().map(|d| load(&d.join("results.json"))).collect()
}

fn analyze(dir: &Path) {
    let base = runs(dir, "base-");
    let slow = runs(dir, "slow-");
    println!(
        "runs: {} against the baseline simulator, {} against the slower one",
        base.len(),
        slow.len()
    );

    // Each assertion's verdicts over every baseline run.
    let mut verdicts: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    for r in &base {
        for v in &r.sla {
            *verdicts
                .entry(v.assertion.to_string())
                .or_default()
                .entry(v.outcome.as_str())
                .or_default() += 1;
        }
    }
    println!("\nSLA verdicts over {} runs:", base.len());
    for (expr, counts) in &verdicts {
        let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("  {expr:<28} {}", counts.join(", "));
    }

    in_sample(&base);

    let opts = CompareOptions::default();
    let pairs: Vec<(&Results, &Results)> = base
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| (&c[0], &c[1]))
        .collect();
    let regressed = |b: &Results, c: &Results| compare(b, c, &opts).regressed();
    let false_alarms = pairs.iter().filter(|(b, c)| regressed(b, c)).count();
    println!(
        "\nidentical pairs flagged as regressed: {false_alarms} of {} (tolerance {} %)",
        pairs.len(),
        opts.tolerances.default * 100.0
    );
    if !slow.is_empty() {
        let detected = base
            .iter()
            .zip(&slow)
            .filter(|(b, c)| regressed(b, c))
            .count();
        println!(
            "pairs with a 15 % slower simulator detected as regressed: {detected} of {}",
            base.len().min(slow.len())
        );
    }

    // The smallest slowdown found in 95 % of the identical pairs once the current run's
    // latencies are scaled by it.
    let mut smallest = None;
    for pct in 1..=40u32 {
        let factor = 1.0 + f64::from(pct) / 100.0;
        let hits = pairs
            .iter()
            .filter(|(b, c)| regressed(b, &scaled(c, factor)))
            .count();
        if hits * 20 >= pairs.len() * 19 {
            smallest = Some((pct, hits));
            break;
        }
    }
    match smallest {
        Some((pct, hits)) => println!(
            "smallest slowdown detected in at least 19 of 20 pairs (estimated by scaling the \
             current run's latencies): {pct} % ({hits} of {} pairs)",
            pairs.len()
        ),
        None => println!("no slowdown up to 40 % is detected in 19 of 20 pairs"),
    }
}

fn steady(r: &Results) -> &StageSummary {
    r.stages
        .iter()
        .find(|s| s.name == "steady")
        .expect("a `steady` stage")
}

/// The calibration run's p95 is one run's, made at another time: when the machine's load
/// drifts, so does the p95 each run measures. Here the truth is taken from the very runs
/// judged (their pooled TTFT p95), the spread of the runs' own p95 is set beside one run's
/// interval, and every run is judged again against thresholds at 1.25 ×, 1 × and 0.8 × it.
fn in_sample(base: &[Results]) {
    let mut pooled = Histogram::<u64>::new_with_bounds(1, 86_400_000_000, 3).unwrap();
    let mut p95s = Vec::new();
    let mut widths = Vec::new();
    for r in base {
        let s = steady(r);
        if let Some(h) = s
            .histograms
            .as_ref()
            .and_then(|h| h.decode(LatencyMetric::Ttft)?.ok())
        {
            let _ = pooled.add(&h);
        }
        p95s.push(s.latency[LatencyMetric::Ttft].p95);
        if let Some(Bound::Interval { low, high, .. }) = s.latency[LatencyMetric::Ttft]
            .intervals
            .as_ref()
            .map(|i| i.p95)
        {
            widths.push((high - low) / 2.0 / s.latency[LatencyMetric::Ttft].p95 * 100.0);
        }
    }
    if pooled.is_empty() {
        return;
    }
    let truth = pooled.value_at_quantile(0.95) as f64 / 1000.0;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let (lo, hi) = (
        p95s.iter().copied().fold(f64::INFINITY, f64::min),
        p95s.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    println!(
        "
the runs' own TTFT p95: {lo:.2} to {hi:.2} ms (median {:.2}); one run's 95 % \
         interval: ± {:.1} % (median half-width); pooled p95 of all runs {truth:.3} ms",
        median(&mut p95s),
        median(&mut widths)
    );
    let cx = Context {
        policy: Policy {
            untrusted: Untrusted::Judge,
            ..Policy::default()
        },
        ..Context::default()
    };
    println!("every run judged again against the pooled p95:");
    for (op, factor) in [("<", 1.25), (">", 0.8), ("<", 1.0)] {
        let expr = format!("ttft.p95 {op} {:.3}ms", truth * factor);
        let a = parse(&expr).expect("a valid assertion");
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        for r in base {
            *counts
                .entry(judge_one(&a, steady(r), &cx).outcome.as_str())
                .or_default() += 1;
        }
        let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{k} {n}")).collect();
        println!("  {expr:<28} {}", counts.join(", "));
    }
}

/// `r` with every latency of every stage multiplied by `factor` (histograms and figures).
fn scaled(r: &Results, factor: f64) -> Results {
    let mut r = r.clone();
    for s in &mut r.stages {
        let Some(h) = s.histograms.as_ref() else {
            continue;
        };
        let mut decoded: Vec<Histogram<u64>> = Vec::new();
        for m in LatencyMetric::ALL {
            let mut out = Histogram::<u64>::new_with_bounds(1, 86_400_000_000, 3).unwrap();
            if let Some(Ok(h)) = h.decode(m) {
                // Send lag is the client's: a slower server leaves it as it is.
                let f = if m == LatencyMetric::SendLag {
                    1.0
                } else {
                    factor
                };
                for v in h.iter_recorded() {
                    let value = ((v.value_iterated_to() as f64) * f).round().max(1.0) as u64;
                    let _ = out.record_n(value, v.count_at_value());
                }
            }
            decoded.push(out);
        }
        s.histograms = StageHistograms::encode(|m| {
            &decoded[LatencyMetric::ALL.iter().position(|x| *x == m).unwrap()]
        })
        .ok();
        for m in LatencyMetric::ALL {
            let Some(d) = s.latency.get_mut(m) else {
                continue;
            };
            for v in [
                &mut d.p50,
                &mut d.p90,
                &mut d.p95,
                &mut d.p99,
                &mut d.p999,
                &mut d.max,
                &mut d.min,
                &mut d.mean,
            ] {
                *v *= factor;
            }
        }
    }
    r
}
