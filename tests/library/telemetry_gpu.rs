//! The GPU side of the sampler: fake devices through the real sampling thread (energy,
//! throttling, SLA metrics, Markdown), and real NVML on whatever machine runs the tests
//! (without a GPU: optional → warning, required → a clear error).

use std::collections::BTreeMap;
use std::time::Duration;

use infermeter_core::metrics::TelemetryMetric;
use infermeter_core::report::render_telemetry;
use infermeter_core::telemetry::{
    FakeGpu, GpuDevice, GpuOpener, GpuReading, SourceConfig, Telemetry, TelemetryConfig,
    TelemetryError, open_nvml, telemetry_metric, tokens_per_joule,
};

fn nvml_config(required: bool) -> TelemetryConfig {
    TelemetryConfig {
        interval: infermeter_core::units::Duration::from_millis(20),
        sources: vec![SourceConfig::Nvml {
            devices: None,
            required,
        }],
        ..TelemetryConfig::default()
    }
}

/// A fake whose energy counter grows by 1 J per read, at 80 % of its max clock.
fn fake_opener() -> GpuOpener {
    Box::new(|_| {
        let readings = (0..100_000u64)
            .map(|i| GpuReading {
                temp_c: Some(60.0 + (i % 5) as f64),
                sm_clock_mhz: Some(1600.0),
                sm_clock_max_mhz: Some(2000.0),
                power_w: Some(350.0),
                energy_mj: Some(1_000_000 + i * 1000),
                throttle_reasons: Some(vec![]),
                ..Default::default()
            })
            .collect();
        Ok(vec![
            Box::new(FakeGpu::new("0", readings)) as Box<dyn GpuDevice>
        ])
    })
}

#[tokio::test]
async fn fake_gpu_through_the_sampler() {
    let t = Telemetry::start_async_with_gpus(nvml_config(true), fake_opener)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(60)).await;
    t.stage_started("load");
    tokio::time::sleep(Duration::from_millis(200)).await;
    t.stage_ended("load");
    let report = t.finish().await;

    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.gpus.len(), 1);
    assert!(report.gpus[0].points.len() >= 3);
    let stage = report.stage("load").unwrap();
    let g = &stage.gpus[0];
    assert!(g.samples >= 2, "at least the two boundary readings");
    // Every read adds 1 J, so the stage spans samples − 1 increments.
    assert_eq!(g.energy_j, Some((g.samples - 1) as f64));
    assert_eq!(g.clock_ratio_min, Some(0.8));
    assert_eq!(g.throttled_share, 1.0);
    assert_eq!(g.power_mean_w, Some(350.0));

    let energy = g.energy_j.unwrap();
    assert_eq!(
        telemetry_metric(&report, "load", TelemetryMetric::EnergyJ, None),
        Some(energy)
    );
    assert_eq!(
        telemetry_metric(&report, "load", TelemetryMetric::TokensPerJoule, Some(5000)),
        Some(5000.0 / energy)
    );
    assert_eq!(
        telemetry_metric(&report, "load", TelemetryMetric::TokensPerJoule, None),
        None
    );
    assert_eq!(tokens_per_joule(stage, 5000), Some(5000.0 / energy));
    assert_eq!(
        telemetry_metric(&report, "load", TelemetryMetric::GpuThrottleRatioMin, None),
        Some(0.8)
    );
    assert_eq!(
        telemetry_metric(&report, "load", TelemetryMetric::GpuPowerMean, None),
        Some(350.0)
    );
    assert!(telemetry_metric(&report, "load", TelemetryMetric::GpuTempMax, None).unwrap() >= 60.0);
    assert_eq!(
        telemetry_metric(&report, "missing-stage", TelemetryMetric::EnergyJ, None),
        None
    );

    let md = render_telemetry(&report, &BTreeMap::from([("load".to_string(), 5000)])).unwrap();
    assert!(md.contains("| load |"), "{md}");
    assert!(md.contains("throttled in 100% of samples"), "{md}");
    assert!(md.contains("suspect"), "{md}");
}

#[tokio::test]
async fn recent_points_feed_the_stability_rule() {
    let t = Telemetry::start_async_with_gpus(nvml_config(false), fake_opener)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let recent = t.recent_gpu_points();
    assert_eq!(recent.len(), 1);
    assert_eq!(recent[0].0, "nvml/0");
    assert!(!recent[0].1.is_empty());
    // Clock ratio 0.8 is below the default 0.9 (or history is still short): not stable.
    let v = t.stability(&Default::default(), &[]);
    assert!(!v.stable, "{}", v.reason);
    t.finish().await;
}

/// This machine's real NVML: the assertions depend on whether it has a GPU.
#[tokio::test]
async fn real_nvml_optional_and_required() {
    let has_gpu = open_nvml(None).is_ok();
    let optional = Telemetry::start_async(nvml_config(false)).await.unwrap();
    optional.stage_started("s");
    optional.stage_ended("s");
    let report = optional.finish().await;
    let required = Telemetry::start_async(nvml_config(true)).await;
    if has_gpu {
        assert!(!report.gpus.is_empty());
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);
        required.unwrap().finish().await;
    } else {
        assert!(report.gpus.is_empty(), "empty series without a GPU");
        assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
        assert!(
            report.warnings[0].contains("nvml"),
            "{}",
            report.warnings[0]
        );
        let err = match required {
            Err(e) => e,
            Ok(_) => panic!("required NVML without a GPU must fail"),
        };
        assert!(
            matches!(err, TelemetryError::NvmlUnavailable { .. }),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains("required") && msg.contains("libnvidia-ml.so.1"),
            "{msg}"
        );
    }
}
