//! `timings` over real HTTP: llama.cpp's `timings` object on the last streamed chunk (the
//! usage chunk when there is one) and on non-streaming bodies, with the transcript's fields
//! and values that follow the simulator's own trace.

use crate::support::sim::{client, sse_data, start, traces};
use infermeter_core::sim::{SimConfig, TraceRecord};
use infermeter_core::units::Duration;
use serde_json::{Value, json};

const FIELDS: [&str; 9] = [
    "cache_n",
    "prompt_n",
    "prompt_ms",
    "prompt_per_token_ms",
    "prompt_per_second",
    "predicted_n",
    "predicted_ms",
    "predicted_per_token_ms",
    "predicted_per_second",
];

/// The fields of `timings` as written (not as a sorted map): the raw text after `"timings":`.
fn field_order(raw: &str) -> Vec<String> {
    let at = raw.find("\"timings\":{").expect("a timings object") + 11;
    let end = at + raw[at..].find('}').unwrap();
    raw[at..end]
        .split(',')
        .map(|kv| kv.split(':').next().unwrap().trim_matches('"').to_string())
        .collect()
}

/// `timings` against the trace: prompt time is admission → first token, predicted time
/// first → last token (to the millisecond the trace's microseconds allow).
fn check(t: &Value, rec: &TraceRecord) {
    let ms = |v: &Value| v.as_f64().unwrap();
    assert_eq!(t["cache_n"], 0);
    assert_eq!(t["prompt_n"], rec.prompt_tokens);
    assert_eq!(t["predicted_n"], rec.completion_tokens);
    let first = rec.first_token_us.unwrap();
    let last = *rec.token_us.last().unwrap();
    let prompt_ms = (first - rec.admitted_us.unwrap().max(rec.arrival_us)) as f64 / 1e3;
    let predicted_ms = (last - first) as f64 / 1e3;
    assert!(
        (ms(&t["prompt_ms"]) - prompt_ms).abs() < 0.01,
        "{t} vs {rec:?}"
    );
    assert!(
        (ms(&t["predicted_ms"]) - predicted_ms).abs() < 0.01,
        "{t} vs {rec:?}"
    );
    let gaps = (rec.completion_tokens - 1) as f64;
    assert!((ms(&t["predicted_per_token_ms"]) - ms(&t["predicted_ms"]) / gaps).abs() < 1e-9);
    assert!((ms(&t["predicted_per_second"]) * ms(&t["predicted_per_token_ms"]) - 1e3).abs() < 1e-6);
    assert!(
        (ms(&t["prompt_per_token_ms"]) * rec.prompt_tokens as f64 - ms(&t["prompt_ms"])).abs()
            < 1e-9
    );
    // 4 steps of 5 ms after the first token; less when the first token came late and the
    // virtual clock catches up, so only a loose lower bound.
    assert!(ms(&t["predicted_ms"]) >= 10.0, "{t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timings_follow_the_trace_in_llama_cpp_form() {
    let (sim, mut trace) = start(SimConfig {
        timings: true,
        prefill_per_token: Duration(std::time::Duration::from_micros(200)),
        decode_base: Duration::from_millis(5),
        decode_per_seq: Duration::ZERO,
        ..SimConfig::default()
    })
    .await;
    let http = client();
    let url = |p: &str| format!("{}{p}", sim.base_url());
    let prompt = "timings should match what the server measured";

    // Non-streaming completions: `timings` last in the body.
    let resp = http
        .post(url("/completions"))
        .json(&json!({"prompt": prompt, "max_tokens": 5, "ignore_eos": true}))
        .send()
        .await
        .unwrap();
    let raw = resp.text().await.unwrap();
    let body: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(field_order(&raw), FIELDS);
    assert!(raw.ends_with("}}"));
    assert!(body["usage"].get("prompt_tokens_details").is_none());
    check(&body["timings"], &traces(&mut trace, 1).await[0]);

    // Chat streams: on the finish chunk without usage, on the usage chunk with it.
    for include_usage in [false, true] {
        let resp = http
            .post(url("/chat/completions"))
            .json(
                &json!({"messages": [{"role": "user", "content": prompt}], "max_tokens": 5,
                          "ignore_eos": true, "stream": true,
                          "stream_options": {"include_usage": include_usage}}),
            )
            .send()
            .await
            .unwrap();
        let events = sse_data(&resp.text().await.unwrap());
        let last_raw = &events[events.len() - 2];
        assert_eq!(field_order(last_raw), FIELDS);
        let last: Value = serde_json::from_str(last_raw).unwrap();
        if include_usage {
            assert_eq!(last["choices"], json!([]));
            assert!(last["usage"].is_object());
        } else {
            assert_eq!(last["choices"][0]["finish_reason"], "length");
        }
        let with_timings = events.iter().filter(|e| e.contains("\"timings\"")).count();
        assert_eq!(with_timings, 1);
        check(&last["timings"], &traces(&mut trace, 1).await[0]);
    }
    sim.shutdown().await.unwrap();
}
