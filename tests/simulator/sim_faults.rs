//! Each injected fault, enabled with probability 1, as a client sees it and as the trace
//! records it.

use std::time::{Duration, Instant};

use crate::support::sim::{client, instant, sse_data, start, traces};
use futures_util::StreamExt;
use infermeter_core::sim::{Fault, Outcome, SimConfig};
use serde_json::{Value, json};

fn stream_body(max_tokens: u64) -> Value {
    json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": max_tokens,
           "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_statuses_before_any_token() {
    for (status, set) in [
        (
            429u16,
            (|c: &mut SimConfig| c.fault_http_429 = 1.0) as fn(&mut SimConfig),
        ),
        (500, |c| c.fault_http_500 = 1.0),
        (503, |c| c.fault_http_503 = 1.0),
    ] {
        let mut config = instant();
        set(&mut config);
        let (sim, mut trace) = start(config).await;
        let resp = client()
            .post(format!("{}/chat/completions", sim.base_url()))
            .json(&stream_body(4))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), status);
        assert!(resp.headers().contains_key("x-infermeter-sim-id"));
        let v: Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], status);
        let rec = traces(&mut trace, 1).await.remove(0);
        assert_eq!(rec.outcome, Outcome::Rejected);
        assert_eq!(rec.completion_tokens, 0);
        assert!(matches!(
            rec.fault,
            Fault::Http429 | Fault::Http500 | Fault::Http503
        ));
        sim.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_cut_closes_without_done() {
    let (sim, mut trace) = start(SimConfig {
        fault_stream_cut: 1.0,
        ..instant()
    })
    .await;
    let http = client();
    let resp = http
        .post(format!("{}/chat/completions", sim.base_url()))
        .json(&stream_body(10))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut stream = resp.bytes_stream();
    let mut body = Vec::new();
    let mut errored = false;
    while let Some(part) = stream.next().await {
        match part {
            Ok(b) => body.extend_from_slice(&b),
            Err(_) => {
                errored = true;
                break;
            }
        }
    }
    assert!(errored, "the body should end in a transport error");
    let text = String::from_utf8(body).unwrap();
    assert!(!text.contains("[DONE]"));
    // Role chunk + 5 tokens, then the cut. The abort can reach the client before the last
    // chunks are read (the kernel drops unread data on a reset), so the client sees at most
    // these; the trace below is the ground truth.
    assert!(sse_data(&text).len() <= 6, "{text}");
    let rec = traces(&mut trace, 1).await.remove(0);
    assert_eq!((rec.outcome, rec.completion_tokens), (Outcome::Cut, 5));

    // Non-streaming: the body breaks off half-way (hyper may abort before the head is even
    // flushed, so either the request or the body read fails).
    let result = async {
        http.post(format!("{}/completions", sim.base_url()))
            .json(&json!({"prompt": "x", "max_tokens": 10, "ignore_eos": true}))
            .send()
            .await?
            .text()
            .await
    }
    .await;
    assert!(result.is_err(), "{result:?}");
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_pauses_half_way() {
    let config = SimConfig {
        fault_stall: 1.0,
        stall_duration: infermeter_core::units::Duration::from_millis(400),
        ..instant()
    };
    let (sim, mut trace) = start(config).await;
    let start_at = Instant::now();
    let text = client()
        .post(format!("{}/chat/completions", sim.base_url()))
        .json(&stream_body(6))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(start_at.elapsed() >= Duration::from_millis(400));
    assert!(text.ends_with("data: [DONE]\n\n"));
    let rec = traces(&mut trace, 1).await.remove(0);
    assert_eq!((rec.outcome, rec.fault), (Outcome::Completed, Fault::Stall));
    let gaps: Vec<u64> = rec.token_us.windows(2).map(|w| w[1] - w[0]).collect();
    // The stall sits between token 3 and 4 and dwarfs every other gap.
    assert!(gaps[2] >= 400_000, "{gaps:?}");
    assert!(
        gaps.iter().enumerate().all(|(i, &g)| i == 2 || g < 200_000),
        "{gaps:?}"
    );

    // A client that gives up frees the slot: the trace says cancelled, not completed.
    let short = reqwest::Client::builder()
        .timeout(Duration::from_millis(150))
        .build()
        .unwrap();
    let failed = async {
        short
            .post(format!("{}/chat/completions", sim.base_url()))
            .json(&stream_body(6))
            .send()
            .await?
            .text()
            .await
    }
    .await;
    assert!(failed.is_err());
    let rec = traces(&mut trace, 1).await.remove(0);
    assert_eq!(rec.outcome, Outcome::Cancelled);
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_sse_line_mid_stream() {
    let (sim, mut trace) = start(SimConfig {
        fault_malformed_sse: 1.0,
        ..instant()
    })
    .await;
    let text = client()
        .post(format!("{}/chat/completions", sim.base_url()))
        .json(&stream_body(6))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events = sse_data(&text);
    let bad: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| *e != "[DONE]" && serde_json::from_str::<Value>(e).is_err())
        .map(|(i, _)| i)
        .collect();
    // role, 3 tokens, garbage, 3 tokens, usage, [DONE]
    assert_eq!(bad, vec![4], "{text}");
    assert_eq!(events.len(), 10);
    let rec = traces(&mut trace, 1).await.remove(0);
    assert_eq!((rec.fault, rec.completion_tokens), (Fault::MalformedSse, 6));
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_first_byte_delays_the_first_token() {
    let config = SimConfig {
        fault_slow_first_byte: 1.0,
        slow_first_byte_delay: infermeter_core::units::Duration::from_millis(300),
        ..instant()
    };
    let (sim, mut trace) = start(config).await;
    let start_at = Instant::now();
    let text = client()
        .post(format!("{}/chat/completions", sim.base_url()))
        .json(&stream_body(3))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(start_at.elapsed() >= Duration::from_millis(300));
    assert!(text.ends_with("data: [DONE]\n\n"));
    let rec = traces(&mut trace, 1).await.remove(0);
    let ttft = rec.first_token_us.unwrap() - rec.arrival_us;
    assert!(ttft >= 300_000, "{ttft}");
    assert!(rec.finished_us - rec.first_token_us.unwrap() < 200_000);
    sim.shutdown().await.unwrap();
}
