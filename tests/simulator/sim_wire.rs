//! The simulator's wire format over real HTTP: chat and completions, streaming and not,
//! usage exactly when asked, error bodies, /v1/models and /health, and the CLI entry point.

use crate::support::sim::{client, instant, sse_data, start, traces};
use serde_json::{Value, json};

fn parse(events: &[String]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.as_str() != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap_or_else(|err| panic!("{err}: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_stream_chunk_by_chunk() {
    let (sim, mut trace) = start(instant()).await;
    let http = client();
    for include_usage in [true, false] {
        let resp = http
            .post(format!("{}/chat/completions", sim.base_url()))
            .json(&json!({
                "model": "infermeter-sim", "messages": [{"role": "user", "content": "hello there"}],
                "max_tokens": 5, "ignore_eos": true, "stream": true, "temperature": 0.7,
                "stream_options": {"include_usage": include_usage}, "unknown_field": [1, 2],
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let id: u64 = resp.headers()["x-infermeter-sim-id"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let events = sse_data(&resp.text().await.unwrap());
        assert_eq!(events.last().unwrap(), "[DONE]");
        let chunks = parse(&events);
        // role chunk + 5 tokens (+ usage)
        assert_eq!(chunks.len(), 6 + include_usage as usize, "{events:?}");
        for c in &chunks {
            assert_eq!(c["object"], "chat.completion.chunk");
            assert_eq!(c["id"], format!("chatcmpl-sim-{id}"));
            assert_eq!(c["model"], "infermeter-sim");
            assert!(c["created"].as_u64().unwrap() > 1_600_000_000);
        }
        assert_eq!(
            chunks[0]["choices"][0]["delta"],
            json!({"role": "assistant", "content": ""})
        );
        let mut text = String::new();
        for (i, c) in chunks[1..6].iter().enumerate() {
            let choice = &c["choices"][0];
            assert_eq!(choice["index"], 0);
            assert!(choice["logprobs"].is_null());
            text.push_str(choice["delta"]["content"].as_str().unwrap());
            let finish = &choice["finish_reason"];
            if i == 4 {
                assert_eq!(finish, "length");
            } else {
                assert!(finish.is_null());
            }
        }
        let bpe = tiktoken_rs::cl100k_base_singleton();
        assert_eq!(bpe.encode_ordinary(&text).len(), 5, "{text:?}");
        if include_usage {
            let u = &chunks[6];
            assert_eq!(u["choices"], json!([]));
            // "hello there" is 2 tokens, plus 3 per message and 3 for the reply.
            assert_eq!(
                u["usage"],
                json!({"prompt_tokens": 8, "completion_tokens": 5, "total_tokens": 13})
            );
        }
        assert!(
            chunks
                .iter()
                .all(|c| c.get("usage").is_none() || c["choices"] == json!([]))
        );
        let rec = traces(&mut trace, 1).await.remove(0);
        assert_eq!(rec.id, id);
        assert_eq!(rec.completion_tokens, 5);
        assert_eq!(rec.token_us.len(), 5);
    }
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_stream_and_both_non_streaming() {
    let (sim, _trace) = start(instant()).await;
    let http = client();
    let url = sim.base_url();
    let resp = http
        .post(format!("{url}/completions"))
        .json(
            &json!({"prompt": "a b c", "max_tokens": 3, "ignore_eos": true, "stream": true,
                      "stream_options": {"include_usage": true}}),
        )
        .send()
        .await
        .unwrap();
    let events = sse_data(&resp.text().await.unwrap());
    let chunks = parse(&events);
    assert_eq!(chunks.len(), 4);
    for c in &chunks[..3] {
        assert_eq!(c["object"], "text_completion");
        assert!(c["id"].as_str().unwrap().starts_with("cmpl-"));
        assert!(c["choices"][0]["text"].as_str().unwrap().starts_with(' '));
    }
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "length");
    assert_eq!(chunks[3]["usage"]["prompt_tokens"], 3);
    assert_eq!(chunks[3]["usage"]["completion_tokens"], 3);

    // Non-streaming responses always carry usage; max_completion_tokens wins over max_tokens.
    let body: Value = http
        .post(format!("{url}/chat/completions"))
        .json(
            &json!({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 4,
                      "max_tokens": 50, "ignore_eos": true}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert_eq!(body["usage"]["completion_tokens"], 4);
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(
        tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(content)
            .len(),
        4
    );

    let body: Value = http
        .post(format!("{url}/completions"))
        .json(&json!({"prompt": [1, 2, 3, 4], "max_tokens": 2, "ignore_eos": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["object"], "text_completion");
    assert_eq!(
        body["usage"],
        json!({"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6})
    );
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn natural_stops_follow_the_length_distribution() {
    let config = infermeter_core::sim::SimConfig {
        output_len_dist: infermeter_core::sim::OutputLenDist::Fixed,
        output_len_mean: 6,
        ..instant()
    };
    let (sim, _trace) = start(config).await;
    let http = client();
    let ask = |max: u64, min: u64| {
        let http = http.clone();
        let url = format!("{}/completions", sim.base_url());
        async move {
            let v: Value = http
                .post(url)
                .json(&json!({"prompt": "x", "max_tokens": max, "min_tokens": min}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (
                v["usage"]["completion_tokens"].as_u64().unwrap(),
                v["choices"][0]["finish_reason"].clone(),
            )
        }
    };
    assert_eq!(ask(100, 0).await, (6, json!("stop")));
    assert_eq!(ask(4, 0).await, (4, json!("length")));
    assert_eq!(ask(100, 9).await, (9, json!("stop")));
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_openai_errors() {
    let (sim, _trace) = start(instant()).await;
    let http = client();
    let url = sim.base_url();
    let cases: [(&str, &str, Option<&str>); 6] = [
        ("chat/completions", "{not json", None),
        (
            "chat/completions",
            r#"{"model":"m","prompt":"x"}"#,
            Some("messages"),
        ),
        (
            "completions",
            r#"{"model":"m","messages":[]}"#,
            Some("prompt"),
        ),
        ("completions", r#"{"prompt":"x","max_tokens":"many"}"#, None),
        (
            "completions",
            r#"{"prompt":"x","max_tokens":0}"#,
            Some("max_tokens"),
        ),
        (
            "completions",
            r#"{"prompt":"x","max_tokens":5000000}"#,
            Some("max_tokens"),
        ),
    ];
    for (path, body, param) in cases {
        let resp = http
            .post(format!("{url}/{path}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{body}");
        let v: Value = resp.json().await.unwrap();
        let e = &v["error"];
        assert_eq!(e["type"], "BadRequestError");
        assert_eq!(e["code"], 400);
        assert!(!e["message"].as_str().unwrap().is_empty());
        assert_eq!(e["param"].as_str(), param, "{body}");
    }
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_and_health() {
    let config = infermeter_core::sim::SimConfig {
        model: "my-model".into(),
        ..instant()
    };
    let (sim, _trace) = start(config).await;
    let http = client();
    let v: Value = http
        .get(format!("{}/models", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "my-model");
    let health = http
        .get(format!("http://{}/health", sim.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    sim.shutdown().await.unwrap();
}

#[test]
fn cli_serves_and_stops_on_interrupt() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let mut child = std::process::Command::new(crate::support::bin())
        .args([
            "sim",
            "--listen",
            "127.0.0.1:0",
            "--decode-base",
            "1ms",
            "--model",
            "cli-model",
        ])
        .arg("--trace")
        .arg(&trace)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("cli-model"), "{line}");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let status = rt.block_on(async {
        client()
            .post(format!("{url}/completions"))
            .json(&json!({"prompt": "x", "max_tokens": 3, "ignore_eos": true}))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(status, 200);
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let text = std::fs::read_to_string(&trace).unwrap();
    let rec: infermeter_core::sim::TraceRecord =
        serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(rec.completion_tokens, 3);

    let bad = std::process::Command::new(crate::support::bin())
        .args(["sim", "--jitter", "2"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(infermeter_core::exit::INVALID));
}

/// A model the simulator does not serve is refused as vLLM refuses it; an adapter it serves is
/// answered under its own name; `/v1/models` lists both, the adapter with its parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_models_are_refused_and_adapters_answered_by_name() {
    let mut cfg = instant();
    cfg.adapters.insert("lora-sql".into(), 2.0);
    let (sim, _trace) = start(cfg).await;
    let http = client();
    let ask = |model: &'static str| {
        http.post(format!("{}/chat/completions", sim.base_url()))
            .json(&json!({
                "model": model, "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 2, "ignore_eos": true,
            }))
            .send()
    };
    let resp = ask("no-such-model").await.unwrap();
    assert_eq!(resp.status(), 404);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "NotFoundError", "{body}");
    assert_eq!(body["error"]["param"], "model", "{body}");
    assert_eq!(
        body["error"]["message"], "The model `no-such-model` does not exist.",
        "{body}"
    );
    let resp = ask("lora-sql").await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["model"], "lora-sql", "{body}");
    let models: serde_json::Value = http
        .get(format!("{}/models", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<(&str, &serde_json::Value)> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_str().unwrap(), &m["parent"]))
        .collect();
    assert_eq!(ids[1], ("lora-sql", &json!("infermeter-sim")), "{models}");
}
