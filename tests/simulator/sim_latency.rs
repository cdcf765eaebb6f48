//! The latency model seen from outside: at low load TTFT is the prefill cost and ITL one
//! decode step; past `max-running` requests queue and decode steps grow with the batch.
//! Lower bounds are exact (the simulator never emits early); upper bounds leave room for a
//! busy machine.

use std::time::Instant;

use crate::support::sim::{client, start, traces};
use futures_util::StreamExt;
use infermeter_core::sim::SimConfig;
use infermeter_core::units::Duration;
use serde_json::json;

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_load_ttft_is_prefill_and_itl_is_one_decode_step() {
    let config = SimConfig {
        prefill_per_token: Duration(std::time::Duration::from_micros(100)),
        decode_base: Duration::from_millis(20),
        decode_per_seq: Duration::ZERO,
        prefill_chunk: 0,
        ..SimConfig::default()
    };
    let (sim, mut trace) = start(config).await;
    let http = client();
    let prompt: Vec<u32> = (0..200).collect();
    let mut client_ttft = Vec::new();
    for _ in 0..3 {
        let sent = Instant::now();
        let resp = http
            .post(format!("{}/completions", sim.base_url()))
            .json(&json!({"prompt": prompt, "max_tokens": 8, "ignore_eos": true, "stream": true}))
            .send()
            .await
            .unwrap();
        let mut stream = resp.bytes_stream();
        let mut first = None;
        while let Some(b) = stream.next().await {
            let b = b.unwrap();
            if first.is_none() && b.windows(7).any(|w| w == b"\"text\":") {
                first = Some(sent.elapsed());
            }
        }
        client_ttft.push(first.unwrap().as_micros() as u64);
    }
    let recs = traces(&mut trace, 3).await;
    for r in &recs {
        assert_eq!(r.prompt_tokens, 200);
        let admitted = r.admitted_us.unwrap();
        // 200 tokens × 0.1 ms = 20 ms of prefill, then a token every 20 ms decode step, each
        // on a deadline from admission (a clock that does not drift): no token comes before
        // its step. Only these causal bounds are asserted; how late a loaded machine makes
        // them is measured by `cargo bench --bench sim`, not here.
        let ttft = r.first_token_us.unwrap() - admitted;
        assert!(ttft >= 20_000, "server ttft {ttft}µs, before its prefill");
        for (k, t) in r.token_us.iter().enumerate() {
            let due = 20_000 + 20_000 * k as u64;
            assert!(
                t - admitted + 1_000 >= due,
                "token {k} at {}µs, due {due}µs",
                t - admitted
            );
        }
        assert_eq!(r.token_us.len(), 8);
        assert!(r.batch_sizes.iter().all(|&b| b == 1));
    }
    // Wall-clock figures over HTTP: only the causal bound (no faster than the prefill) is
    // asserted; how much a loaded machine adds is not this test's business.
    for t in client_ttft {
        assert!(t >= 20_000, "client ttft {t}µs");
    }
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beyond_max_running_requests_queue_and_steps_slow_down() {
    let config = SimConfig {
        prefill_per_token: Duration::ZERO,
        // Steps of 40 ms (one sequence) to 100 ms (four): the differences asserted below
        // are tens of milliseconds to a second, far more than a busy machine's scheduling
        // delays add to one side of them (with 5 ms steps they were not).
        decode_base: Duration::from_millis(20),
        decode_per_seq: Duration::from_millis(20),
        max_running: 4,
        ..SimConfig::default()
    };
    let (sim, mut trace) = start(config).await;
    let http = client();
    let mut tasks = Vec::new();
    for i in 0..16u64 {
        let http = http.clone();
        let url = format!("{}/chat/completions", sim.base_url());
        tasks.push(tokio::spawn(async move {
            let body = json!({"messages": [{"role": "user", "content": "hi"}],
                              "max_tokens": 6 + i % 5 * 3, "ignore_eos": true, "stream": true});
            http.post(url)
                .json(&body)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }));
    }
    for t in tasks {
        assert!(t.await.unwrap().ends_with("data: [DONE]\n\n"));
    }
    let recs = traces(&mut trace, 16).await;
    let max_batch = recs
        .iter()
        .flat_map(|r| r.batch_sizes.iter())
        .max()
        .copied();
    assert_eq!(max_batch, Some(4));
    let mut by_admission: Vec<_> = recs.iter().collect();
    by_admission.sort_by_key(|r| r.admitted_us);
    // The last four waited for at least two generations of the first sequences: each at
    // least 6 steps of at least 40 ms (480 ms), where the first four wait one step (100 ms at
    // batch 4). Half a second apart leaves 460 ms for a loaded machine to delay the first.
    let queued = |r: &&infermeter_core::sim::TraceRecord| r.first_token_us.unwrap() - r.arrival_us;
    let early = by_admission[..4].iter().map(queued).max().unwrap();
    let late = by_admission[12..].iter().map(queued).min().unwrap();
    assert!(late > early + 500_000, "early {early}µs, late {late}µs");
    // Gaps between tokens emitted at batch size 4 vs fewer: 100 ms vs 40–80 ms per step.
    let mut gaps: [Vec<u64>; 5] = Default::default();
    for r in &recs {
        for (w, b) in r.token_us.windows(2).zip(&r.batch_sizes[1..]) {
            gaps[*b as usize].push(w[1] - w[0]);
        }
    }
    let full = median(gaps[4].clone());
    assert!(full >= 80_000, "itl at batch 4: {full}µs");
    let smallest = gaps.iter().position(|g| !g.is_empty()).unwrap();
    assert!(smallest < 4, "the batch never shrank");
    let small = median(gaps[smallest].clone());
    assert!(
        full > small + 10_000,
        "batch {smallest}: {small}µs vs batch 4: {full}µs"
    );
    sim.shutdown().await.unwrap();
}
