//! The run's side of telemetry: resolving `prometheus "sim"` to the in-process simulator's
//! `/metrics`, starting the sampler before any load (a required source that is unavailable
//! stops the run), and flagging stages during which a GPU throttled.

use crate::metrics::StageSummary;
use crate::telemetry::{
    MetricsUrl, SourceConfig, Telemetry, TelemetryConfig, TelemetryHandle, TelemetryReport,
};

use super::run::RunError;

/// The simulator's metrics URL from its OpenAI base URL (`http://127.0.0.1:PORT/v1`).
pub(super) fn sim_metrics_url(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    format!("{root}/metrics")
}

/// The config with `prometheus "sim"` pointed at the simulator (when there is one).
pub(super) fn resolve(config: &TelemetryConfig, sim_base_url: Option<&str>) -> TelemetryConfig {
    let mut c = config.clone();
    for s in &mut c.sources {
        if let SourceConfig::Prometheus { url, .. } = s
            && *url == MetricsUrl::Sim
            && let Some(base) = sim_base_url
        {
            *url = MetricsUrl::Url(sim_metrics_url(base));
        }
    }
    c
}

/// Starts every source; `None` when the plan has no telemetry.
pub(super) async fn start(
    config: Option<&TelemetryConfig>,
    sim_base_url: Option<&str>,
) -> Result<Option<TelemetryHandle>, RunError> {
    let Some(config) = config else {
        return Ok(None);
    };
    let config = resolve(config, sim_base_url);
    let unresolved = config.sources.iter().any(|s| {
        matches!(
            s,
            SourceConfig::Prometheus {
                url: MetricsUrl::Sim,
                ..
            }
        )
    });
    if unresolved {
        return Err(RunError::SimMetricsWithoutSim);
    }
    Ok(Some(Telemetry::start_async(config).await?))
}

/// Marks a stage untrusted when any of its GPUs throttled (see `docs/telemetry.md`).
pub(super) fn flag_throttled(report: &TelemetryReport, summary: &mut StageSummary) {
    let Some(stage) = report.stage(&summary.name) else {
        return;
    };
    for g in stage.primary_gpus() {
        if !g.throttled() {
            continue;
        }
        let ratio = g
            .clock_ratio_min
            .map_or_else(|| "unknown".to_string(), |r| format!("{r:.2}"));
        let reasons = if g.throttle_reasons.is_empty() {
            "none reported".to_string()
        } else {
            g.throttle_reasons.join(", ")
        };
        summary.validity.trusted = false;
        summary.validity.reasons.push(format!(
            "GPU throttled during the stage (GPU {} via {}: {:.0}% of samples throttled, lowest \
             clock ratio {ratio}, reasons: {reasons}); latency and throughput are suspect",
            g.device,
            g.source,
            g.throttled_share * 100.0
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::{GpuStageSummary, StageTelemetry};

    #[test]
    fn sim_url_is_resolved_from_the_base_url() {
        assert_eq!(
            sim_metrics_url("http://127.0.0.1:4000/v1"),
            "http://127.0.0.1:4000/metrics"
        );
        let c = TelemetryConfig {
            sources: vec![
                SourceConfig::Prometheus {
                    url: MetricsUrl::Sim,
                    required: true,
                    kind: None,
                },
                SourceConfig::Nvml {
                    devices: None,
                    required: false,
                },
            ],
            ..TelemetryConfig::default()
        };
        let r = resolve(&c, Some("http://127.0.0.1:9/v1/"));
        assert_eq!(r.sources[0].label(), "http://127.0.0.1:9/metrics");
        assert_eq!(r.sources[1], c.sources[1]);
        assert_eq!(resolve(&c, None).sources[0].label(), "sim");
    }

    #[test]
    fn throttled_gpu_makes_the_stage_untrusted() {
        let gpu = |share: f64| GpuStageSummary {
            source: "nvml".into(),
            device: "0".into(),
            samples: 4,
            clock_ratio_min: Some(0.7),
            throttled_share: share,
            throttle_reasons: vec!["sw_thermal_slowdown".into()],
            ..GpuStageSummary::default()
        };
        let report = |share| TelemetryReport {
            stages: vec![StageTelemetry {
                name: "s".into(),
                gpus: vec![gpu(share)],
                ..StageTelemetry::default()
            }],
            ..TelemetryReport::default()
        };
        let mut s = StageSummary {
            name: "s".into(),
            ..StageSummary::default()
        };
        flag_throttled(&report(0.0), &mut s);
        assert!(s.validity.trusted);
        flag_throttled(&report(0.5), &mut s);
        assert!(!s.validity.trusted);
        assert!(s.validity.reasons[0].contains("GPU throttled during the stage"));
        assert!(s.validity.reasons[0].contains("0.70"));
        assert!(s.validity.reasons[0].contains("sw_thermal_slowdown"));
    }
}
