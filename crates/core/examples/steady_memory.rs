//! The memory a stage's aggregation keeps (the collector's fold and the steady-state window),
//! measured by a counting allocator: synthetic records go through `StageAggregator::record`,
//! and the live heap is read after each count of records, before the stage is summarised.
//! Deterministic (a fixed generator, no clock, no I/O): the same bytes on every machine and
//! every load; `scripts/steady-memory.sh` runs it and checks a budget on the growth.
//!
//!     cargo run --release -p infermeter-core --example steady_memory -- [RATE] [COUNTS…]
//!
//! Records arrive at RATE per second (default 1000: 10,000 records are 10 s, 10,000,000 are
//! 2.8 hours) with TTFTs of 20–420 ms and 16 token gaps of 10–40 ms, every 20th failing, in send
//! order; COUNTS default to 10,000 and 10,000,000.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use infermeter_core::metrics::{
    ErrorKind, GoodputSlo, LatencyMetric, PlannedLoad, RequestRecord, StageAggregator, StageClock,
    TimelinePoint, ValidityRules,
};

/// The system allocator, counting the bytes live and the most ever live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is the system allocator's, with the layout it was given; the counters
// only watch.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const MS: u64 = 1_000_000;

/// Record `i` of a stream at `rate` per second.
fn record(i: u64, rate: u64, gaps: &mut Vec<u32>) -> RequestRecord {
    // xorshift of the index: the same record for the same `i` whatever came before.
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let scheduled = i * 1_000_000_000 / rate;
    let ttft = 20 * MS + next() % (400 * MS);
    gaps.clear();
    gaps.extend((0..16).map(|_| 10_000 + (next() % 30_000) as u32));
    let done = scheduled + ttft + gaps.iter().map(|g| u64::from(*g) * 1_000).sum::<u64>();
    let failed = i % 20 == 7;
    RequestRecord {
        index: i,
        scheduled_ns: scheduled,
        sent_ns: scheduled + 30_000,
        done_ns: done,
        first_token_ns: (!failed).then_some(scheduled + ttft),
        first_answer_ns: (!failed).then_some(scheduled + ttft),
        itl_us: if failed { Vec::new() } else { gaps.clone() },
        chunks: 17,
        input_tokens: 128,
        output_tokens: 17,
        error: failed.then_some(ErrorKind::Timeout),
        ..RequestRecord::default()
    }
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.replace(',', "").parse().expect("a whole number"))
        .collect();
    let rate = args.first().copied().unwrap_or(1_000).max(1);
    let counts = match &args[1.min(args.len())..] {
        [] => vec![10_000, 10_000_000],
        c => c.to_vec(),
    };
    println!("records at {rate}/s; live heap kept by one stage's aggregation, then its window");
    for n in counts {
        let before = LIVE.load(Ordering::Relaxed);
        let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
        let mut gaps = Vec::with_capacity(16);
        for i in 0..n {
            agg.record(&record(i, rate, &mut gaps));
        }
        let kept = LIVE.load(Ordering::Relaxed) - before;
        let wall_ns = record(n.saturating_sub(1), rate, &mut gaps).done_ns + MS;
        let clock = StageClock {
            wall_ns,
            cores: 1,
            ..StageClock::default()
        };
        let s = agg.finish(clock, &ValidityRules::default());
        let window = s.steady.as_ref().map_or("none".to_string(), |w| {
            format!(
                "{}–{} s, {} requests, TTFT p99 {:.1} ms",
                w.from_s,
                w.to_s,
                w.requests.sent,
                w.latency[LatencyMetric::Ttft].p99
            )
        });
        println!(
            "{n:>11} records ({:>8.0} s): kept {kept:>11} bytes ({:>7.2} MiB); window {window}",
            wall_ns as f64 / 1e9,
            mib(kept)
        );
    }
    println!(
        "peak live heap: {:.2} MiB; the per-second timeline: {} bytes a second",
        mib(PEAK.load(Ordering::Relaxed)),
        std::mem::size_of::<TimelinePoint>()
    );
}
