//! `prefix-cache` over real HTTP: a repeated prompt reports `cached_tokens` (vLLM's form) and
//! reaches its first token sooner on the simulator's clock; each real server's reset endpoint
//! empties the cache; `/metrics` counts the hits.

use crate::support::sim::{client, instant, sse_data, start, traces};
use infermeter_core::sim::{SimConfig, TraceRecord};
use infermeter_core::units::Duration;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

/// 1 ms per prompt token and free decode steps: time to first token is the prefill.
fn cached_config() -> SimConfig {
    SimConfig {
        prefix_cache: true,
        prefill_per_token: Duration::from_millis(1),
        ..instant()
    }
}

/// About 100 cl100k tokens.
fn long_prompt() -> String {
    (0..100)
        .map(|i| format!(" word{}", i % 7))
        .collect::<String>()
}

struct Sim {
    http: reqwest::Client,
    base: String,
    trace: UnboundedReceiver<TraceRecord>,
}

impl Sim {
    /// Sends a non-streaming completion; returns its usage and trace record.
    async fn complete(&mut self, body: Value) -> (Value, TraceRecord) {
        let resp = self
            .http
            .post(format!("{}/v1/completions", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let v: Value = resp.json().await.unwrap();
        let rec = traces(&mut self.trace, 1).await.remove(0);
        (v["usage"].clone(), rec)
    }

    async fn cached(&mut self, prompt: &str) -> u64 {
        let (usage, rec) = self
            .complete(json!({"prompt": prompt, "max_tokens": 2, "ignore_eos": true}))
            .await;
        let cached = usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or_else(|| panic!("no cached_tokens in {usage}"));
        assert_eq!(rec.cached_tokens, cached);
        cached
    }
}

fn ttft_us(r: &TraceRecord) -> u64 {
    r.first_token_us.unwrap() - r.arrival_us
}

/// vLLM's, SGLang's and llama.cpp's ways to empty the cache each leave `prompt` cold again (it
/// had `expected` tokens cached); a malformed slot action is a 400.
async fn every_reset_empties_the_cache(s: &mut Sim, prompt: &str, expected: u64) {
    // vLLM's reset: 200 `{"success": true}` with nothing running; then cold again.
    let resp = s
        .http
        .post(format!("{}/reset_prefix_cache", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), r#"{"success":true}"#);
    assert_eq!(s.cached(prompt).await, 0);
    assert_eq!(s.cached(prompt).await, expected);

    // SGLang's flush (GET or POST), answered with its text.
    for get in [true, false] {
        let url = format!("{}/flush_cache", s.base);
        let req = if get {
            s.http.get(url)
        } else {
            s.http.post(url)
        };
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert!(resp.text().await.unwrap().starts_with("Cache flushed."));
        assert_eq!(s.cached(prompt).await, 0);
    }

    // llama.cpp's slot erase: drops everything, says how much.
    let resp = s
        .http
        .post(format!("{}/slots/0?action=erase", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["id_slot"], 0);
    assert!(v["n_erased"].as_u64().unwrap() >= expected, "{v}");
    assert_eq!(s.cached(prompt).await, 0);
    for bad in [
        "/slots/0?action=save",
        "/slots/x?action=erase",
        "/slots/999?action=erase",
    ] {
        let resp = s
            .http
            .post(format!("{}{bad}", s.base))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{bad}");
        let v: Value = resp.json().await.unwrap();
        assert!(v["error"]["message"].is_string(), "{v}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_prompt_is_served_from_the_cache_until_reset() {
    let (sim, trace) = start(cached_config()).await;
    let mut s = Sim {
        http: client(),
        base: format!("http://{}", sim.addr()),
        trace,
    };
    let prompt = long_prompt();
    let body = json!({"prompt": prompt, "max_tokens": 2, "ignore_eos": true});
    let (cold, cold_rec) = s.complete(body.clone()).await;
    let (warm, warm_rec) = s.complete(body).await;
    let n = cold["prompt_tokens"].as_u64().unwrap();
    assert!(n > 64, "{cold}");
    assert_eq!(cold["prompt_tokens_details"], json!({"cached_tokens": 0}));
    // Whole 16-token blocks, the last prompt token always recomputed (as vLLM does).
    let expected = (n - 1) / 16 * 16;
    assert_eq!(
        warm["prompt_tokens_details"],
        json!({"cached_tokens": expected})
    );
    assert_eq!(warm["prompt_tokens"], n);
    assert_eq!(warm_rec.cached_tokens, expected);
    // Prefill is 1 ms per uncached token: ~n ms cold, ~(n - expected) ms warm.
    assert!(ttft_us(&cold_rec) >= n * 1000 - 2000, "{cold_rec:?}");
    assert!(
        ttft_us(&warm_rec) + 40_000 < ttft_us(&cold_rec),
        "warm {} µs vs cold {} µs",
        ttft_us(&warm_rec),
        ttft_us(&cold_rec)
    );

    // A prompt sharing only the first blocks hits only those.
    let other = format!("{}{}", &prompt[..prompt.len() / 2], " different".repeat(40));
    let partial = s.cached(&other).await;
    assert!(partial > 0 && partial < expected, "{partial}");
    // llama.cpp's cache_prompt: false neither uses nor fills the cache.
    let (usage, _) = s
        .complete(json!({"prompt": "fresh ".repeat(60), "max_tokens": 1, "cache_prompt": false}))
        .await;
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(s.cached(&"fresh ".repeat(60)).await, 0);

    every_reset_empties_the_cache(&mut s, &prompt, expected).await;
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_streams_report_cached_tokens_and_metrics_count_hits() {
    let (sim, mut trace) = start(SimConfig {
        prefill_per_token: Duration::ZERO,
        ..cached_config()
    })
    .await;
    let http = client();
    let content = long_prompt();
    let mut cached = Vec::new();
    for _ in 0..2 {
        let resp = http
            .post(format!("{}/chat/completions", sim.base_url()))
            .json(&json!({
                "messages": [{"role": "system", "content": "be brief"},
                             {"role": "user", "content": content}],
                "max_tokens": 2, "ignore_eos": true, "stream": true,
                "stream_options": {"include_usage": true},
            }))
            .send()
            .await
            .unwrap();
        let events = sse_data(&resp.text().await.unwrap());
        let usage: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
        let details = &usage["usage"]["prompt_tokens_details"];
        cached.push(details["cached_tokens"].as_u64().unwrap());
    }
    let recs = traces(&mut trace, 2).await;
    assert_eq!(cached[0], 0);
    assert_eq!(cached[1], (recs[1].prompt_tokens - 1) / 16 * 16);
    let text = http
        .get(format!("http://{}/metrics", sim.addr()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let value = |name: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    let prompt: u64 = recs.iter().map(|r| r.prompt_tokens).sum();
    assert_eq!(value("vllm:prefix_cache_hits_total"), cached[1] as f64);
    assert_eq!(value("vllm:prefix_cache_queries_total"), prompt as f64);
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_setting_usage_has_no_details_and_resets_are_harmless() {
    let (sim, mut trace) = start(instant()).await;
    let http = client();
    for _ in 0..2 {
        let v: Value = http
            .post(format!("{}/completions", sim.base_url()))
            .json(&json!({"prompt": long_prompt(), "max_tokens": 1}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(v["usage"].get("prompt_tokens_details").is_none(), "{v}");
    }
    assert!(
        traces(&mut trace, 2)
            .await
            .iter()
            .all(|r| r.cached_tokens == 0)
    );
    let resp = http
        .post(format!("http://{}/slots/1?action=erase", sim.addr()))
        .send()
        .await
        .unwrap();
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v, json!({"id_slot": 1, "n_erased": 0}));
    let resp = http
        .post(format!("http://{}/reset_prefix_cache", sim.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    sim.shutdown().await.unwrap();
}

/// vLLM keeps its cache, and answers 200 `{"success": false}`, while a request is running; the
/// simulator does the same, so the client's retry is tested against it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_while_a_request_runs_is_declined_and_keeps_the_cache() {
    let config = SimConfig {
        decode_base: Duration::from_millis(20),
        ..cached_config()
    };
    let (sim, mut trace) = start(config).await;
    let (http, base) = (client(), sim.base_url().trim_end_matches("/v1").to_string());
    let reset = || async {
        let resp = http
            .post(format!("{base}/reset_prefix_cache"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.json::<Value>().await.unwrap()["success"].clone()
    };
    // A long request, held open while the reset is asked.
    let long = http
        .post(format!("{base}/v1/completions"))
        .json(
            &json!({"prompt": long_prompt(), "max_tokens": 60, "ignore_eos": true, "stream": true}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(long.status(), 200);
    // Its first token: it is admitted, and the scheduler has published it as running.
    let mut long = long;
    assert!(long.chunk().await.unwrap().is_some());
    assert_eq!(reset().await, json!(false), "declined while it runs");
    let _ = long.bytes().await;
    let _ = traces(&mut trace, 1).await;
    // The scheduler publishes its state after the step that finished the request.
    let mut answer = reset().await;
    for _ in 0..100 {
        if answer == json!(true) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        answer = reset().await;
    }
    assert_eq!(answer, json!(true), "done once drained");
    sim.shutdown().await.unwrap();
}
