//! Turns a parsed Prometheus scrape into server-neutral readings: a [`ServerReading`] for vLLM,
//! SGLang and llama.cpp, per-GPU [`GpuReading`]s for dcgm-exporter. Knows each server's metric
//! names (including renames across versions) and detects the kind from the names it sees.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::expo::Exposition;
use super::gpu::{GpuReading, throttle_reason_names};
use super::kind::PrometheusKind;
use super::latency::LatencyHistograms;
use super::spec::SpecReading;

/// Server-side load at one scrape. Gauges are summed over label sets (data-parallel engines)
/// except KV usage, which is averaged; counters are totals since server start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerReading {
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// KV-cache usage, 0..=1.
    pub kv_cache_usage: Option<f64>,
    /// Prefix-cache hit tokens (counter).
    pub prefix_hits: Option<f64>,
    /// Prefix-cache queried tokens (counter).
    pub prefix_queries: Option<f64>,
    /// The server's own hit-rate gauge, 0..=1, when it has no counters (SGLang).
    pub cache_hit_rate: Option<f64>,
    pub prompt_tokens: Option<f64>,
    pub generation_tokens: Option<f64>,
    /// Speculative decoding, where the server decodes so (vLLM's counters, SGLang's
    /// gauges). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<SpecReading>,
}

/// A scrape, normalised.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Normalized {
    pub server: Option<ServerReading>,
    /// The server's latency histograms (vLLM, SGLang), kept only at stage edges.
    pub latency: Option<LatencyHistograms>,
    /// dcgm-exporter GPUs by their `gpu` label, with the `modelName` label.
    pub gpus: BTreeMap<String, (String, GpuReading)>,
}

pub fn normalize(kind: PrometheusKind, e: &Exposition) -> Normalized {
    match kind {
        PrometheusKind::Vllm => Normalized {
            server: Some(vllm(e)),
            latency: LatencyHistograms::read(kind, e),
            ..Default::default()
        },
        PrometheusKind::Sglang => Normalized {
            server: Some(sglang(e)),
            latency: LatencyHistograms::read(kind, e),
            ..Default::default()
        },
        PrometheusKind::LlamaCpp => Normalized {
            server: Some(llamacpp(e)),
            ..Default::default()
        },
        PrometheusKind::DcgmExporter => Normalized {
            server: None,
            latency: None,
            gpus: dcgm(e),
        },
    }
}

fn vllm(e: &Exposition) -> ServerReading {
    ServerReading {
        running: e.sum_first(&["vllm:num_requests_running"]),
        waiting: e.sum_first(&["vllm:num_requests_waiting"]),
        kv_cache_usage: e.mean_first(&["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"]),
        prefix_hits: e.sum_first(&[
            "vllm:prefix_cache_hits_total",
            "vllm:prefix_cache_hits",
            "vllm:gpu_prefix_cache_hits_total",
        ]),
        prefix_queries: e.sum_first(&[
            "vllm:prefix_cache_queries_total",
            "vllm:prefix_cache_queries",
            "vllm:gpu_prefix_cache_queries_total",
        ]),
        cache_hit_rate: e.mean_first(&["vllm:gpu_prefix_cache_hit_rate"]),
        prompt_tokens: e.sum_first(&["vllm:prompt_tokens_total", "vllm:prompt_tokens"]),
        generation_tokens: e.sum_first(&["vllm:generation_tokens_total", "vllm:generation_tokens"]),
        spec: SpecReading::vllm(e),
    }
}

fn sglang(e: &Exposition) -> ServerReading {
    let prompt = e.sum_first(&["sglang:prompt_tokens_total"]);
    let cached = e.sum_first(&["sglang:cached_tokens_total"]);
    ServerReading {
        running: e.sum_first(&["sglang:num_running_reqs"]),
        waiting: e.sum_first(&["sglang:num_queue_reqs"]),
        kv_cache_usage: e.mean_first(&["sglang:token_usage"]),
        // `prompt_tokens_total` counts every prompt token, cached or not.
        prefix_hits: cached,
        prefix_queries: cached.and(prompt),
        cache_hit_rate: e.mean_first(&["sglang:cache_hit_rate"]),
        prompt_tokens: prompt,
        generation_tokens: e.sum_first(&["sglang:generation_tokens_total"]),
        spec: SpecReading::sglang(e),
    }
}

fn llamacpp(e: &Exposition) -> ServerReading {
    // llama-server's `prompt_tokens_total` excludes cached tokens (see its HELP text), so the
    // queried tokens are the processed plus the reused ones.
    let processed = e.sum_first(&["llamacpp:prompt_tokens_total"]);
    let cached = e.sum_first(&["llamacpp:prompt_tokens_cached_total"]);
    ServerReading {
        running: e.sum_first(&["llamacpp:requests_processing"]),
        waiting: e.sum_first(&["llamacpp:requests_deferred"]),
        kv_cache_usage: e.mean_first(&["llamacpp:kv_cache_usage_ratio"]),
        prefix_hits: cached,
        prefix_queries: cached.zip(processed).map(|(c, p)| c + p),
        cache_hit_rate: None,
        prompt_tokens: match (processed, cached) {
            (Some(p), Some(c)) => Some(p + c),
            (p, _) => p,
        },
        generation_tokens: e.sum_first(&["llamacpp:tokens_predicted_total"]),
        spec: None,
    }
}

/// The most GPUs read from one dcgm-exporter page (a node has 8 or 16): each is a series of
/// its own in the memory and an entry in every output, so a page naming more is cut here.
pub const MAX_GPUS: usize = 64;

/// The longest GPU id or model name kept from a page's labels (in characters).
pub const MAX_GPU_LABEL_CHARS: usize = 128;

/// A label's value as kept: at most [`MAX_GPU_LABEL_CHARS`] characters.
fn gpu_label(s: &super::expo::Sample, name: &str) -> Option<String> {
    s.labels
        .get(name)
        .map(|v| v.chars().take(MAX_GPU_LABEL_CHARS).collect())
}

fn dcgm(e: &Exposition) -> BTreeMap<String, (String, GpuReading)> {
    let mut gpus: BTreeMap<String, (String, GpuReading)> = BTreeMap::new();
    for s in &e.samples {
        if !s.name.starts_with("DCGM_FI_") || !s.value.is_finite() {
            continue;
        }
        let id = gpu_label(s, "gpu").unwrap_or_else(|| "0".into());
        if gpus.len() >= MAX_GPUS && !gpus.contains_key(&id) {
            continue;
        }
        let model = gpu_label(s, "modelName").unwrap_or_default();
        let entry = gpus
            .entry(id)
            .or_insert_with(|| (model, GpuReading::default()));
        let r = &mut entry.1;
        let v = s.value;
        match s.name.as_str() {
            "DCGM_FI_DEV_GPU_TEMP" => r.temp_c = Some(v),
            "DCGM_FI_DEV_SM_CLOCK" => r.sm_clock_mhz = Some(v),
            "DCGM_FI_DEV_MAX_SM_CLOCK" => r.sm_clock_max_mhz = Some(v),
            "DCGM_FI_DEV_MEM_CLOCK" => r.mem_clock_mhz = Some(v),
            "DCGM_FI_DEV_MAX_MEM_CLOCK" => r.mem_clock_max_mhz = Some(v),
            "DCGM_FI_DEV_POWER_USAGE" => r.power_w = Some(v),
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" if v >= 0.0 => r.energy_mj = Some(v as u64),
            "DCGM_FI_DEV_FB_USED" => r.mem_used_mib = Some(v),
            "DCGM_FI_DEV_FB_FREE" => {
                // dcgm has no total; used + free is close (reserved memory is left out).
                r.mem_total_mib = Some(v + r.mem_used_mib.unwrap_or(0.0));
            }
            "DCGM_FI_DEV_GPU_UTIL" => r.util_pct = Some(v),
            // Renamed to "clocks event reasons" in DCGM 3.2; same bit layout.
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" | "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
                if v >= 0.0 =>
            {
                r.throttle_reasons = Some(throttle_reason_names(v as u64))
            }
            _ => {}
        }
    }
    // FB_FREE may come before FB_USED: recompute the total once both are in.
    for s in e.named("DCGM_FI_DEV_FB_FREE") {
        let id = gpu_label(s, "gpu").unwrap_or_else(|| "0".into());
        if let Some((_, r)) = gpus.get_mut(&id) {
            r.mem_total_mib = r.mem_used_mib.map(|u| u + s.value);
        }
    }
    gpus
}
