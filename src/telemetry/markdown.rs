//! The telemetry section of the Markdown report, as a fragment the report integrator appends:
//! per stage energy, tokens per joule (when output tokens are known), throttling findings
//! that make the stage's numbers suspect, and server queue depth / KV-cache usage.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::report::{StageTelemetry, TelemetryReport, tokens_per_joule};

fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.decimals$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{:.0}%", v * 100.0))
}

/// `output_tokens` maps stage names to their output tokens (from the stage summaries); stages
/// absent from it get no tokens/J column value.
pub fn render_markdown(report: &TelemetryReport, output_tokens: &BTreeMap<String, u64>) -> String {
    let mut out = String::from("## Telemetry\n\n");
    if report.stages.is_empty() && report.gpus.is_empty() && report.servers.is_empty() {
        out.push_str("No telemetry was recorded.\n");
    }
    let any_gpu = report.stages.iter().any(|s| !s.primary_gpus().is_empty());
    if any_gpu {
        out.push_str(
            "| stage | energy (J) | tokens/J | mean power (W) | max temp (°C) | min clock ratio | throttled |\n\
             | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
        );
        for s in &report.stages {
            gpu_row(&mut out, s, output_tokens.get(&s.name).copied());
        }
        out.push('\n');
        for s in &report.stages {
            for g in s.primary_gpus().into_iter().filter(|g| g.throttled()) {
                let reasons = if g.throttle_reasons.is_empty() {
                    "clock below 90% of max".to_string()
                } else {
                    g.throttle_reasons.join(", ")
                };
                let _ = writeln!(
                    out,
                    "- ⚠ stage `{}`: GPU {} throttled in {:.0}% of samples ({reasons}); \
                     its latency and throughput numbers are suspect.",
                    s.name,
                    g.device,
                    g.throttled_share * 100.0
                );
            }
        }
    }
    let any_server = report.stages.iter().any(|s| !s.servers.is_empty());
    if any_server {
        out.push_str(
            "\n| stage | running mean / max | waiting mean / max | KV cache mean / max | prefix-cache hits |\n\
             | --- | ---: | ---: | ---: | ---: |\n",
        );
        for s in &report.stages {
            for v in &s.servers {
                let _ = writeln!(
                    out,
                    "| {} | {} / {} | {} / {} | {} / {} | {} |",
                    s.name,
                    num(v.running_mean, 1),
                    num(v.running_max, 0),
                    num(v.waiting_mean, 1),
                    num(v.waiting_max, 0),
                    pct(v.kv_cache_mean),
                    pct(v.kv_cache_max),
                    pct(v.prefix_cache_hit_rate),
                );
            }
        }
    }
    if !report.warnings.is_empty() {
        out.push_str("\nTelemetry warnings:\n\n");
        for w in &report.warnings {
            let _ = writeln!(out, "- {w}");
        }
    }
    out
}

fn gpu_row(out: &mut String, s: &StageTelemetry, tokens: Option<u64>) {
    let gpus = s.primary_gpus();
    if gpus.is_empty() {
        return;
    }
    let power: Option<f64> = gpus.iter().map(|g| g.power_mean_w).sum();
    let temp = gpus.iter().filter_map(|g| g.temp_max_c).reduce(f64::max);
    let ratio = gpus
        .iter()
        .filter_map(|g| g.clock_ratio_min)
        .reduce(f64::min);
    let throttled = gpus.iter().any(|g| g.throttled());
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} |",
        s.name,
        num(s.energy_j(), 0),
        num(tokens.and_then(|t| tokens_per_joule(s, t)), 2),
        num(power, 0),
        num(temp, 0),
        num(ratio, 2),
        if throttled { "⚠ yes" } else { "no" },
    );
}
