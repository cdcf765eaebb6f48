//! The scenario settings that keep numbers right against real engines: a target's
//! `max-event-size`, `cache-salt` and `reset-cache` (run settings, out of the plan's hash) and
//! the `sla` block's `abort-min-samples` and `abort-grace`.

use std::path::Path;

use infermeter_core::protocol::CacheReset;
use infermeter_core::scenario::{ScenarioError, parse_str};

const REST: &str = r#"
dataset "d" { synthetic { input-tokens 16; output-tokens 8; } }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 4; }
"#;

fn parse(text: &str) -> Result<infermeter_core::scenario::Scenario, ScenarioError> {
    parse_str(
        Path::new("t.kdl"),
        &format!("scenario \"t\"\n{text}{REST}"),
        &[],
    )
}

fn problems(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error for {text}"),
        Err(e) => e
            .problems()
            .iter()
            .map(|p| format!("{} | {} | {:?}\n", p.message, p.label, p.help))
            .collect(),
    }
}

#[test]
fn target_run_settings_parse_and_leave_the_plan_hash_alone() {
    let plain = parse(r#"target "http://127.0.0.1:8000/v1""#).unwrap();
    assert_eq!(plain.target.run.max_event_bytes, 1 << 20);
    assert!(!plain.target.run.cache_salt);
    assert_eq!(plain.target.run.reset_cache, None);
    let full = parse(
        r#"target "http://127.0.0.1:8000/v1" {
            max-event-size "256KiB"
            cache-salt #true
            reset-cache "llama-cpp"
        }"#,
    )
    .unwrap();
    assert_eq!(full.target.run.max_event_bytes, 256 * 1024);
    assert!(full.target.run.cache_salt);
    assert_eq!(full.target.run.reset_cache, Some(CacheReset::LlamaCpp));
    for (text, bytes) in [("2MB", 2_000_000), ("4096", 4096), ("1.5KiB", 1536)] {
        let s = parse(&format!(
            "target \"http://h/v1\" {{ max-event-size \"{text}\"; }}"
        ))
        .unwrap();
        assert_eq!(s.target.run.max_event_bytes, bytes, "{text}");
    }
    let s = parse("target \"sim\" { max-event-size 65536; }").unwrap();
    assert_eq!(s.target.run.max_event_bytes, 65536);
    // How the run measures is not the workload: the plan hashes the same.
    let hash = |s| infermeter_core::plan::compile(&s).unwrap().hash;
    assert_eq!(hash(plain), hash(full));
}

#[test]
fn bad_target_run_settings_say_why() {
    let m = problems(r#"target "sim" { reset-cache "vlm"; }"#);
    assert!(
        m.contains("unknown reset-cache `vlm`") && m.contains("vllm"),
        "{m}"
    );
    let m = problems(r#"target "sim" { max-event-size "12 parsecs"; }"#);
    assert!(m.contains("unknown size unit"), "{m}");
    let m = problems(r#"target "sim" { max-event-size "100"; }"#);
    assert!(m.contains("too small"), "{m}");
    let m = problems(r#"target "sim" { cache-salt "yes"; }"#);
    assert!(m.contains("cache-salt"), "{m}");
}

#[test]
fn abort_settings_parse_at_the_top_level_only() {
    let s = parse(
        r#"sla {
            assert "ttft.p95 < 1s" abort-on-fail=#true
            abort-min-samples 50
            abort-grace "10s"
        }"#,
    )
    .unwrap();
    assert_eq!(s.sla_policy.abort_min_samples, Some(50));
    assert_eq!(
        s.sla_policy.abort_grace.map(|d| d.as_secs_f64()),
        Some(10.0)
    );
    let m = problems(r#"sla { abort-min-samples 0; }"#);
    assert!(m.contains("abort-min-samples"), "{m}");
    let m = problems(r#"sla { abort-grace "soon"; }"#);
    assert!(m.contains("abort-grace") || m.contains("duration"), "{m}");
}
