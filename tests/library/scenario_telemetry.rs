//! The `telemetry { … }` block: decoding into `TelemetryConfig`, and its effect on the plan
//! (carried through, part of the hash; absent plans keep their hash).

use std::path::Path;

use infermeter_core::scenario::{Scenario, parse_str};
use infermeter_core::telemetry::{PrometheusKind, SourceConfig};
use infermeter_core::units::Duration;

const BASE: &str = r#"
dataset "d" {
    synthetic {
        input-tokens 16
        output-tokens 8
    }
}
stage "s" {
    dataset "d"
    arrival "poisson" rate=10
    requests 5
}
"#;

fn parse(extra: &str) -> Scenario {
    let text = format!("{BASE}{extra}");
    parse_str(Path::new("t.kdl"), &text, &[])
        .unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)))
}

#[test]
fn decodes_every_source_form() {
    let s = parse(
        r#"
telemetry {
    interval "250ms"
    nvml devices="0, 2" required=#true
    prometheus "http://127.0.0.1:8000/metrics" kind="vllm" required=#true
    prometheus "sim"
}
"#,
    );
    let t = s.telemetry.expect("telemetry parsed");
    assert_eq!(t.interval, Duration::from_millis(250));
    assert_eq!(
        t.sources,
        vec![
            SourceConfig::Nvml {
                devices: Some(vec![0, 2]),
                required: true
            },
            SourceConfig::Prometheus {
                url: "http://127.0.0.1:8000/metrics".into(),
                required: true,
                kind: Some(PrometheusKind::Vllm),
            },
            SourceConfig::Prometheus {
                url: "sim".into(),
                required: false,
                kind: None,
            },
        ]
    );
}

#[test]
fn defaults_single_device_and_absence() {
    let t = parse("telemetry { nvml devices=1; }\n")
        .telemetry
        .expect("telemetry parsed");
    assert_eq!(t.interval, Duration::from_millis(1000));
    assert_eq!(
        t.sources,
        vec![SourceConfig::Nvml {
            devices: Some(vec![1]),
            required: false
        }]
    );
    assert!(parse("").telemetry.is_none());
}

#[test]
fn telemetry_is_part_of_the_plan_and_its_hash() {
    let without = infermeter_core::plan::compile(&parse("")).unwrap();
    let with = infermeter_core::plan::compile(&parse("telemetry { nvml; }\n")).unwrap();
    assert!(without.telemetry.is_none());
    assert!(with.telemetry.is_some());
    assert_ne!(without.hash, with.hash);
    // Plans without telemetry serialise as before (no `telemetry` key).
    let json = serde_json::to_value(&without).unwrap();
    assert!(json.get("telemetry").is_none());
}
