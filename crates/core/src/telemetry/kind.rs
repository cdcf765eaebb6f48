//! What a Prometheus endpoint is ([`PrometheusKind`]), configured or told from the metric
//! names it exposes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::expo::Exposition;

/// What a Prometheus endpoint is. Detected from metric-name prefixes unless configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PrometheusKind {
    Vllm,
    Sglang,
    DcgmExporter,
    LlamaCpp,
}

impl PrometheusKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PrometheusKind::Vllm => "vllm",
            PrometheusKind::Sglang => "sglang",
            PrometheusKind::DcgmExporter => "dcgm-exporter",
            PrometheusKind::LlamaCpp => "llama-cpp",
        }
    }
}

/// The kind whose prefix most samples carry, or `None` when no known name appears.
pub fn detect_kind(e: &Exposition) -> Option<PrometheusKind> {
    let mut counts = [0usize; 4];
    for s in &e.samples {
        let i = if s.name.starts_with("vllm:") {
            0
        } else if s.name.starts_with("sglang:") {
            1
        } else if s.name.starts_with("DCGM_FI_") {
            2
        } else if s.name.starts_with("llamacpp:") {
            3
        } else {
            continue;
        };
        counts[i] += 1;
    }
    let kinds = [
        PrometheusKind::Vllm,
        PrometheusKind::Sglang,
        PrometheusKind::DcgmExporter,
        PrometheusKind::LlamaCpp,
    ];
    let (best, n) = counts.iter().enumerate().max_by_key(|(_, n)| **n)?;
    (*n > 0).then_some(kinds[best])
}
