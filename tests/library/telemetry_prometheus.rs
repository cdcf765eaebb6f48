//! The Prometheus source end to end against a tiny axum server on 127.0.0.1: values land in
//! the stage summary, the endpoint going down mid-run becomes a warning and ends the series,
//! and a required endpoint with nothing listening stops the start with a clear error.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use infermeter_core::metrics::TelemetryMetric;
use infermeter_core::telemetry::{
    PrometheusKind, SourceConfig, Telemetry, TelemetryConfig, TelemetryError, telemetry_metric,
};

/// The vLLM fixture, with prefix-cache counters that grow by 1 hit and 2 queries per scrape,
/// so any two scrapes give a hit rate of exactly 0.5.
async fn metrics(State(n): State<Arc<AtomicU64>>) -> String {
    let n = n.fetch_add(1, Ordering::SeqCst) + 1;
    let base = include_str!("../data/telemetry/vllm.txt");
    base.lines()
        .map(|l| {
            if l.starts_with("vllm:prefix_cache_hits_total{") {
                format!("{} {n}", l.rsplit_once(' ').unwrap().0)
            } else if l.starts_with("vllm:prefix_cache_queries_total{") {
                format!("{} {}", l.rsplit_once(' ').unwrap().0, 2 * n)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn config(url: &str, required: bool) -> TelemetryConfig {
    TelemetryConfig {
        interval: infermeter_core::units::Duration::from_millis(50),
        sources: vec![SourceConfig::Prometheus {
            url: url.into(),
            required,
            kind: None,
        }],
        ..TelemetryConfig::default()
    }
}

#[tokio::test]
async fn scrapes_a_server_then_reports_it_going_down() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let scrapes = Arc::new(AtomicU64::new(0));
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(Arc::clone(&scrapes));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stop_rx.await;
            })
            .await
    });

    // The async start keeps this single-threaded runtime free to serve the probe.
    let t = Telemetry::start_async(config(&url, true)).await.unwrap();
    t.stage_started("steady");
    tokio::time::sleep(Duration::from_millis(400)).await;
    t.stage_ended("steady");
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop_tx.send(()).unwrap();
    server.await.unwrap().unwrap();
    let down_at = t.elapsed_s();
    let served = scrapes.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let report = t.finish().await;

    assert_eq!(report.servers.len(), 1);
    let series = &report.servers[0];
    assert_eq!(series.kind, Some(PrometheusKind::Vllm));
    // Every answered scrape but the start-up probe is a point.
    assert_eq!(series.points.len() as u64, served - 1);
    assert!(
        series.points.len() >= 3,
        "several scrapes in 500 ms at 50 ms"
    );
    assert!(
        series.points.iter().all(|p| p.t_s <= down_at),
        "series ends at the outage"
    );
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.contains(&url) && w.contains("scrape failed")),
        "{:?}",
        report.warnings
    );

    let stage = report.stage("steady").unwrap();
    assert!(stage.end_s.unwrap() > stage.start_s);
    let s = &stage.servers[0];
    assert!(s.samples >= 2);
    assert_eq!(s.running_max, Some(24.0));
    assert_eq!(s.waiting_max, Some(7.0));
    assert_eq!(s.kv_cache_max, Some(0.8125));
    assert_eq!(s.prefix_cache_hit_rate, Some(0.5));
    assert_eq!(
        telemetry_metric(&report, "steady", TelemetryMetric::QueueMax, None),
        Some(7.0)
    );
    assert_eq!(
        telemetry_metric(&report, "steady", TelemetryMetric::KvCacheMax, None),
        Some(0.8125)
    );
    assert_eq!(
        telemetry_metric(&report, "steady", TelemetryMetric::EnergyJ, None),
        None,
        "no GPU"
    );
}

async fn unused_url() -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", l.local_addr().unwrap());
    drop(l);
    url
}

#[tokio::test]
async fn a_required_endpoint_with_nothing_listening_fails_the_start() {
    let url = unused_url().await;
    let rt = tokio::runtime::Handle::current();
    let err = match Telemetry::start(&config(&url, true), &rt) {
        Err(e) => e,
        Ok(_) => panic!("start must fail"),
    };
    assert!(
        matches!(err, TelemetryError::PrometheusUnavailable { .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains(&url) && msg.contains("required"), "{msg}");
    assert!(
        msg.contains("start the server"),
        "the message says the fix: {msg}"
    );
}

#[tokio::test]
async fn an_optional_endpoint_with_nothing_listening_is_a_warning() {
    let url = unused_url().await;
    let t = Telemetry::start_async(config(&url, false)).await.unwrap();
    t.stage_started("s");
    t.stage_ended("s");
    let report = t.finish().await;
    assert!(report.servers.is_empty());
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(report.warnings[0].contains(&url) && report.warnings[0].contains("unreachable"));
    assert!(report.stage("s").unwrap().servers.is_empty());
}
