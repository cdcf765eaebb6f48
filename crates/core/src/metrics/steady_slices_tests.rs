//! The slices against a brute force over the requests themselves (what the window kept per
//! request before): the same counts, throughput and latency figures, at the base width and
//! once neighbours have merged.

use super::*;
use crate::metrics::measure::{dist, histogram};
use crate::metrics::record::ErrorKind;
use crate::metrics::steady::figures;
use crate::metrics::summary::{Latency, RequestCounts, Throughput};

const MS: u64 = 1_000_000;

/// A deterministic stream of requests over `secs` seconds: latencies from 1 ms to ~3 s (some
/// outlasting many slices), a failure in 13, a session's later turn in 7, a goodput miss in 5.
fn requests(n: u64, secs: u64) -> Vec<(RequestRecord, bool)> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            let scheduled = next() % (secs * 1_000 * MS);
            let ttft = 1 + next() % 400 * MS;
            let gaps: Vec<u32> = (0..next() % 6).map(|_| (next() % 500_000) as u32).collect();
            let done = scheduled + ttft + gaps.iter().map(|g| u64::from(*g) * 1_000).sum::<u64>();
            let failed = i % 13 == 0;
            let r = RequestRecord {
                index: i,
                turn: u32::from(i % 7 == 3),
                scheduled_ns: scheduled,
                sent_ns: scheduled + 20_000,
                done_ns: done,
                first_token_ns: (!failed).then_some(scheduled + ttft),
                first_answer_ns: (!failed).then_some(scheduled + ttft),
                output_tokens: gaps.len() as u32 + 1,
                input_tokens: 10 + (i % 50) as u32,
                itl_us: gaps,
                error: failed.then_some(ErrorKind::Timeout),
                ..RequestRecord::default()
            };
            (r, !failed && i % 5 != 0)
        })
        .collect()
}

fn slices_of(reqs: &[(RequestRecord, bool)], max_slices: usize, max_bytes: usize) -> SteadySlices {
    let mut s = SteadySlices::with_limits(max_slices, max_bytes);
    for (r, good) in reqs {
        s.record(r, *good);
    }
    s
}

/// The window `[from_ns, to_ns)` as keeping every request computes it.
fn brute(
    reqs: &[(RequestRecord, bool)],
    from_ns: u64,
    to_ns: u64,
) -> (RequestCounts, Latency, Throughput) {
    let secs = (to_ns - from_ns) as f64 / 1e9;
    let inside: Vec<_> = reqs
        .iter()
        .filter(|(r, _)| r.scheduled_ns >= from_ns && r.done_ns <= to_ns)
        .collect();
    let ended: Vec<_> = reqs
        .iter()
        .filter(|(r, _)| (from_ns..to_ns).contains(&r.done_ns) && r.ok())
        .collect();
    let sent = inside.len() as u64;
    let ok = inside.iter().filter(|(r, _)| r.ok()).count() as u64;
    let good = inside.iter().filter(|(_, g)| *g).count() as u64;
    let per_s = |n: u64| n as f64 / secs;
    let tokens = |f: fn(&RequestRecord) -> u32| ended.iter().map(|(r, _)| u64::from(f(r))).sum();
    let arrivals = reqs
        .iter()
        .filter(|(r, _)| r.opens_arrival() && (from_ns..to_ns).contains(&r.scheduled_ns))
        .count() as u64;
    let latency = Latency::from_fn(|m| {
        let mut h = histogram();
        for (r, _) in &inside {
            if let Sample::Ns(ns) = m.measure(r) {
                h.saturating_record(ns / 1_000);
            }
        }
        dist(&h)
    });
    let throughput = Throughput {
        requests_per_s: per_s(ended.len() as u64),
        output_tokens_per_s: per_s(tokens(|r| r.output_tokens)),
        input_tokens_per_s: per_s(tokens(|r| r.input_tokens)),
        goodput_per_s: per_s(ended.iter().filter(|(_, g)| *g).count() as u64),
        goodput_ratio: if sent == 0 {
            0.0
        } else {
            good as f64 / sent as f64
        },
        achieved_rate_per_s: per_s(arrivals),
        inputs_per_s: None,
    };
    let requests = RequestCounts {
        sent,
        ok,
        failed: sent - ok,
        ..RequestCounts::default()
    };
    (requests, latency, throughput)
}

/// The slices' window over whole seconds `[from_s, to_s)` equals the brute force's over the
/// instants its slices cover.
fn assert_same(reqs: &[(RequestRecord, bool)], s: &SteadySlices, from_s: usize, to_s: usize) {
    let (from, to) = s.span(from_s, to_s).expect("a whole slice");
    let w = s.width_ns();
    let secs = ((to - from) as u64 * w) as f64 / 1e9;
    let (requests, latency, throughput) = figures(s, (from, to), secs, 0.95);
    let (want_requests, want_latency, want_throughput) =
        brute(reqs, from as u64 * w, to as u64 * w);
    assert_eq!(requests, want_requests, "{from_s}–{to_s} s at {w} ns");
    assert_eq!(throughput, want_throughput, "{from_s}–{to_s} s at {w} ns");
    for (m, d) in latency.iter() {
        let want = want_latency[m];
        assert_eq!(
            Dist {
                intervals: None,
                ..*d
            },
            want,
            "{m:?} {from_s}–{to_s} s"
        );
    }
}

use crate::metrics::dist::Dist;

#[test]
fn buckets_are_the_stage_histograms_buckets() {
    let h = histogram();
    let mut values: Vec<u64> = (0..5_000).collect();
    for p in 11..37 {
        values.extend([(1 << p) - 1, 1 << p, (1 << p) + 1, 3 << (p - 1)]);
    }
    values.extend([MAX_US - 1, MAX_US]);
    for v in values.into_iter().filter(|v| *v <= MAX_US) {
        assert_eq!(bucket_value(bucket(v)), h.lowest_equivalent(v), "{v}");
        assert_eq!(bucket(bucket_value(bucket(v))), bucket(v), "{v}");
    }
    assert!(bucket(MAX_US) < 1 << 16);
}

#[test]
fn a_window_is_what_keeping_every_request_gives() {
    let reqs = requests(4_000, 20);
    let s = slices_of(&reqs, MAX_SLICES, MAX_BYTES);
    assert_eq!(s.width_ns(), BASE_WIDTH_NS);
    for (from, to) in [(0, 20), (3, 17), (5, 8), (0, 3), (19, 22)] {
        assert_same(&reqs, &s, from, to);
    }
    // At the base width the slices' edges are the window's seconds.
    assert_eq!(s.span(3, 17), Some((12, 68)));
}

#[test]
fn long_stages_merge_slices_and_stay_exact_at_their_edges() {
    let reqs = requests(6_000, 40);
    // 16 slices: 40 s need 4-second slices.
    let s = slices_of(&reqs, 16, MAX_BYTES);
    assert_eq!(s.width_ns(), 4_000 * MS);
    assert!(s.slices().len() <= 16);
    // Whole seconds move inward to slice edges: 5–30 s is 8–28 s; 13–15 s holds no slice.
    assert_eq!(s.span(5, 30), Some((2, 7)));
    assert_eq!(s.span(13, 15), None);
    for (from, to) in [(5, 30), (0, 40), (8, 12), (12, 17)] {
        assert_same(&reqs, &s, from, to);
    }
    // Merging as the records come is merging at the end: the order does not matter.
    let mut late = SteadySlices::with_limits(4096, MAX_BYTES);
    for (r, good) in &reqs {
        late.record(r, *good);
    }
    while late.width_ns() < s.width_ns() {
        late.double();
    }
    let sorted = |s: &SteadySlices| {
        let mut v = s.slices().to_vec();
        v.iter_mut()
            .for_each(|s| s.cells.sort_by_key(|c| c.ends_by));
        v
    };
    assert_eq!(sorted(&late), sorted(&s));
}

#[test]
fn the_size_bound_merges_slices_and_holds() {
    let reqs = requests(20_000, 60);
    let unbounded = slices_of(&reqs, MAX_SLICES, usize::MAX);
    // Few requests a slice, their latencies spread: halving the size takes 8-second slices.
    let limit = unbounded.bytes() / 2;
    let s = slices_of(&reqs, MAX_SLICES, limit);
    assert!(s.bytes() <= limit, "{} > {limit}", s.bytes());
    assert!(s.width_ns() > BASE_WIDTH_NS);
    assert_same(&reqs, &s, 10, 50);
}

#[test]
fn a_long_window_has_batch_intervals_around_its_figures() {
    let reqs = requests(20_000, 30);
    let s = slices_of(&reqs, MAX_SLICES, MAX_BYTES);
    let (_, latency, _) = figures(&s, s.span(5, 25).unwrap(), 20.0, 0.95);
    let ttft = latency[LatencyMetric::Ttft];
    let i = ttft.intervals.expect("intervals");
    assert_eq!(i.method, crate::metrics::IntervalMethod::Batches);
    let (low, high) = i.p50.range().expect("a p50 interval");
    assert!(
        low <= ttft.p50 && ttft.p50 <= high,
        "{low} {} {high}",
        ttft.p50
    );
    // A p99.9 needs 25,000 values in five batches.
    assert!(i.p999.range().is_none());
}
