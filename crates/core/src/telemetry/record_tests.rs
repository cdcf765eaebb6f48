//! Recorder tests with explicit times and a fake GPU: stage attribution, energy deltas
//! (including a counter reset), throttling shares, counter-based hit rates, thinning.

use super::*;
use crate::telemetry::gpu::{FakeGpu, GpuDevice};

fn gpu(clock: f64, temp: f64, power: f64, energy_mj: u64, reasons: &[&str]) -> GpuReading {
    GpuReading {
        temp_c: Some(temp),
        sm_clock_mhz: Some(clock),
        sm_clock_max_mhz: Some(2000.0),
        power_w: Some(power),
        energy_mj: Some(energy_mj),
        throttle_reasons: Some(reasons.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    }
}

fn frame(dev: &FakeGpu) -> Vec<(String, String, GpuReading)> {
    vec![(dev.id(), dev.name(), dev.read())]
}

#[test]
fn samples_are_attributed_to_the_stage_open_at_their_time() {
    // t=0 idle sample, stage "a" 1..3, gap sample at 4, stage "b" 5..6, trailing sample at 7.
    let dev = FakeGpu::new(
        "0",
        vec![
            gpu(300.0, 40.0, 80.0, 0, &["gpu_idle"]),
            gpu(1980.0, 60.0, 400.0, 1_000, &[]), // a start
            gpu(1980.0, 64.0, 420.0, 401_000, &[]),
            gpu(1600.0, 70.0, 440.0, 821_000, &["sw_power_cap"]), // a end
            gpu(300.0, 50.0, 90.0, 900_000, &["gpu_idle"]),
            gpu(1900.0, 55.0, 300.0, 950_000, &[]), // b start
            gpu(1900.0, 57.0, 310.0, 1_260_000, &[]), // b end
            gpu(300.0, 45.0, 70.0, 1_300_000, &["gpu_idle"]),
        ],
    );
    let mut rec = GpuRecorder::new("nvml");
    rec.sample(0.0, &frame(&dev));
    rec.stage_started("a", 1.0, &frame(&dev));
    rec.sample(2.0, &frame(&dev));
    rec.stage_ended("a", 3.0, &frame(&dev));
    rec.sample(4.0, &frame(&dev));
    rec.stage_started("b", 5.0, &frame(&dev));
    rec.stage_ended("b", 6.0, &frame(&dev));
    rec.sample(7.0, &frame(&dev));
    let (series, stages) = rec.finish();
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].points.len(), 8);
    assert_eq!(stages.len(), 2);

    let (name, a) = &stages[0];
    assert_eq!(name, "a");
    let a = &a[0];
    assert_eq!(a.samples, 3);
    assert_eq!(a.energy_j, Some(820.0), "counter end − start, in J");
    assert_eq!(a.temp_max_c, Some(70.0));
    assert!((a.temp_mean_c.unwrap() - 194.0 / 3.0).abs() < 1e-9);
    assert_eq!(a.clock_ratio_min, Some(0.8));
    assert!((a.throttled_share - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(a.throttle_reasons, vec!["sw_power_cap"]);
    assert_eq!(a.power_mean_w, Some(420.0));

    let b = &stages[1].1[0];
    assert_eq!(b.samples, 2, "the idle sample at t=4 belongs to no stage");
    assert_eq!(b.energy_j, Some(310.0));
    assert_eq!(b.throttled_share, 0.0);
    assert!(b.throttle_reasons.is_empty());
}

#[test]
fn energy_counter_reset_is_estimated_from_power() {
    let mut rec = GpuRecorder::new("nvml");
    let f = |e: u64, p: f64| {
        vec![(
            "0".to_string(),
            "g".to_string(),
            gpu(1980.0, 60.0, p, e, &[]),
        )]
    };
    rec.stage_started("s", 0.0, &f(5_000_000, 400.0));
    rec.sample(1.0, &f(5_400_000, 400.0)); // +400 J
    rec.sample(2.0, &f(1_000, 400.0)); // reset: 1 s at 400 W ≈ 400 J
    rec.stage_ended("s", 3.0, &f(401_000, 400.0)); // +400 J
    let (_, stages) = rec.finish();
    let s = &stages[0].1[0];
    assert_eq!(s.energy_counter_resets, 1);
    assert!(
        (s.energy_j.unwrap() - 1200.0).abs() < 1e-6,
        "{:?}",
        s.energy_j
    );
}

#[test]
fn a_gpu_without_an_energy_counter_has_no_energy() {
    let mut rec = GpuRecorder::new("nvml");
    let r = GpuReading {
        power_w: Some(100.0),
        ..Default::default()
    };
    let f = vec![("0".to_string(), "g".to_string(), r)];
    rec.stage_started("s", 0.0, &f);
    rec.stage_ended("s", 1.0, &f);
    let (_, stages) = rec.finish();
    assert_eq!(stages[0].1[0].energy_j, None);
    assert_eq!(stages[0].1[0].power_mean_w, Some(100.0));
}

#[test]
fn server_counters_give_the_stage_hit_rate_and_token_deltas() {
    let r = |running: f64, waiting: f64, kv: f64, hits: f64, queries: f64, gen_tokens: f64| {
        ServerReading {
            running: Some(running),
            waiting: Some(waiting),
            kv_cache_usage: Some(kv),
            prefix_hits: Some(hits),
            prefix_queries: Some(queries),
            generation_tokens: Some(gen_tokens),
            ..Default::default()
        }
    };
    let mut rec = ServerRecorder::new("http://x/metrics", Some(PrometheusKind::Vllm));
    rec.sample(0.0, Some(&r(0.0, 0.0, 0.0, 500.0, 1000.0, 10.0)));
    rec.stage_started("s", 1.0, Some(&r(2.0, 0.0, 0.1, 500.0, 1000.0, 10.0)));
    rec.sample(2.0, None); // failed scrape: ignored
    rec.sample(3.0, Some(&r(10.0, 4.0, 0.7, 800.0, 2000.0, 510.0)));
    rec.stage_ended("s", 4.0, Some(&r(6.0, 2.0, 0.4, 1100.0, 3000.0, 1010.0)));
    let (series, stages) = rec.finish();
    assert_eq!(series.points.len(), 4);
    let s = &stages[0].1;
    assert_eq!(s.samples, 3);
    assert_eq!(s.running_max, Some(10.0));
    assert_eq!(s.running_mean, Some(6.0));
    assert_eq!(s.waiting_max, Some(4.0));
    assert_eq!(s.kv_cache_max, Some(0.7));
    assert_eq!(
        s.prefix_cache_hit_rate,
        Some(0.3),
        "600 hits / 2000 queried"
    );
    assert_eq!(s.generation_tokens, Some(1000.0));
}

#[test]
fn bounded_series_thins_but_keeps_its_span() {
    let mut s = BoundedSeries::new(100);
    for i in 0..1000u32 {
        s.push(i);
    }
    let (points, stride) = s.into_parts();
    assert!(points.len() <= 100 && points.len() > 50, "{}", points.len());
    assert_eq!(stride, 16);
    assert_eq!(points[0], 0);
    assert!(points.windows(2).all(|w| w[1] - w[0] == 16));
    assert!(*points.last().unwrap() >= 1000 - 16);
}
