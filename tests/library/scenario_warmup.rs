//! `warmup until="stable"`: decoding into `WarmupUntil` (defaults, every property, units), the
//! diagnostics for bad values and misplaced properties, and its effect on the plan (carried
//! through, part of the hash; plans without it keep their hash).

use std::path::Path;

use infermeter_core::scenario::{
    DEFAULT_CHECK_EVERY, DEFAULT_UNTIL_MAX, Scenario, ScenarioError, StageLimit, parse_str,
};
use infermeter_core::telemetry::StabilityRule;
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

fn try_parse(extra: &str) -> Result<Scenario, ScenarioError> {
    parse_str(Path::new("t.kdl"), &format!("{BASE}{extra}"), &[])
}

fn parse(extra: &str) -> Scenario {
    try_parse(extra).unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)))
}

fn messages(extra: &str) -> String {
    match try_parse(extra) {
        Ok(_) => panic!("`{extra}` parsed as valid"),
        Err(e) => e
            .problems()
            .iter()
            .map(|p| format!("{} | {} | {:?}\n", p.message, p.label, p.help))
            .collect(),
    }
}

#[test]
fn until_stable_takes_the_defaults() {
    let w = parse("warmup until=\"stable\"").warmup.unwrap();
    let u = w.until.expect("until is set");
    assert_eq!(u.rule, StabilityRule::default());
    assert_eq!(u.check_every, DEFAULT_CHECK_EVERY);
    assert_eq!(w.limit, StageLimit::Duration(DEFAULT_UNTIL_MAX));
    assert_eq!(DEFAULT_UNTIL_MAX, Duration::from_millis(300_000));
    assert_eq!(w.clients, 4);
}

#[test]
fn every_property_is_read() {
    let w = parse(
        "warmup until=\"stable\" max=\"90s\" clients=2 check-every=\"500ms\" ttft-cv=0.05 \
         min-clock-ratio=0.95 max-temp-rate=\"30C/h\" window=\"20s\"",
    )
    .warmup
    .unwrap();
    let u = w.until.unwrap();
    assert_eq!(w.limit, StageLimit::Duration(Duration::from_millis(90_000)));
    assert_eq!(w.clients, 2);
    assert_eq!(u.check_every, Duration::from_millis(500));
    assert_eq!(u.rule.ttft_cv_threshold, 0.05);
    assert_eq!(u.rule.min_clock_ratio, 0.95);
    assert_eq!(u.rule.max_temp_rate_c_per_min, 0.5);
    assert_eq!(u.rule.window, Duration::from_millis(20_000));
    let w = parse("warmup until=\"stable\" max-temp-rate=2")
        .warmup
        .unwrap();
    assert_eq!(w.until.unwrap().rule.max_temp_rate_c_per_min, 2.0);
    assert!(parse("warmup requests=3").warmup.unwrap().until.is_none());
}

#[test]
fn bad_values_are_reported_with_hints() {
    let m = messages("warmup until=\"stabel\"");
    assert!(m.contains("unknown `until` condition `stabel`"), "{m}");
    assert!(m.contains("did you mean `stable`?"), "{m}");

    let m = messages("warmup until=\"stable\" requests=10");
    assert!(m.contains("both until=\"stable\" and `requests`"), "{m}");
    let m = messages("warmup until=\"stable\" duration=\"1m\"");
    assert!(m.contains("both until=\"stable\" and `duration`"), "{m}");

    let m = messages("warmup requests=10 ttft-cv=0.1");
    assert!(
        m.contains("`ttft-cv` on `warmup` without until=\"stable\""),
        "{m}"
    );

    let m = messages("warmup until=\"stable\" max-temp-rate=\"1K/min\"");
    assert!(m.contains("invalid `max-temp-rate`"), "{m}");
    let m = messages("warmup until=\"stable\" max-temp-rate=0");
    assert!(m.contains("`max-temp-rate` out of range"), "{m}");
    let m = messages("warmup until=\"stable\" min-clock-ratio=1.5");
    assert!(m.contains("must be ≤ 1"), "{m}");
    let m = messages("warmup until=\"stable\" ttft-cv=0");
    assert!(m.contains("`ttft-cv` out of range"), "{m}");
    let m = messages("warmup until=\"stable\" max=\"0s\"");
    assert!(m.contains("`max` is zero"), "{m}");
    let m = messages("warmup until=\"stable\" check-evry=\"1s\"");
    assert!(m.contains("did you mean `check-every`?"), "{m}");
}

#[test]
fn until_is_part_of_the_plan_and_its_hash() {
    let compile = |extra: &str| infermeter_core::plan::compile(&parse(extra)).unwrap();
    let plain = compile("warmup duration=\"5m\"");
    let until = compile("warmup until=\"stable\" max=\"5m\"");
    let stricter = compile("warmup until=\"stable\" max=\"5m\" ttft-cv=0.05");
    assert!(plain.warmup_until.is_none());
    assert_eq!(
        until.warmup_until.as_ref().unwrap().rule.ttft_cv_threshold,
        0.2
    );
    // `max` is the warm-up's duration limit.
    assert_eq!(
        until.warmup.as_ref().unwrap().duration,
        Some(Duration::from_millis(300_000))
    );
    assert_ne!(plain.hash, until.hash);
    assert_ne!(until.hash, stricter.hash);
    // Plans without it serialise as before (no `warmup_until` key).
    let json = serde_json::to_value(&plain).unwrap();
    assert!(json.get("warmup_until").is_none());
}
