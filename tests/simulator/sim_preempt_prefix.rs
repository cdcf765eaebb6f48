//! A preempted request looks up the prefix cache again when it is admitted again, as vLLM's
//! scheduler computes a resumed request's cached blocks anew, over real HTTP: two long
//! low-priority requests with prompts of their own fill a batch of two, an urgent one preempts
//! the later, which resumes and finishes. `/metrics` then counts four prefix-cache queries
//! (three admissions and the resumption) and, as hits, the resumed prompt's own whole blocks
//! (cached at its first admission); its prompt tokens once; its response's `cached_tokens` is
//! its first admission's (0). Without preemption (`ignore-priority`) three queries and no hit.
//! Only counts are asserted, never times.

use crate::support::sim::{client, start, traces};
use futures_util::StreamExt;
use infermeter_core::sim::{SimConfig, TraceRecord};
use infermeter_core::units::Duration;
use serde_json::json;

/// Tokens of each long request: 600 steps of 5 ms, far longer than it takes to send the
/// urgent request once both have begun.
const LONG: u64 = 600;

/// The simulator's default prefix-cache block (tokens).
const BLOCK: u64 = 16;

/// About 100 tokens, its first word `tag` (so two prompts share no block).
fn prompt(tag: &str) -> String {
    let words: String = (0..100).map(|i| format!(" word{}", i % 7)).collect();
    format!("{tag}{words}")
}

fn counter(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with(&format!("vllm:{name}{{")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no {name}: {metrics}")) as u64
}

/// The three trace records (the long ones first) and `/metrics`.
async fn three_requests(ignore_priority: bool) -> (Vec<TraceRecord>, TraceRecord, String) {
    let config = SimConfig {
        prefix_cache: true,
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
    for tag in ["alpha", "omega"] {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (http, url) = (http.clone(), url.clone());
        longs.push(tokio::spawn(async move {
            let body = json!({"prompt": prompt(tag), "max_tokens": LONG,
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
        // One at a time: the second arrives (and is the one preempted) after the first began.
        rx.await.unwrap();
    }
    let urgent = http
        .post(&url)
        .json(
            &json!({"prompt": "now", "max_tokens": 4, "ignore_eos": true,
                      "stream": true, "priority": -1}),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(urgent.ends_with("data: [DONE]\n\n"), "{urgent}");
    for t in longs {
        assert!(t.await.unwrap().ends_with("data: [DONE]\n\n"));
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
    sim.shutdown().await.unwrap();
    recs.sort_by_key(|r| r.arrival_us);
    let urgent = recs.pop().unwrap();
    assert_eq!(urgent.max_tokens, 4);
    for r in &recs {
        assert_eq!(r.completion_tokens, LONG);
        assert_eq!(r.cached_tokens, 0, "as at its first admission");
    }
    (recs, urgent, metrics)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preempted_request_finds_its_own_blocks_when_it_resumes() {
    let (longs, urgent, metrics) = three_requests(false).await;
    assert_eq!(counter(&metrics, "num_preemptions_total"), 1);
    let prompts: u64 = longs.iter().map(|r| r.prompt_tokens).sum::<u64>() + urgent.prompt_tokens;
    assert_eq!(
        counter(&metrics, "prompt_tokens_total"),
        prompts,
        "counted once"
    );
    // The later long one was preempted: its prompt queried twice, its whole blocks (all but
    // the one holding its last token) hit the second time.
    let resumed = &longs[1];
    assert_eq!(
        counter(&metrics, "prefix_cache_queries_total"),
        prompts + resumed.prompt_tokens
    );
    let own = (resumed.prompt_tokens - 1) / BLOCK * BLOCK;
    assert!(own > 0);
    assert_eq!(counter(&metrics, "prefix_cache_hits_total"), own);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_preemption_each_prompt_is_queried_once() {
    let (longs, urgent, metrics) = three_requests(true).await;
    assert_eq!(counter(&metrics, "num_preemptions_total"), 0);
    let prompts: u64 = longs.iter().map(|r| r.prompt_tokens).sum::<u64>() + urgent.prompt_tokens;
    assert_eq!(counter(&metrics, "prefix_cache_queries_total"), prompts);
    assert_eq!(counter(&metrics, "prefix_cache_hits_total"), 0);
}
