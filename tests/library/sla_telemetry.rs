//! Telemetry SLA metrics: parsing the dotted names and bare-number thresholds, and evaluation
//! from a telemetry report (values, missing telemetry, unmeasured metrics).

use infermeter_core::metrics::{StageSummary, TelemetryMetric};
use infermeter_core::sla::{Metric, ScopedAssertion, SlaErrorKind, evaluate, evaluate_with, parse};
use infermeter_core::telemetry::{
    GpuStageSummary, ServerStageSummary, StageTelemetry, TelemetryReport,
};

fn stage(name: &str, output_tokens: u64) -> StageSummary {
    let mut s = StageSummary {
        name: name.into(),
        ..Default::default()
    };
    s.tokens.output = output_tokens;
    s
}

fn report() -> TelemetryReport {
    TelemetryReport {
        stages: vec![StageTelemetry {
            name: "s".into(),
            gpus: vec![GpuStageSummary {
                source: "nvml".into(),
                device: "0".into(),
                samples: 10,
                clock_ratio_min: Some(0.85),
                temp_max_c: Some(71.0),
                power_mean_w: Some(300.0),
                energy_j: Some(500.0),
                ..Default::default()
            }],
            servers: vec![ServerStageSummary {
                source: "http://h/metrics".into(),
                samples: 10,
                kv_cache_max: Some(0.4),
                waiting_max: Some(12.0),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn parses_dotted_names_and_bare_numbers() {
    let a = parse("gpu.throttle_ratio.min >= 0.9").unwrap();
    assert_eq!(
        a.metric,
        Metric::Telemetry(TelemetryMetric::GpuThrottleRatioMin)
    );
    assert_eq!(a.aggregation, None);
    assert_eq!(a.metric_ref(), "gpu.throttle_ratio.min");
    assert_eq!(
        parse("tokens_per_joule > 2").unwrap().metric,
        Metric::Telemetry(TelemetryMetric::TokensPerJoule)
    );
    assert_eq!(
        parse("gpu.temp.max < 85 °C").unwrap().metric,
        Metric::Telemetry(TelemetryMetric::GpuTempMax)
    );
    assert_eq!(
        parse("gpu.power.mean < 700W").unwrap().metric,
        Metric::Telemetry(TelemetryMetric::GpuPowerMean)
    );
    assert_eq!(
        parse("energy_j < 10000 J").unwrap().metric,
        Metric::Telemetry(TelemetryMetric::EnergyJ)
    );
    let kv = parse("kv_cache.max < 90%").unwrap();
    assert_eq!(kv.metric, Metric::Telemetry(TelemetryMetric::KvCacheMax));
    assert_eq!(kv.threshold, infermeter_core::sla::Threshold::Absolute(0.9));
    assert_eq!(
        parse("queue.max <= 10").unwrap().metric,
        Metric::Telemetry(TelemetryMetric::QueueMax)
    );
    // Wrong units and unknown dotted names are still errors.
    assert_eq!(
        parse("gpu.temp.max < 85ms").unwrap_err().kind,
        SlaErrorKind::UnitMismatch
    );
    assert!(parse("gpu.temp.min < 85").is_err());
    // Latency metrics still need their unit.
    assert_eq!(
        parse("ttft.p95 < 200").unwrap_err().kind,
        SlaErrorKind::MissingUnit
    );
}

#[test]
fn evaluates_from_the_telemetry_report() {
    let stages = [stage("s", 1000)];
    let r = report();
    let cases = [
        ("gpu.throttle_ratio.min >= 0.9", 0.85, false),
        ("gpu.temp.max < 80", 71.0, true),
        ("gpu.power.mean < 350 W", 300.0, true),
        ("energy_j < 1000", 500.0, true),
        ("tokens_per_joule > 1.5", 2.0, true),
        ("kv_cache.max < 0.5", 0.4, true),
        ("queue.max < 10", 12.0, false),
    ];
    for (expr, observed, passed) in cases {
        let a = parse(expr).unwrap();
        let v = evaluate_with(&[ScopedAssertion::everywhere(a)], &stages, None, Some(&r));
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].observed, observed, "{expr}");
        assert_eq!(v[0].passed, passed, "{expr}");
        assert_eq!(v[0].note, None, "{expr}");
    }
}

#[test]
fn missing_telemetry_fails_with_a_note() {
    let a = parse("queue.max < 10").unwrap();
    let v = evaluate(
        &[ScopedAssertion::everywhere(a.clone())],
        &[stage("s", 10)],
        None,
    );
    assert!(!v[0].passed);
    assert!(
        v[0].note
            .as_deref()
            .unwrap()
            .contains("no telemetry in this run")
    );

    // Telemetry without a server source cannot measure the queue.
    let mut r = report();
    r.stages[0].servers.clear();
    let v = evaluate_with(
        &[ScopedAssertion::everywhere(a)],
        &[stage("s", 10)],
        None,
        Some(&r),
    );
    assert!(!v[0].passed);
    assert!(
        v[0].note
            .as_deref()
            .unwrap()
            .contains("did not measure `queue.max`")
    );

    // A stage telemetry never saw.
    let a = parse("gpu.temp.max < 80").unwrap();
    let v = evaluate_with(
        &[ScopedAssertion::everywhere(a)],
        &[stage("other", 10)],
        None,
        Some(&report()),
    );
    assert!(!v[0].passed);
    assert!(
        v[0].note
            .as_deref()
            .unwrap()
            .contains("no record of stage `other`")
    );
}

#[test]
fn a_server_without_a_kv_gauge_is_named_as_the_reason() {
    // llama.cpp's /metrics answers, with no KV-cache gauge: the source is there, the gauge is not.
    let mut r = report();
    r.stages[0].servers[0].kv_cache_max = None;
    r.stages[0].servers[0].kind = Some(infermeter_core::telemetry::PrometheusKind::LlamaCpp);
    let v = evaluate_with(
        &[ScopedAssertion::everywhere(
            parse("kv_cache.max < 90%").unwrap(),
        )],
        &[stage("s", 10)],
        None,
        Some(&r),
    );
    assert!(!v[0].passed);
    let note = v[0].note.as_deref().unwrap();
    assert!(
        note.contains("needs a KV-cache usage gauge")
            && note.contains("llama-cpp at `http://h/metrics`) have none"),
        "{note}"
    );
    assert!(!note.contains("prometheus` server source"), "{note}");
}
