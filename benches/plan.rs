//! Plan compiler benchmark: compile a 1,000,000-request Poisson plan (median of 5), its peak heap,
//! then draw 1M recipes and render 100k synthetic 128-token prompts. Run with
//! `cargo bench --bench plan`; figures are recorded in docs/plan.md.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use infermeter_core::arrival::ArrivalSpec;
use infermeter_core::dataset::{LengthDist, TokenizerSpec};
use infermeter_core::plan::{self, Load};
use infermeter_core::protocol::{RequestSettings, RunSettings};
use infermeter_core::scenario::{
    Dataset, DatasetKind, Endpoint, ReportSpec, Scenario, Source, Spanned, StageLimit, StageSpec,
    SyntheticSpec, Target,
};
use infermeter_core::units::Rate;

/// Counts live heap bytes and their high-water mark.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const REQUESTS: u64 = 1_000_000;
const PROMPTS: u64 = 100_000;

fn sp<T>(v: T) -> Spanned<T> {
    Spanned::new(v, (0usize, 0usize))
}

fn scenario() -> Scenario {
    Scenario {
        source: Source {
            path: "bench.kdl".into(),
            text: Arc::from(""),
        },
        name: "bench".into(),
        description: None,
        seed: 1,
        tags: vec![],
        params: BTreeMap::new(),
        target: Target {
            endpoint: Endpoint::Sim(Box::default()),
            request: RequestSettings::default(),
            run: RunSettings::default(),
        },
        tokenizer: TokenizerSpec::Cl100kBase,
        datasets: vec![Dataset {
            name: sp("chat".into()),
            kind: DatasetKind::Synthetic(SyntheticSpec {
                input_tokens: sp(LengthDist::LogNormal {
                    median: 300.0,
                    sigma: 0.7,
                    min: 16,
                    max: 4096,
                }),
                output_tokens: sp(LengthDist::Uniform { min: 64, max: 512 }),
            }),
            context: Default::default(),
            hooks: None,
            session: None,
            images: None,
            quality: None,
        }],
        warmup: None,
        stages: vec![StageSpec {
            name: sp("million".into()),
            dataset: sp("chat".into()),
            arrival: sp(ArrivalSpec::Poisson { rate: Rate(1000.0) }),
            limit: StageLimit::Requests(REQUESTS),
            drain_timeout: None,
            profile: None,
            rounds: None,
            until_decided: None,
            groups: Vec::new(),
            priority_gate: false,
            shapes: Vec::new(),
        }],
        sla: vec![],
        sla_policy: Default::default(),
        rounds: 1,
        goodput: None,
        report: ReportSpec::default(),
        telemetry: None,
        server: None,
        infra: Vec::new(),
        mlperf: None,
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn vm_hwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let sc = scenario();
    let mut times = Vec::new();
    let mut peak_heap = 0;
    let mut compiled = None;
    for _ in 0..5 {
        drop(compiled.take());
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let p = plan::compile(&sc).expect("the bench scenario compiles");
        times.push(t.elapsed().as_secs_f64());
        peak_heap = PEAK.load(Ordering::Relaxed) - base;
        compiled = Some(p);
    }
    let p = compiled.expect("five compiles ran");
    let stage = &p.stages[0];
    let Load::Open { schedule, .. } = &stage.load else {
        unreachable!("a Poisson stage is open loop")
    };
    println!(
        "compile 1M-request poisson plan: median {:.3} s (min {:.3}, max {:.3}); peak heap {:.1} MB; plan schedules {} sends, hash {}",
        median(times.clone()),
        times.iter().copied().fold(f64::INFINITY, f64::min),
        times.iter().copied().fold(0.0, f64::max),
        peak_heap as f64 / 1e6,
        schedule.count(),
        p.hash
    );

    let t = Instant::now();
    let mut tokens = 0u64;
    for i in 0..REQUESTS {
        let r = p.request(stage, i);
        tokens += u64::from(r.input_tokens) + u64::from(r.output_tokens);
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "1M recipes: {:.3} s ({:.0} ns each; {tokens} tokens in all)",
        secs,
        secs * 1e9 / REQUESTS as f64
    );

    let t = Instant::now();
    let factory = p
        .prompt_factory(std::path::Path::new("."))
        .expect("cl100k loads");
    let setup = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut bytes = 0usize;
    for i in 0..PROMPTS {
        let r = p.request(stage, i);
        bytes += factory.prompt(stage.dataset, 128, r.item).as_text().len();
    }
    let secs = t.elapsed().as_secs_f64();
    let check = factory.prompt(stage.dataset, 128, p.request(stage, 0).item);
    println!(
        "100k synthetic 128-token prompts: {:.3} s ({:.2} µs each, {bytes} bytes; factory setup {:.3} s; first prompt has {} tokens)",
        secs,
        secs * 1e6 / PROMPTS as f64,
        setup,
        factory.tokenizer().count(check.as_text())
    );
    match vm_hwm_kb() {
        Some(kb) => println!("peak RSS (VmHWM): {:.1} MB", kb as f64 / 1e3),
        None => println!("peak RSS: /proc/self/status unavailable"),
    }
}
