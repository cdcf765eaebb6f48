//! The exposition parser and normaliser on recorded texts of every supported server.

use std::path::Path;

use infermeter_core::telemetry::expo::parse_exposition;
use infermeter_core::telemetry::{PrometheusKind, detect_kind, normalize};

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/telemetry")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn parsed(name: &str) -> (PrometheusKind, infermeter_core::telemetry::Normalized) {
    let e = parse_exposition(&fixture(name));
    assert!(e.bad_lines.is_empty(), "{name}: {:?}", e.bad_lines);
    let kind = detect_kind(&e).expect("kind detected");
    (kind, normalize(kind, &e))
}

#[test]
fn vllm() {
    let (kind, n) = parsed("vllm.txt");
    assert_eq!(kind, PrometheusKind::Vllm);
    let s = n.server.unwrap();
    assert_eq!(s.running, Some(24.0));
    assert_eq!(s.waiting, Some(7.0));
    assert_eq!(s.kv_cache_usage, Some(0.8125));
    assert_eq!(s.prefix_hits, Some(307200.0));
    assert_eq!(s.prefix_queries, Some(1228800.0));
    assert_eq!(s.prompt_tokens, Some(1228800.0));
    assert_eq!(s.generation_tokens, Some(512000.0));
    assert!(n.gpus.is_empty());
}

#[test]
fn vllm_v0_names() {
    let text = "vllm:num_requests_running{model_name=\"m\"} 3.0\n\
                vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.25\n\
                vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.5\n";
    let e = parse_exposition(text);
    let s = normalize(detect_kind(&e).unwrap(), &e).server.unwrap();
    assert_eq!(s.kv_cache_usage, Some(0.25));
    assert_eq!(s.cache_hit_rate, Some(0.5));
    assert_eq!(s.prefix_hits, None);
}

#[test]
fn sglang() {
    let (kind, n) = parsed("sglang.txt");
    assert_eq!(kind, PrometheusKind::Sglang);
    let s = n.server.unwrap();
    assert_eq!(s.running, Some(37.0));
    assert_eq!(s.waiting, Some(12.0));
    assert_eq!(s.kv_cache_usage, Some(0.64));
    assert_eq!(s.cache_hit_rate, Some(0.4375));
    assert_eq!(
        s.prefix_hits, None,
        "no cached-token counter in this version"
    );
    assert_eq!(s.prompt_tokens, Some(845312.0));
    assert_eq!(s.generation_tokens, Some(263424.0));
}

#[test]
fn llama_cpp() {
    let (kind, n) = parsed("llamacpp.txt");
    assert_eq!(kind, PrometheusKind::LlamaCpp);
    let s = n.server.unwrap();
    assert_eq!(s.running, Some(0.0));
    assert_eq!(s.waiting, Some(0.0));
    assert_eq!(s.kv_cache_usage, None);
    assert_eq!(s.prefix_hits, Some(1.0));
    assert_eq!(s.prefix_queries, Some(42.0), "41 processed + 1 cached");
    assert_eq!(s.generation_tokens, Some(19.0));
}

#[test]
fn dcgm_exporter() {
    let (kind, n) = parsed("dcgm.txt");
    assert_eq!(kind, PrometheusKind::DcgmExporter);
    assert!(n.server.is_none());
    assert_eq!(n.gpus.len(), 2);
    let (model, g0) = &n.gpus["0"];
    assert_eq!(model, "NVIDIA H100 80GB HBM3");
    assert_eq!(g0.sm_clock_mhz, Some(1980.0));
    assert_eq!(g0.mem_clock_mhz, Some(2619.0));
    assert_eq!(g0.temp_c, Some(61.0));
    assert_eq!(g0.power_w, Some(512.347));
    assert_eq!(g0.energy_mj, Some(48213764219));
    assert_eq!(g0.mem_used_mib, Some(76430.0));
    assert_eq!(g0.mem_total_mib, Some(81001.0));
    assert_eq!(g0.util_pct, Some(97.0));
    assert_eq!(g0.throttle_reasons, Some(vec![]));
    assert!(!g0.is_throttled(), "no max clock in dcgm: reasons decide");
    let (_, g1) = &n.gpus["1"];
    assert_eq!(g1.temp_c, Some(83.0));
    assert_eq!(
        g1.throttle_reasons.as_deref(),
        Some(
            &[
                "sw_power_cap".to_string(),
                "sw_thermal_slowdown".to_string()
            ][..]
        )
    );
    assert!(g1.is_throttled());
}

#[test]
fn unknown_endpoints_are_not_guessed() {
    let e = parse_exposition("process_cpu_seconds_total 12.5\ngo_goroutines 8\n");
    assert_eq!(detect_kind(&e), None);
}
