//! Per-source recording, free of clocks and I/O so it can be tested with explicit times: a
//! bounded series for the plot, and streaming per-stage accumulators (every sample counts for
//! the stage summaries even after the series was thinned). Stage boundaries carry a reading
//! taken at that moment, so counter deltas (energy, prefix cache) span the stage exactly.

use std::collections::{BTreeMap, BTreeSet};

use super::counter::{CounterDelta, Stat};
use super::gpu::GpuReading;
use super::kind::PrometheusKind;
use super::latency::LatencyHistograms;
use super::normalize::ServerReading;
use super::report::{
    GpuPoint, GpuSeries, GpuStageSummary, ServerPoint, ServerSeries, ServerStageSummary,
};

/// Points kept per series before it is thinned to every other point.
pub const MAX_POINTS: usize = 2000;

/// A series that keeps at most `cap` points: past that it drops every other point and from
/// then on keeps only every `stride`-th sample, so memory stays bounded on long runs.
#[derive(Debug, Clone)]
pub struct BoundedSeries<T> {
    points: Vec<T>,
    stride: u64,
    seen: u64,
    cap: usize,
}

impl<T> BoundedSeries<T> {
    pub fn new(cap: usize) -> Self {
        BoundedSeries {
            points: Vec::new(),
            stride: 1,
            seen: 0,
            cap: cap.max(2),
        }
    }

    pub fn push(&mut self, p: T) {
        if self.seen.is_multiple_of(self.stride) {
            self.points.push(p);
            if self.points.len() > self.cap {
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    (i - 1) % 2 == 0
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }

    pub fn into_parts(self) -> (Vec<T>, u64) {
        (self.points, self.stride)
    }
}

/// One GPU during one stage.
#[derive(Debug, Clone, Default)]
struct GpuAcc {
    samples: u64,
    temp: Stat,
    ratio: Stat,
    power: Stat,
    util: Stat,
    mem: Stat,
    throttled: u64,
    reasons: BTreeSet<String>,
    /// Previous energy reading: (t_s, counter mJ, power W).
    last_energy: Option<(f64, u64, Option<f64>)>,
    energy_mj: f64,
    energy_pairs: u64,
    resets: u32,
}

impl GpuAcc {
    fn push(&mut self, t: f64, r: &GpuReading) {
        self.samples += 1;
        self.temp.push(r.temp_c);
        self.ratio.push(r.clock_ratio());
        self.power.push(r.power_w);
        self.util.push(r.util_pct);
        self.mem.push(r.mem_used_mib);
        if r.is_throttled() {
            self.throttled += 1;
        }
        self.reasons.extend(r.limiting_reasons());
        if let Some(e) = r.energy_mj {
            if let Some((lt, le, lp)) = self.last_energy {
                self.energy_pairs += 1;
                if e >= le {
                    self.energy_mj += (e - le) as f64;
                } else {
                    // The counter went back (driver reload / reset; a u64 of mJ never wraps
                    // in practice). The interval is estimated from power × time; without
                    // power, the new value is what accrued since the reset.
                    self.resets += 1;
                    let dt = (t - lt).max(0.0);
                    self.energy_mj += match (lp, r.power_w) {
                        (Some(a), Some(b)) => (a + b) / 2.0 * dt * 1000.0,
                        (Some(p), None) | (None, Some(p)) => p * dt * 1000.0,
                        (None, None) => e as f64,
                    };
                }
            }
            self.last_energy = Some((t, e, r.power_w));
        }
    }

    fn summary(&self, source: &str, device: &str) -> GpuStageSummary {
        GpuStageSummary {
            source: source.to_string(),
            device: device.to_string(),
            samples: self.samples,
            temp_mean_c: self.temp.mean(),
            temp_max_c: self.temp.max(),
            clock_ratio_min: self.ratio.min(),
            clock_ratio_mean: self.ratio.mean(),
            throttled_share: if self.samples == 0 {
                0.0
            } else {
                self.throttled as f64 / self.samples as f64
            },
            throttle_reasons: self.reasons.iter().cloned().collect(),
            energy_j: (self.energy_pairs > 0).then(|| self.energy_mj / 1000.0),
            energy_counter_resets: self.resets,
            power_mean_w: self.power.mean(),
            util_mean_pct: self.util.mean(),
            mem_used_max_mib: self.mem.max(),
        }
    }
}

/// Stage bookkeeping shared by both recorders: which stages are open, in start order.
#[derive(Debug, Clone)]
struct StageSlot<A> {
    name: String,
    open: bool,
    acc: A,
}

fn open_slots<A>(stages: &mut [StageSlot<A>]) -> impl Iterator<Item = &mut A> {
    stages.iter_mut().filter(|s| s.open).map(|s| &mut s.acc)
}

/// The GPUs of one source (NVML, or a dcgm-exporter endpoint).
#[derive(Debug, Clone)]
pub struct GpuRecorder {
    source: String,
    devices: BTreeMap<String, (String, BoundedSeries<GpuPoint>)>,
    stages: Vec<StageSlot<BTreeMap<String, GpuAcc>>>,
    cap: usize,
}

/// One reading per device: `(id, name, reading)`.
pub type GpuFrame = [(String, String, GpuReading)];

impl GpuRecorder {
    pub fn new(source: &str) -> Self {
        Self::with_cap(source, MAX_POINTS)
    }

    pub fn with_cap(source: &str, cap: usize) -> Self {
        GpuRecorder {
            source: source.to_string(),
            devices: BTreeMap::new(),
            stages: Vec::new(),
            cap,
        }
    }

    /// A periodic sample at `t` seconds.
    pub fn sample(&mut self, t: f64, frame: &GpuFrame) {
        for (id, name, r) in frame {
            let cap = self.cap;
            let (_, series) = self
                .devices
                .entry(id.clone())
                .or_insert_with(|| (name.clone(), BoundedSeries::new(cap)));
            series.push(GpuPoint {
                t_s: t,
                reading: r.clone(),
            });
            for acc in open_slots(&mut self.stages) {
                acc.entry(id.clone()).or_default().push(t, r);
            }
        }
    }

    /// Opens `name` and records the boundary reading into it (and the series).
    pub fn stage_started(&mut self, name: &str, t: f64, frame: &GpuFrame) {
        self.stages.push(StageSlot {
            name: name.to_string(),
            open: true,
            acc: BTreeMap::new(),
        });
        self.sample(t, frame);
    }

    /// Records the boundary reading, then closes the most recent open stage called `name`.
    pub fn stage_ended(&mut self, name: &str, t: f64, frame: &GpuFrame) {
        self.sample(t, frame);
        if let Some(s) = self
            .stages
            .iter_mut()
            .rev()
            .find(|s| s.open && s.name == name)
        {
            s.open = false;
        }
    }

    pub fn finish(self) -> (Vec<GpuSeries>, Vec<(String, Vec<GpuStageSummary>)>) {
        let stages = self
            .stages
            .iter()
            .map(|s| {
                let sums = s
                    .acc
                    .iter()
                    .map(|(id, acc)| acc.summary(&self.source, id))
                    .collect();
                (s.name.clone(), sums)
            })
            .collect();
        let series = self
            .devices
            .into_iter()
            .map(|(device, (name, series))| {
                let (points, stride) = series.into_parts();
                GpuSeries {
                    source: self.source.clone(),
                    device,
                    name,
                    stride,
                    points,
                }
            })
            .collect();
        (series, stages)
    }
}

/// One inference-server endpoint during one stage.
#[derive(Debug, Clone, Default)]
struct ServerAcc {
    samples: u64,
    running: Stat,
    waiting: Stat,
    kv: Stat,
    hit_gauge: Stat,
    hits: CounterDelta,
    queries: CounterDelta,
    prompt: CounterDelta,
    generation: CounterDelta,
    spec: super::spec::SpecAcc,
    /// The server's latency histograms at the stage's start and end scrapes.
    latency_start: Option<LatencyHistograms>,
    latency_end: Option<LatencyHistograms>,
}

impl ServerAcc {
    fn push(&mut self, r: &ServerReading) {
        self.samples += 1;
        self.running.push(r.running);
        self.waiting.push(r.waiting);
        self.kv.push(r.kv_cache_usage);
        self.hit_gauge.push(r.cache_hit_rate);
        self.hits.push(r.prefix_hits);
        self.queries.push(r.prefix_queries);
        self.prompt.push(r.prompt_tokens);
        self.generation.push(r.generation_tokens);
        self.spec.push(r.spec.as_ref());
    }

    fn summary(&self, source: &str, kind: Option<PrometheusKind>) -> ServerStageSummary {
        let from_counters = match (self.hits.get(self.samples), self.queries.get(self.samples)) {
            (Some(h), Some(q)) if q > 0.0 => Some((h / q).clamp(0.0, 1.0)),
            _ => None,
        };
        ServerStageSummary {
            source: source.to_string(),
            kind,
            samples: self.samples,
            running_mean: self.running.mean(),
            running_max: self.running.max(),
            waiting_mean: self.waiting.mean(),
            waiting_max: self.waiting.max(),
            kv_cache_mean: self.kv.mean(),
            kv_cache_max: self.kv.max(),
            prefix_cache_hit_rate: from_counters.or_else(|| self.hit_gauge.mean()),
            prompt_tokens: self.prompt.get(self.samples),
            generation_tokens: self.generation.get(self.samples),
            latency: match (&self.latency_end, &self.latency_start) {
                (Some(end), Some(start)) => Some(end.since(start)).filter(|l| !l.is_empty()),
                _ => None,
            },
            spec: self.spec.summary(),
        }
    }
}

/// One inference-server endpoint (vLLM, SGLang, llama.cpp).
#[derive(Debug, Clone)]
pub struct ServerRecorder {
    source: String,
    pub kind: Option<PrometheusKind>,
    series: BoundedSeries<ServerPoint>,
    stages: Vec<StageSlot<ServerAcc>>,
}

impl ServerRecorder {
    pub fn new(source: &str, kind: Option<PrometheusKind>) -> Self {
        ServerRecorder {
            source: source.to_string(),
            kind,
            series: BoundedSeries::new(MAX_POINTS),
            stages: Vec::new(),
        }
    }

    /// A reading at `t`; `None` when the scrape failed (stages still get opened and closed).
    pub fn sample(&mut self, t: f64, r: Option<&ServerReading>) {
        let Some(r) = r else { return };
        self.series.push(ServerPoint {
            t_s: t,
            reading: r.clone(),
        });
        for acc in open_slots(&mut self.stages) {
            acc.push(r);
        }
    }

    pub fn stage_started(&mut self, name: &str, t: f64, r: Option<&ServerReading>) {
        self.stages.push(StageSlot {
            name: name.to_string(),
            open: true,
            acc: ServerAcc::default(),
        });
        self.sample(t, r);
    }

    pub fn stage_ended(&mut self, name: &str, t: f64, r: Option<&ServerReading>) {
        self.sample(t, r);
        if let Some(s) = self
            .stages
            .iter_mut()
            .rev()
            .find(|s| s.open && s.name == name)
        {
            s.open = false;
        }
    }

    /// The latency histograms scraped at stage `name`'s start (`start`) or end, after
    /// [`stage_started`](Self::stage_started) or [`stage_ended`](Self::stage_ended).
    pub fn stage_edge(&mut self, name: &str, latency: Option<LatencyHistograms>, start: bool) {
        if let Some(s) = self.stages.iter_mut().rev().find(|s| s.name == name) {
            if start {
                s.acc.latency_start = latency;
            } else {
                s.acc.latency_end = latency;
            }
        }
    }

    pub fn finish(self) -> (ServerSeries, Vec<(String, ServerStageSummary)>) {
        let stages = self
            .stages
            .iter()
            .map(|s| (s.name.clone(), s.acc.summary(&self.source, self.kind)))
            .collect();
        let (points, stride) = self.series.into_parts();
        (
            ServerSeries {
                source: self.source,
                kind: self.kind,
                stride,
                points,
            },
            stages,
        )
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
