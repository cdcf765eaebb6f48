//! Priority scheduling over real HTTP: a request's priority read from the body's `priority`
//! field or the `x-request-priority` header, and preemption. Two long low-priority requests
//! fill a batch of two; an urgent request then arrives. Scheduling by priority, the least
//! urgent running sequence is preempted, the urgent one's first token comes before either long
//! one finishes, the preempted one resumes and finishes whole, and `/metrics` counts one
//! preemption; under `ignore-priority` the urgent request waits for a place in the batch, so
//! its first token comes after a long one has finished. Only the order of events is asserted.

use crate::support::sim::{client, start, traces};
use futures_util::StreamExt;
use infermeter_core::sim::{Outcome, SimConfig, TraceRecord};
use infermeter_core::units::Duration;
use serde_json::json;

/// Tokens of each long request: 600 steps of 5 ms, three seconds of decoding, far longer
/// than it takes to send the urgent request once both have begun.
const LONG: u64 = 600;

/// Runs the scenario; the three trace records (the two long ones, then the urgent one) and
/// the simulator's preemption count.
async fn three_requests(ignore_priority: bool) -> (Vec<TraceRecord>, TraceRecord, u64) {
    let config = SimConfig {
        prefill_per_token: Duration(std::time::Duration::from_micros(10)),
        decode_base: Duration::from_millis(5),
        decode_per_seq: Duration::ZERO,
        prefill_chunk: 0,
        max_running: 2,
        ignore_priority,
        ..SimConfig::default()
    };
    let (sim, mut trace) = start(config).await;
    let http = client();
    let url = format!("{}/completions", sim.base_url());
    let mut longs = Vec::new();
    let mut begun = Vec::new();
    for _ in 0..2 {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        begun.push(rx);
        let (http, url) = (http.clone(), url.clone());
        longs.push(tokio::spawn(async move {
            let body = json!({"prompt": "a long batch job", "max_tokens": LONG,
                              "ignore_eos": true, "stream": true, "priority": 10});
            let resp = http.post(url).json(&body).send().await.unwrap();
            assert_eq!(resp.status(), 200);
            let mut stream = resp.bytes_stream();
            let mut text = Vec::new();
            let mut tx = Some(tx);
            while let Some(b) = stream.next().await {
                text.extend_from_slice(&b.unwrap());
                if let Some(tx) = tx.take() {
                    let _ = tx.send(());
                }
            }
            String::from_utf8(text).unwrap()
        }));
    }
    for rx in begun {
        rx.await.unwrap();
    }
    // The urgent request says its priority in the header only.
    let urgent = http
        .post(&url)
        .header("x-request-priority", "-1")
        .json(&json!({"prompt": "now", "max_tokens": 4, "ignore_eos": true, "stream": true}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(urgent.ends_with("data: [DONE]\n\n"), "{urgent}");
    for t in longs {
        let text = t.await.unwrap();
        assert!(text.ends_with("data: [DONE]\n\n"), "a long one ends whole");
    }
    let mut recs = traces(&mut trace, 3).await;
    let metrics = http
        .get(format!("http://{}/metrics", sim.addr()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let preemptions = metrics
        .lines()
        .find(|l| l.starts_with("vllm:num_preemptions_total{"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("no preemption counter: {metrics}"));
    sim.shutdown().await.unwrap();
    let at = recs.iter().position(|r| r.max_tokens == 4).unwrap();
    let urgent = recs.remove(at);
    for r in &recs {
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.completion_tokens, LONG, "every token, preempted or not");
        assert!(r.arrival_us < urgent.arrival_us);
    }
    (recs, urgent, preemptions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_urgent_request_preempts_a_full_batch_of_long_ones() {
    let (longs, urgent, preemptions) = three_requests(false).await;
    let first = urgent.first_token_us.unwrap();
    let done = longs.iter().map(|r| r.finished_us).min().unwrap();
    assert!(
        first < done,
        "the urgent first token at {first}µs, a long one done at {done}µs"
    );
    assert_eq!(preemptions, 1);
    // The preempted one was admitted before the urgent one arrived, and its tokens stopped
    // while the urgent one ran: a gap in its stream spanning the urgent one's first token.
    let resumed = longs.iter().any(|r| {
        r.token_us
            .windows(2)
            .any(|w| w[0] < first && w[1] > urgent.finished_us)
    });
    assert!(resumed, "a long one paused across the urgent one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignoring_priority_the_urgent_request_waits_for_a_place() {
    let (longs, urgent, preemptions) = three_requests(true).await;
    let first = urgent.first_token_us.unwrap();
    let done = longs.iter().map(|r| r.finished_us).min().unwrap();
    assert!(
        first >= done,
        "the urgent first token at {first}µs, before a long one ended at {done}µs"
    );
    assert_eq!(preemptions, 0);
}
