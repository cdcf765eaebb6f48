//! The run's side of telemetry: resolving `prometheus "sim"` to the in-process simulator's
//! `/metrics`, starting the sampler before any load (a required source that is unavailable
//! stops the run), and flagging stages during which a GPU throttled.

use crate::metrics::{
    Attribution, AttributionSource, FlagKind, LatencyMetric, ServerDist, StageSummary, rest_of,
    tpot_note,
};
use crate::telemetry::{
    MetricsUrl, SourceConfig, Telemetry, TelemetryConfig, TelemetryHandle, TelemetryReport,
};

use super::error::RunError;

/// The simulator's metrics URL from its OpenAI base URL (`http://127.0.0.1:PORT/v1`).
pub(super) fn sim_metrics_url(base_url: &str) -> String {
    format!("{}/metrics", crate::protocol::server_root(base_url))
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
    // A block with only trace settings (`otlp`, `otlp-receive`, `trace-context`) samples
    // nothing.
    let Some(config) = config.filter(|c| !c.sources.is_empty()) else {
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

/// Notes a stage whose responses' draft counters (llama.cpp `timings`) and the server's
/// speculative-decoding counters over the stage disagree (see `metrics::disagreement`).
pub(super) fn check_spec(report: &TelemetryReport, summary: &mut StageSummary) {
    let Some(client) = &summary.spec else { return };
    let Some(stage) = report.stage(&summary.name) else {
        return;
    };
    let server = stage
        .servers
        .iter()
        .filter_map(|s| s.spec.as_ref())
        .filter_map(|s| Some((s.draft_tokens?, s.accepted_tokens?)))
        .reduce(|a, b| (a.0 + b.0, a.1 + b.1));
    if let Some((proposed, accepted)) = server
        && let Some(note) = crate::metrics::disagreement(client, proposed, accepted)
    {
        summary.notes.push(note);
    }
}

/// Where the stage's TTFT went, by a Prometheus source's latency histograms over the stage,
/// when the stage has no per-request attribution (llama.cpp timings) already.
pub(super) fn attribute(report: &TelemetryReport, summary: &mut StageSummary) {
    if summary.attribution.is_some() || summary.requests.ok == 0 {
        return;
    }
    let Some(stage) = report.stage(&summary.name) else {
        return;
    };
    let Some((source, l)) = stage
        .servers
        .iter()
        .find_map(|s| s.latency.as_ref().map(|l| (&s.source, l)))
    else {
        return;
    };
    summary.attribution = Some(prometheus_attribution(source, l, summary));
    let mean_output = summary.tokens.output as f64 / summary.requests.ok.max(1) as f64;
    if let Some(note) = summary
        .attribution
        .as_ref()
        .and_then(|a| tpot_note(a, mean_output))
    {
        summary.notes.push(note);
    }
}

/// The stage's attribution from a Prometheus source's histograms `l`. Answers that came
/// whole (a pooling API, `stream #false`) have no client TTFT: their E2E is split instead
/// (`outside_e2e_ms`), and the server's TTFT, which nothing of the client's stands beside, is
/// left out, so no "TTFT mean 0 ms" and no negative remainder is shown. A stage that generated
/// nothing (pooling) has no decode either.
fn prometheus_attribution(
    source: &str,
    l: &crate::telemetry::ServerLatency,
    summary: &StageSummary,
) -> Attribution {
    let client_ttft = ServerDist::of_dist(&summary.latency[LatencyMetric::Ttft]);
    let client_e2e = ServerDist::of_dist(&summary.latency[LatencyMetric::E2e]);
    let tpot = &summary.latency[LatencyMetric::Tpot];
    let whole = client_ttft.count == 0;
    let generated = summary.tokens.output > 0;
    let server_ttft = l.ttft_ms.filter(|_| !whole);
    Attribution {
        source: AttributionSource::Prometheus,
        server: Some(source.to_string()),
        client_ttft_ms: client_ttft,
        server_ttft_ms: server_ttft,
        queue_ms: l.queue_ms,
        prefill_ms: l.prefill_ms,
        server_other_ms: rest_of(server_ttft, &[l.queue_ms, l.prefill_ms]),
        decode_ms: l.decode_ms.filter(|_| generated),
        server_tpot_ms: l.tpot_ms.filter(|_| generated),
        client_tpot_ms: (tpot.count > 0).then(|| ServerDist::of_dist(tpot)),
        server_e2e_ms: l.e2e_ms,
        client_e2e_ms: l.e2e_ms.map(|_| client_e2e),
        outside_ms: server_ttft.map(|server| client_ttft.mean_minus(&server)),
        outside_e2e_ms: l
            .e2e_ms
            .filter(|_| whole)
            .map(|server| client_e2e.mean_minus(&server)),
        server_requests: l.e2e_ms.or(l.ttft_ms).map(|d| d.count),
    }
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
        summary.validity.push(
            FlagKind::GpuThrottled {
                device: g.device.clone(),
                source: g.source.clone(),
                throttled_share: g.throttled_share,
                clock_ratio_min: g.clock_ratio_min,
                reasons: g.throttle_reasons.clone(),
            }
            .into(),
        );
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
