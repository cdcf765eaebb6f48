//! The simulation behind `scripts/until-decided.sh`: how often an `until-decided` stage
//! decides wrongly, and how many requests it needs, over many seeded runs of a stage modelled
//! as the runner drives one.
//!
//!     cargo run --release --example until_decided_sim [-- --runs 1000]
//!
//! A stage sends 20 requests a second on a fixed schedule; each request has a latency drawn
//! from a lognormal (median 1 s, σ 0.5) and fails with the case's error rate. Once a second the
//! stage looks at the requests completed so far (the slow ones sent recently are still in
//! flight, as in a real run, and are taken as unknown: a failure or not, any latency) and
//! stops sending when the assertion is decided on its confidence sequence — `stats::proportion_sequence` for an error rate,
//! `stats::quantile_sequence` for a percentile, the functions the verdicts use — once it has
//! its minimum. The requests in flight are then drained, and the final verdict is taken on
//! every request sent, as a stage's is. Every run is seeded (run i uses seed i), so the
//! figures are the same on every machine.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hdrhistogram::Histogram;
use infermeter_core::stats::{
    QuantileCi, proportion_sequence, quantile_interval, quantile_sequence, wilson,
};
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal, Uniform};

const RATE: f64 = 20.0;
const CONFIDENCE: f64 = 0.95;
/// The latency distribution: lognormal, median 1 s (in µs), σ 0.5.
const MEDIAN_US: f64 = 1e6;
const SIGMA: f64 = 0.5;
/// z of the 95th percentile of the standard normal.
const Z95: f64 = 1.644_853_626_951_472_2;

/// What is asserted, against what truth.
#[derive(Clone, Copy)]
enum Assertion {
    /// `error_rate < threshold` (fractions), with this true error rate.
    ErrorRate { truth: f64, threshold: f64 },
    /// `latency.p95 < threshold`, with the true p95 at `ratio` × the threshold.
    P95 { ratio: f64 },
}

impl Assertion {
    /// The truth's side: true when the assertion holds (a pass is right).
    fn holds(self) -> Option<bool> {
        match self {
            Assertion::ErrorRate { truth, threshold } if truth == threshold => None,
            Assertion::ErrorRate { truth, threshold } => Some(truth < threshold),
            Assertion::P95 { ratio: 1.0 } => None,
            Assertion::P95 { ratio } => Some(ratio < 1.0),
        }
    }

    fn error_rate(self) -> f64 {
        match self {
            Assertion::ErrorRate { truth, .. } => truth,
            Assertion::P95 { .. } => 0.0,
        }
    }

    /// The p95 threshold in µs.
    fn threshold_us(self) -> f64 {
        let true_p95 = MEDIAN_US * (SIGMA * Z95).exp();
        match self {
            Assertion::P95 { ratio } => true_p95 / ratio,
            Assertion::ErrorRate { .. } => f64::NAN,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Decision {
    Pass,
    Fail,
    Undecided,
}

/// What a stage has measured so far.
struct Tally {
    sent: u64,
    failed: u64,
    latency: Histogram<u64>,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            sent: 0,
            failed: 0,
            latency: Histogram::new_with_bounds(1, 86_400_000_000, 3).unwrap(),
        }
    }

    fn add(&mut self, latency_us: u64, failed: bool) {
        self.sent += 1;
        if failed {
            self.failed += 1;
        } else {
            self.latency.saturating_record(latency_us);
        }
    }
}

/// How the stage judges its numbers at a look.
#[derive(Clone, Copy)]
enum Judge {
    /// The confidence sequence, tuned for this many requests (what `until-decided` does).
    Sequence { tuned_for: u64 },
    /// The fixed-sample interval (Wilson, order statistics): right for one look, wrong at many.
    Fixed,
}

/// The decision on what the stage has recorded, with `pending` requests in flight whose
/// values are unknown: the sequence holds whatever they turn out to be, as the runner's looks
/// do (the fixed interval, the naive way, looks at the recorded ones alone).
fn decide(a: Assertion, t: &Tally, judge: Judge, pending: u64) -> Decision {
    let (low, high, threshold) = match a {
        Assertion::ErrorRate { threshold, .. } => {
            let (lo, hi) = match judge {
                Judge::Sequence { tuned_for } => {
                    let n = t.sent + pending;
                    let seq = |k| proportion_sequence(k, n, threshold, CONFIDENCE, tuned_for);
                    (seq(t.failed).unwrap().0, seq(t.failed + pending).unwrap().1)
                }
                Judge::Fixed => match wilson(t.failed, t.sent, CONFIDENCE).unwrap() {
                    Some(iv) => iv,
                    None => return Decision::Undecided,
                },
            };
            (Some(lo), Some(hi), threshold)
        }
        Assertion::P95 { .. } => {
            let h = &t.latency;
            let (lo, hi) = match judge {
                Judge::Sequence { tuned_for } => {
                    quantile_sequence(h, 0.95, CONFIDENCE, tuned_for, (h.len(), pending)).unwrap()
                }
                Judge::Fixed => match quantile_interval(h, 0.95, CONFIDENCE).unwrap() {
                    QuantileCi::Interval(iv) => (Some(iv.low), Some(iv.high)),
                    QuantileCi::Insufficient { .. } => (None, None),
                },
            };
            (lo, hi, a.threshold_us())
        }
    };
    if high.is_some_and(|h| h < threshold) {
        Decision::Pass
    } else if low.is_some_and(|l| l > threshold) {
        Decision::Fail
    } else {
        Decision::Undecided
    }
}

/// How a look decides whether to stop (`LOOK` in the environment): `unknown` (the default:
/// the in-flight look alone) judges every request begun, the ones in flight as unknown;
/// `prefix` (what the runner does) also judges the longest complete prefix of the requests in send order (the first m
/// requests, all completed: an unbiased sample with nothing in flight) and stops when either
/// decides. The final verdict is taken on every request sent; under `prefix`, where that is
/// undecided, it is the prefix's decision at the stop (a running intersection of the two
/// sequences: on the event that both cover the truth, neither decides wrongly).
fn prefix_looks() -> bool {
    std::env::var("LOOK").as_deref() == Ok("prefix")
}

/// One run of `requests MIN until-decided max=MAX`: the final verdict and how many requests it
/// sent.
fn run_stage(a: Assertion, min: u64, max: u64, judge: Judge, seed: u64) -> (Decision, u64) {
    let prefix = prefix_looks() && matches!(judge, Judge::Sequence { .. });
    let (d, n, _) = run_stage_with(a, min, max, judge, seed, prefix);
    (d, n)
}

/// [`run_stage`], with the look's rule given, and whether the final verdict came from the
/// prefix's decision at the stop (the whole stage's sequence left it undecided).
fn run_stage_with(
    a: Assertion,
    min: u64,
    max: u64,
    judge: Judge,
    seed: u64,
    prefix: bool,
) -> (Decision, u64, bool) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let latency = LogNormal::new(MEDIAN_US.ln(), SIGMA).unwrap();
    let unit = Uniform::new(0.0, 1.0).unwrap();
    let mut seen = Tally::new();
    // In flight: (completion time in µs, latency, failed).
    let mut flight: BinaryHeap<Reverse<(u64, u64, bool)>> = BinaryHeap::new();
    let mut sent = 0u64;
    let mut second = 0u64;
    // In send order: (completion time, latency, failed); the complete prefix's tally.
    let mut order: Vec<(u64, u64, bool)> = Vec::new();
    let mut head = Tally::new();
    let mut at_stop = Decision::Undecided;
    while sent < max {
        second += 1;
        let now_us = second * 1_000_000;
        // Sends due before this look.
        while sent < max && (sent as f64 / RATE * 1e6) < now_us as f64 {
            let at = (sent as f64 / RATE * 1e6) as u64;
            let l = latency.sample(&mut rng) as u64;
            let failed = unit.sample(&mut rng) < a.error_rate();
            flight.push(Reverse((at + l, l, failed)));
            order.push((at + l, l, failed));
            sent += 1;
        }
        while let Some(Reverse((done, l, failed))) = flight.peek().copied() {
            if done > now_us {
                break;
            }
            flight.pop();
            seen.add(l, failed);
        }
        let pending = flight.len() as u64;
        if seen.sent < min {
            continue;
        }
        if decide(a, &seen, judge, pending) != Decision::Undecided {
            break;
        }
        if prefix {
            while let Some(&(done, l, failed)) = order.get(head.sent as usize) {
                if done > now_us {
                    break;
                }
                head.add(l, failed);
            }
            at_stop = decide(a, &head, judge, 0);
            if at_stop != Decision::Undecided {
                break;
            }
        }
    }
    // Drained: every request sent is counted.
    for Reverse((_, l, failed)) in flight.drain() {
        seen.add(l, failed);
    }
    match (decide(a, &seen, judge, 0), at_stop) {
        (Decision::Undecided, d) if d != Decision::Undecided => (d, sent, true),
        (d, _) => (d, sent, false),
    }
}

/// A fixed `requests N` stage judged once at its end.
fn fixed_stage(a: Assertion, n: u64, seed: u64) -> Decision {
    run_stage(a, n, n, Judge::Fixed, seed).0
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn percentile(v: &mut [u64], p: f64) -> u64 {
    v.sort_unstable();
    v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1]
}

fn describe(a: Assertion) -> String {
    match a {
        Assertion::ErrorRate { truth, threshold } => format!(
            "error_rate < {}% at a true {}%",
            threshold * 100.0,
            truth * 100.0
        ),
        Assertion::P95 { ratio } => {
            format!("p95 < threshold at a true p95 {:.2} × the threshold", ratio)
        }
    }
}

/// The tuning `until-decided` uses for a stage of `min` to `max` requests.
fn tuning(min: u64, max: u64) -> u64 {
    match std::env::var("TUNE").as_deref() {
        Ok("min") => min,
        Ok("max") => max,
        Ok(n) if n.parse::<u64>().is_ok() => n.parse().unwrap(),
        _ => ((min as f64) * (max as f64)).sqrt() as u64,
    }
}

/// Wrong decisions with the truth on the threshold: every decision is wrong there (the
/// assertion neither holds nor is broken by a margin), so the share decided is the error rate.
fn on_threshold(runs: u64) {
    println!("## Truth on the threshold: share of runs that decided (each decision is wrong)");
    println!();
    println!("| assertion | stage | until-decided | fixed interval at every look |");
    println!("| --- | --- | ---: | ---: |");
    let (min, max) = (200, 5_000);
    for a in [
        Assertion::ErrorRate {
            truth: 0.01,
            threshold: 0.01,
        },
        Assertion::ErrorRate {
            truth: 0.05,
            threshold: 0.05,
        },
        Assertion::P95 { ratio: 1.0 },
    ] {
        let count = |judge| {
            (0..runs)
                .filter(|&s| run_stage(a, min, max, judge, s).0 != Decision::Undecided)
                .count() as f64
        };
        let seq = count(Judge::Sequence {
            tuned_for: tuning(min, max),
        });
        let naive = count(Judge::Fixed);
        println!(
            "| {} | `requests {min} until-decided max={max}` | {:.1} % ({} of {runs}) | {:.1} % |",
            describe(a),
            seq / runs as f64 * 100.0,
            seq,
            naive / runs as f64 * 100.0
        );
    }
    println!();
}

/// The smallest fixed count (on a 5 % grid) whose single interval decides rightly in at least
/// `share` of `runs` runs.
fn fixed_count_for(a: Assertion, share: f64, runs: u64, cap: u64) -> Option<u64> {
    let right = if a.holds() == Some(true) {
        Decision::Pass
    } else {
        Decision::Fail
    };
    let ok = |n: u64| {
        let hits = (0..runs)
            .filter(|&s| fixed_stage(a, n, 1_000_000 + s) == right)
            .count();
        hits as f64 >= share * runs as f64
    };
    // Doubling, then bisection to within 2 %: the runs share their seeds from one n to the
    // next, so `ok` is as good as monotone.
    let (mut lo, mut hi) = (0u64, 50u64);
    while !ok(hi) {
        if hi >= cap {
            return None;
        }
        lo = hi;
        hi = (hi * 2).min(cap);
    }
    while (hi - lo) as f64 > 0.02 * hi as f64 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) { hi = mid } else { lo = mid }
    }
    Some(hi)
}

/// Requests needed, 20 % from the threshold (and a few other cases).
fn sample_sizes(runs: u64) {
    println!("## Requests needed away from the threshold");
    println!();
    println!(
        "| assertion | stage | decided rightly | wrong | requests: median (90th pct) | fixed count deciding in 50 % / 90 % of runs |"
    );
    println!("| --- | --- | ---: | ---: | ---: | ---: |");
    let cases = [
        (Assertion::P95 { ratio: 0.8 }, 200, 5_000),
        (Assertion::P95 { ratio: 1.2 }, 200, 5_000),
        (Assertion::P95 { ratio: 0.9 }, 200, 20_000),
        (
            Assertion::ErrorRate {
                truth: 0.0,
                threshold: 0.01,
            },
            200,
            5_000,
        ),
        (
            Assertion::ErrorRate {
                truth: 0.008,
                threshold: 0.01,
            },
            200,
            100_000,
        ),
        (
            Assertion::ErrorRate {
                truth: 0.012,
                threshold: 0.01,
            },
            200,
            100_000,
        ),
        (
            Assertion::ErrorRate {
                truth: 0.04,
                threshold: 0.05,
            },
            200,
            20_000,
        ),
    ];
    for (a, min, max) in cases {
        let judge = Judge::Sequence {
            tuned_for: tuning(min, max),
        };
        let right = if a.holds() == Some(true) {
            Decision::Pass
        } else {
            Decision::Fail
        };
        let mut sizes = Vec::new();
        let (mut hits, mut wrong) = (0u64, 0u64);
        for s in 0..runs {
            let (d, n) = run_stage(a, min, max, judge, s);
            sizes.push(n);
            if d == right {
                hits += 1;
            } else if d != Decision::Undecided {
                wrong += 1;
            }
        }
        let med = median(&mut sizes);
        let p90 = percentile(&mut sizes, 0.9);
        let fixed_runs = (runs / 4).max(100);
        let show = |n: Option<u64>| n.map_or(format!("> {max}"), |n| n.to_string());
        let half = show(fixed_count_for(a, 0.5, fixed_runs, max));
        let most = show(fixed_count_for(a, 0.9, fixed_runs, max));
        println!(
            "| {} | `requests {min} until-decided max={max}` | {:.1} % | {:.1} % | {med} ({p90}) | {half} / {most} |",
            describe(a),
            hits as f64 / runs as f64 * 100.0,
            wrong as f64 / runs as f64 * 100.0,
        );
    }
    println!();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs = match args.as_slice() {
        [] => 1_000,
        [flag, n] if flag == "--runs" => n.parse().unwrap_or_else(|_| usage()),
        _ => usage(),
    };
    println!(
        "until-decided, simulated: {runs} seeded runs per case, {RATE} requests/s, latency \
         lognormal (median 1 s, σ {SIGMA}), looks once a second, {:.0} % confidence; looks \
         judge {}",
        CONFIDENCE * 100.0,
        if prefix_looks() {
            "the requests in flight as unknown, and the complete prefix (LOOK=prefix)"
        } else {
            "the requests in flight as unknown"
        }
    );
    println!();
    on_threshold(runs);
    sample_sizes(runs);
}

fn usage() -> ! {
    eprintln!("usage: until_decided_sim [--runs N]");
    std::process::exit(2)
}
