//! The simulator's `GET /metrics` over real HTTP: vLLM's names and format, counters that follow
//! the requests served, and gauges that show a queue while requests wait.

use crate::support::sim::{client, instant, start, traces};
use infermeter::sim::SimConfig;
use infermeter::telemetry::{PrometheusKind, detect_kind, expo::parse_exposition, normalize};
use serde_json::json;

async fn scrape(
    http: &reqwest::Client,
    addr: std::net::SocketAddr,
) -> infermeter::telemetry::ServerReading {
    let resp = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let e = parse_exposition(&resp.text().await.unwrap());
    assert_eq!(detect_kind(&e), Some(PrometheusKind::Vllm));
    normalize(PrometheusKind::Vllm, &e)
        .server
        .expect("server reading")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_follow_the_requests_served() {
    let (sim, mut trace) = start(instant()).await;
    let http = client();
    let before = scrape(&http, sim.addr()).await;
    assert_eq!(before.generation_tokens, Some(0.0));
    assert_eq!(before.running, Some(0.0));
    for max_tokens in [3, 4] {
        let resp = http
            .post(format!("{}/completions", sim.base_url()))
            .json(
                &json!({"model": "m", "prompt": "one two three", "max_tokens": max_tokens,
                          "ignore_eos": true}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let _ = resp.text().await;
    }
    let records = traces(&mut trace, 2).await;
    let prompt: u64 = records.iter().map(|r| r.prompt_tokens).sum();
    let after = scrape(&http, sim.addr()).await;
    assert_eq!(after.generation_tokens, Some(7.0));
    assert_eq!(after.prompt_tokens, Some(prompt as f64));
    assert_eq!(after.prefix_queries, Some(prompt as f64));
    assert_eq!(after.prefix_hits, Some(0.0));
    assert_eq!(after.running, Some(0.0));
    assert_eq!(after.waiting, Some(0.0));
    assert_eq!(after.kv_cache_usage, Some(0.0));
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gauges_show_running_waiting_and_kv_usage() {
    // One sequence at a time, each taking ~2 s: the others must wait.
    let config = SimConfig {
        max_running: 1,
        decode_base: infermeter::units::Duration::from_millis(100),
        ..instant()
    };
    let (sim, _trace) = start(config).await;
    let http = client();
    let mut pending = Vec::new();
    for _ in 0..3 {
        let h = http.clone();
        let url = format!("{}/completions", sim.base_url());
        pending.push(tokio::spawn(async move {
            h.post(url)
                .json(&json!({"model": "m", "prompt": "hi", "max_tokens": 20, "ignore_eos": true}))
                .send()
                .await
        }));
    }
    let mut seen = None;
    for _ in 0..100 {
        let r = scrape(&http, sim.addr()).await;
        if r.running == Some(1.0) && r.waiting == Some(2.0) {
            seen = Some(r);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let r = seen.expect("one running and two waiting at some scrape");
    assert!(r.kv_cache_usage.is_some_and(|u| u > 0.0 && u <= 1.0));
    for p in pending {
        p.abort();
    }
    sim.shutdown().await.unwrap();
}
