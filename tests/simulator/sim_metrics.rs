//! The simulator's `GET /metrics` over real HTTP: vLLM's names and format, counters that follow
//! the requests served, and gauges that show a queue while requests wait.

use crate::support::sim::{client, instant, start, traces};
use infermeter_core::sim::{SimConfig, TraceRecord};
use infermeter_core::telemetry::{PrometheusKind, detect_kind, expo::parse_exposition, normalize};
use serde_json::json;

async fn scrape(
    http: &reqwest::Client,
    addr: std::net::SocketAddr,
) -> infermeter_core::telemetry::ServerReading {
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
                &json!({"model": "infermeter-sim", "prompt": "one two three", "max_tokens": max_tokens,
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
        decode_base: infermeter_core::units::Duration::from_millis(100),
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
                .json(&json!({"model": "infermeter-sim", "prompt": "hi", "max_tokens": 20, "ignore_eos": true}))
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

/// The samples of a scrape by series (name and labels), e.g.
/// `vllm:time_to_first_token_seconds_count{model_name="infermeter-sim"}`.
async fn samples(
    http: &reqwest::Client,
    addr: std::net::SocketAddr,
) -> std::collections::HashMap<String, f64> {
    let text = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// Each histogram's sum grew by what the trace's requests took, to the trace's microsecond
/// resolution (a few µs per request); `delta(name, "sum")` is the growth.
fn sums_match_the_trace(recs: &[TraceRecord], delta: &dyn Fn(&str, &str) -> f64) {
    let secs = |us: u64| us as f64 / 1e6;
    let sum_over = |f: &dyn Fn(&TraceRecord) -> u64| secs(recs.iter().map(f).sum());
    let first = |r: &TraceRecord| r.first_token_us.unwrap();
    let last = |r: &TraceRecord| *r.token_us.last().unwrap();
    let admitted = |r: &TraceRecord| r.admitted_us.unwrap().max(r.arrival_us);
    let close = |name: &str, want: f64| {
        let got = delta(name, "sum");
        assert!((got - want).abs() < 1e-4, "{name}: {got} vs trace {want}");
    };
    close(
        "time_to_first_token_seconds",
        sum_over(&|r| first(r) - r.arrival_us),
    );
    close(
        "request_queue_time_seconds",
        sum_over(&|r| admitted(r) - r.arrival_us),
    );
    close(
        "request_prefill_time_seconds",
        sum_over(&|r| first(r) - admitted(r)),
    );
    close(
        "request_decode_time_seconds",
        sum_over(&|r| last(r) - first(r)),
    );
    close(
        "e2e_request_latency_seconds",
        sum_over(&|r| r.finished_us - r.arrival_us),
    );
    close(
        "inter_token_latency_seconds",
        sum_over(&|r| last(r) - first(r)),
    );
}

/// Cumulative buckets never decrease.
fn ttft_buckets_are_cumulative(after: &std::collections::HashMap<String, f64>) {
    let mut ttft_buckets: Vec<(f64, f64)> = after
        .iter()
        .filter_map(|(k, v)| {
            let le = k
                .strip_prefix("vllm:time_to_first_token_seconds_bucket{le=\"")?
                .split('"')
                .next()?;
            Some((le.parse().unwrap_or(f64::INFINITY), *v))
        })
        .collect();
    ttft_buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(ttft_buckets.len(), 23);
    assert!(ttft_buckets.windows(2).all(|w| w[0].1 <= w[1].1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_histograms_follow_the_trace() {
    let config = SimConfig {
        metrics_histograms: true,
        max_running: 2,
        prefill_per_token: infermeter_core::units::Duration(std::time::Duration::from_micros(100)),
        decode_base: infermeter_core::units::Duration::from_millis(2),
        ..SimConfig::default()
    };
    let (sim, mut trace) = start(config).await;
    let http = client();
    // One request first, so that "before" has something to subtract.
    let url = format!("{}/completions", sim.base_url());
    let send = |n: u64| {
        let (h, url) = (http.clone(), url.clone());
        async move {
            h.post(url)
                .json(
                    &json!({"prompt": "the histogram test ".repeat(10), "max_tokens": n,
                              "ignore_eos": true, "stream": true}),
                )
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    send(3).await;
    traces(&mut trace, 1).await;
    let before = samples(&http, sim.addr()).await;
    // Five at once with room for two: some queue.
    let n = 5;
    let mut pending = Vec::new();
    for i in 0..n {
        pending.push(tokio::spawn(send(4 + i)));
    }
    for p in pending {
        p.await.unwrap();
    }
    let recs = traces(&mut trace, n as usize).await;
    let after = samples(&http, sim.addr()).await;
    let delta = |name: &str, suffix: &str| {
        let key = format!("vllm:{name}_{suffix}{{model_name=\"infermeter-sim\"}}");
        after[&key] - before.get(&key).copied().unwrap_or(0.0)
    };
    let tokens: u64 = recs.iter().map(|r| r.completion_tokens).sum();

    for name in [
        "time_to_first_token_seconds",
        "e2e_request_latency_seconds",
        "request_queue_time_seconds",
        "request_prefill_time_seconds",
        "request_decode_time_seconds",
        "request_inference_time_seconds",
        "request_time_per_output_token_seconds",
    ] {
        assert_eq!(delta(name, "count"), n as f64, "{name}");
        let inf = format!("vllm:{name}_bucket{{le=\"+Inf\",model_name=\"infermeter-sim\"}}");
        assert_eq!(
            after[&inf],
            after[&format!("vllm:{name}_count{{model_name=\"infermeter-sim\"}}")]
        );
    }
    for name in [
        "inter_token_latency_seconds",
        "time_per_output_token_seconds",
    ] {
        assert_eq!(delta(name, "count"), (tokens - n) as f64, "{name}");
    }
    sums_match_the_trace(&recs, &delta);
    // Queue + prefill is the server's time to first token.
    let ttft = delta("time_to_first_token_seconds", "sum");
    let parts =
        delta("request_queue_time_seconds", "sum") + delta("request_prefill_time_seconds", "sum");
    assert!((ttft - parts).abs() < 1e-6, "{ttft} vs {parts}");
    assert!(
        delta("request_queue_time_seconds", "sum") > 0.0,
        "some requests queued"
    );
    ttft_buckets_are_cumulative(&after);
    sim.shutdown().await.unwrap();
}
