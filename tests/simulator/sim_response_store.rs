//! The simulator's response store over real HTTP: a stored response continued by
//! `previous_response_id` (its context counted in the continuation's usage and served by the
//! prefix cache as the same conversation resent would be), OpenAI's 404 for an id it does not
//! hold, and the store's bound.

use crate::support::sim::{client, instant, start};
use infermeter_core::sim::SimConfig;
use serde_json::{Value, json};

/// Posts a whole (non-streamed) Responses request; the status and the body.
async fn post(base: &str, body: Value) -> (u16, Value) {
    let resp = client()
        .post(format!("{base}/responses"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn request(input: Value, extra: Value) -> Value {
    let mut body = json!({
        "model": "infermeter-sim", "input": input, "max_output_tokens": 6, "stream": false,
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

fn config(store: u32) -> SimConfig {
    SimConfig {
        prefix_cache: true,
        prefix_cache_block: 4,
        output_len_dist: infermeter_core::sim::OutputLenDist::Fixed,
        output_len_mean: 6,
        response_store: store,
        ..instant()
    }
}

fn answer(v: &Value) -> String {
    v["output"][0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_response_is_continued_as_the_conversation_resent() {
    let (sim, _trace) = start(config(10)).await;
    let base = sim.base_url();
    let first = "The first question, asked at some length so that blocks fill.";
    let second = "And a second one.";
    let (status, a) = post(&base, request(json!(first), json!({"store": true}))).await;
    assert_eq!(status, 200, "{a}");
    let id = a["id"].as_str().unwrap().to_string();
    let (status, b) = post(
        &base,
        request(
            json!([{"role": "user", "content": second}]),
            json!({"store": true, "previous_response_id": id}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{b}");
    // The same conversation resent whole, on a fresh simulator: the same prompt count, and
    // the same share of it cached by its prefix.
    let (fresh, _t) = start(config(10)).await;
    let fbase = fresh.base_url();
    let (_, a2) = post(&fbase, request(json!(first), json!({}))).await;
    let resent = json!([
        {"role": "user", "content": first},
        {"role": "assistant", "content": answer(&a2)},
        {"role": "user", "content": second},
    ]);
    assert_eq!(
        answer(&a),
        answer(&a2),
        "the same words for the same request number"
    );
    let (_, b2) = post(&fbase, request(resent, json!({}))).await;
    assert_eq!(
        b["usage"]["input_tokens"], b2["usage"]["input_tokens"],
        "{b} / {b2}"
    );
    let cached = &b["usage"]["input_tokens_details"]["cached_tokens"];
    assert_eq!(
        cached,
        &b2["usage"]["input_tokens_details"]["cached_tokens"]
    );
    assert!(cached.as_u64().unwrap() > 8, "{b}");
    assert!(
        b["usage"]["input_tokens"].as_u64().unwrap()
            > a["usage"]["input_tokens"].as_u64().unwrap() + 6
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_not_held_is_openais_404_and_the_store_is_bounded() {
    let (sim, _trace) = start(config(1)).await;
    let base = sim.base_url();
    let (_, a) = post(&base, request(json!("one"), json!({"store": true}))).await;
    let (_, b) = post(&base, request(json!("two"), json!({"store": true}))).await;
    // Not stored without `store`; one held at most: the older went.
    let (_, c) = post(&base, request(json!("three"), json!({}))).await;
    for gone in [&a, &c] {
        let id = gone["id"].as_str().unwrap();
        let (status, body) = post(
            &base,
            request(json!("more"), json!({"previous_response_id": id})),
        )
        .await;
        assert_eq!(status, 404, "{body}");
        assert_eq!(
            body,
            json!({"error": {
                "message": format!("Previous response with id '{id}' not found."),
                "type": "invalid_request_error",
                "param": "previous_response_id",
                "code": "previous_response_not_found",
            }})
        );
    }
    let id = b["id"].as_str().unwrap();
    let (status, _) = post(
        &base,
        request(json!("more"), json!({"previous_response_id": id})),
    )
    .await;
    assert_eq!(status, 200);
    // A hostile id is quoted bounded, escaped by the JSON it is in.
    let hostile = format!("<b>\"{}", "x".repeat(5_000));
    let (status, body) = post(
        &base,
        request(json!("more"), json!({"previous_response_id": hostile})),
    )
    .await;
    assert_eq!(status, 404);
    assert!(
        body["error"]["message"].as_str().unwrap().len() < 400,
        "{body}"
    );
}
