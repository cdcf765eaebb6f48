//! The simulator's non-generation endpoints over real HTTP: llama.cpp's and vLLM's
//! `/tokenize` (counts agree with the `prompt_tokens` it reports) and `/detokenize`, the
//! self-descriptions (`/version`, `/props`, `/get_server_info`, the `server` header), and
//! 400s with OpenAI-style bodies for malformed input.

use crate::support::sim::{client, instant, start};
use serde_json::{Value, json};

async fn post(http: &reqwest::Client, url: String, body: &str) -> (u16, Value) {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    (status, v)
}

/// [`post`]s `body` to `path` on the simulator at `root`.
async fn post_json(http: &reqwest::Client, root: &str, path: &str, body: Value) -> (u16, Value) {
    post(http, format!("{root}{path}"), &body.to_string()).await
}

/// vLLM's chat form of `/tokenize` applies the "template": its count is the chat's
/// prompt_tokens exactly (less the generation prompt when that is turned off).
async fn chat_tokenize_applies_the_template(http: &reqwest::Client, root: &str, text: &str) {
    let messages = json!([{"role": "system", "content": "be brief"},
                          {"role": "user", "content": text}]);
    let (_, done) = post_json(
        http,
        root,
        "/v1/chat/completions",
        json!({"messages": messages, "max_tokens": 1}),
    )
    .await;
    let chat_tokens = done["usage"]["prompt_tokens"].as_u64().unwrap();
    let (_, v) = post_json(
        http,
        root,
        "/tokenize",
        json!({"model": "m", "messages": messages, "return_token_strs": true}),
    )
    .await;
    assert_eq!(v["count"], chat_tokens);
    assert_eq!(
        v["token_strs"].as_array().unwrap().len() as u64,
        chat_tokens
    );
    assert_eq!(v["token_strs"][0], "<|im_start|>");
    let (_, v) = post_json(
        http,
        root,
        "/tokenize",
        json!({"messages": messages, "add_generation_prompt": false}),
    )
    .await;
    assert_eq!(v["count"], chat_tokens - 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokenize_counts_agree_with_prompt_tokens() {
    let (sim, _trace) = start(instant()).await;
    let http = client();
    let root = format!("http://{}", sim.addr());
    let text = "Benchmarks lie when the tokenizer disagrees, déjà vu 12345!";
    let usage = |v: Value| v["usage"]["prompt_tokens"].as_u64().unwrap();

    let (_, done) = post_json(
        &http,
        &root,
        "/v1/completions",
        json!({"prompt": text, "max_tokens": 1}),
    )
    .await;
    let prompt_tokens = usage(done);

    // llama.cpp: {"content"} → {"tokens"}.
    let (status, v) = post_json(&http, &root, "/tokenize", json!({"content": text})).await;
    assert_eq!(status, 200);
    let ids = v["tokens"].as_array().unwrap().clone();
    assert_eq!(ids.len() as u64, prompt_tokens);
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    let (_, pieces) = post_json(
        &http,
        &root,
        "/tokenize",
        json!({"content": "hello world", "with_pieces": true}),
    )
    .await;
    assert_eq!(
        pieces["tokens"],
        json!([{"id": 15339, "piece": "hello"}, {"id": 1917, "piece": " world"}])
    );

    // vLLM: {"model","prompt"} → {"count","max_model_len","tokens","token_strs"}.
    let (status, v) = post_json(
        &http,
        &root,
        "/tokenize",
        json!({"model": "m", "prompt": text}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(v["count"], prompt_tokens);
    assert_eq!(v["tokens"].as_array().unwrap(), &ids);
    assert_eq!(v["max_model_len"], 400_000);
    assert!(v["token_strs"].is_null());

    chat_tokenize_applies_the_template(&http, &root, text).await;

    // Detokenize: llama.cpp's {"content"}, vLLM's {"prompt"} when a model is named.
    let (status, v) = post_json(&http, &root, "/detokenize", json!({"tokens": ids})).await;
    assert_eq!(status, 200);
    assert_eq!(v, json!({"content": text}));
    let (_, v) = post_json(
        &http,
        &root,
        "/detokenize",
        json!({"model": "m", "tokens": ids}),
    )
    .await;
    assert_eq!(v, json!({"prompt": text}));
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_input_gets_openai_style_400s() {
    let (sim, _trace) = start(instant()).await;
    let http = client();
    let root = format!("http://{}", sim.addr());
    for (path, body) in [
        ("/tokenize", "{not json"),
        ("/tokenize", "{}"),
        ("/tokenize", r#"{"content": 5}"#),
        ("/tokenize", r#"{"messages": "x"}"#),
        ("/tokenize", "[]"),
        ("/detokenize", "{}"),
        ("/detokenize", r#"{"tokens": [-1]}"#),
        ("/detokenize", r#"{"tokens": [99999999]}"#),
        ("/detokenize", r#"{"tokens": "abc"}"#),
        ("/detokenize", ""),
    ] {
        let (status, v) = post(&http, format!("{root}{path}"), body).await;
        assert_eq!(status, 400, "{path} {body}: {v}");
        assert_eq!(v["error"]["code"], 400, "{v}");
        assert_eq!(v["error"]["type"], "BadRequestError", "{v}");
        assert!(v["error"]["message"].as_str().unwrap().len() > 5, "{v}");
    }
    sim.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_describes_itself() {
    let (sim, _trace) = start(instant()).await;
    let http = client();
    let root = format!("http://{}", sim.addr());
    let version = env!("CARGO_PKG_VERSION");
    let get = |path: &str| http.get(format!("{root}{path}")).send();

    let resp = get("/version").await.unwrap();
    assert_eq!(
        resp.headers()["server"],
        format!("infermeter-sim/{version}").as_str()
    );
    assert_eq!(
        resp.json::<Value>().await.unwrap(),
        json!({"version": version})
    );

    let props: Value = get("/props").await.unwrap().json().await.unwrap();
    assert_eq!(props["total_slots"], 256);
    assert_eq!(props["default_generation_settings"]["n_ctx"], 400_000);
    assert_eq!(props["model_path"], "infermeter-sim");
    assert!(props["build_info"].as_str().unwrap().contains(version));
    assert_eq!(
        props["modalities"],
        json!({"vision": false, "audio": false})
    );

    let info: Value = get("/get_server_info").await.unwrap().json().await.unwrap();
    assert_eq!(info["version"], version);
    assert_eq!(info["max_running_requests"], 256);
    assert_eq!(info["disable_radix_cache"], true);

    // Every routed response carries the header, generation included.
    for path in ["/health", "/metrics", "/v1/models"] {
        let resp = get(path).await.unwrap();
        assert!(
            resp.headers()["server"]
                .to_str()
                .unwrap()
                .starts_with("infermeter-sim/")
        );
    }
    let resp = http
        .post(format!("{root}/v1/completions"))
        .json(&json!({"prompt": "x", "max_tokens": 1, "stream": true}))
        .send()
        .await
        .unwrap();
    assert!(resp.headers().contains_key("server"));
    assert!(!resp.headers().contains_key("keep-alive"));
    sim.shutdown().await.unwrap();
}
