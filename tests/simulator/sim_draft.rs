//! The draft model (`draft-tokens`) over real HTTP: a whole response counts and carries every
//! token (its collector gets one chunk per token however many a step wrote), a stream's steps
//! write several tokens at one instant, and the responses' `draft_n` / `draft_n_accepted` add
//! up to the `/metrics` counters.

use crate::support::scrape::metrics;
use crate::support::sim::{client, instant, sse_data, start, traces};
use infermeter_core::sim::SimConfig;
use infermeter_core::units::Duration;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafts_write_bursts_and_every_count_agrees() {
    let (sim, mut trace) = start(SimConfig {
        timings: true,
        reasoning_tokens: 5,
        draft_tokens: 4,
        draft_acceptance: 0.9,
        decode_base: Duration::from_millis(2),
        ..instant()
    })
    .await;
    let http = client();
    let url = format!("{}/chat/completions", sim.base_url());
    let ask = |stream: bool| {
        json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 40,
               "ignore_eos": true, "stream": stream,
               "stream_options": {"include_usage": true}})
    };
    // Whole: every token counted and written, the reasoning ones apart.
    let body: Value = http
        .post(&url)
        .json(&ask(false))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["usage"]["completion_tokens"], 40, "{body}");
    assert_eq!(
        body["usage"]["completion_tokens_details"]["reasoning_tokens"],
        5
    );
    let m = &body["choices"][0]["message"];
    let words = |v: &Value| v.as_str().unwrap_or("").split_whitespace().count();
    assert_eq!(
        words(&m["content"]) + words(&m["reasoning_content"]),
        40,
        "{m}"
    );
    let mut drafted = body["timings"]["draft_n"].as_u64().expect("draft_n");
    let mut accepted = body["timings"]["draft_n_accepted"].as_u64().unwrap();
    // Streamed: 40 token events, in fewer steps than tokens.
    let text = http
        .post(&url)
        .json(&ask(true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events = sse_data(&text);
    let last: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(last["usage"]["completion_tokens"], 40);
    drafted += last["timings"]["draft_n"].as_u64().unwrap();
    accepted += last["timings"]["draft_n_accepted"].as_u64().unwrap();
    let recs = traces(&mut trace, 2).await;
    for r in &recs {
        assert_eq!(r.completion_tokens, 40);
        let mut steps = r.token_us.clone();
        steps.dedup();
        assert!(steps.len() < 30, "40 tokens in {} steps", steps.len());
    }
    // The server's counters are the responses' sums (each step's draws, as drawn).
    check_counters(&sim.base_url(), drafted, accepted);
    sim.shutdown().await.unwrap();
}

/// `/metrics` counted `drafted` draft tokens (4 a step) and `accepted` of them.
fn check_counters(base_url: &str, drafted: u64, accepted: u64) {
    let counters = metrics(base_url, "vllm:spec_decode");
    let get = |name: &str| {
        counters
            .iter()
            .find(|(k, _)| k.starts_with(name))
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("{name} in {counters:?}"))
    };
    assert_eq!(
        get("vllm:spec_decode_num_draft_tokens_total"),
        drafted as f64
    );
    assert_eq!(
        get("vllm:spec_decode_num_accepted_tokens_total"),
        accepted as f64
    );
    assert_eq!(
        get("vllm:spec_decode_num_drafts_total") * 4.0,
        drafted as f64
    );
}
