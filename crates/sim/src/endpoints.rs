//! The endpoints beside generation that real servers offer and clients probe: tokenizing
//! (llama.cpp's and vLLM's `/tokenize` and `/detokenize`), dropping the prefix cache (vLLM's
//! `/reset_prefix_cache`, SGLang's `/flush_cache`, llama.cpp's slot erase) and describing the
//! server (vLLM's `/version`, llama.cpp's `/props`, SGLang's `/get_server_info`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::apis::chat::{self, RawMessage};
use super::apis::completions::Prompt;
use super::scheduler::lock;
use super::state::{AppState, bad_request, json_response};
use super::tokens::{self, PromptSink};
use super::wire::PromptField;

/// The version every self-description reports.
pub(crate) const VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Deserialize)]
struct TokenizeRequest {
    /// llama.cpp: the text.
    content: Option<String>,
    /// llama.cpp: answer `{id, piece}` pairs instead of bare ids.
    with_pieces: Option<bool>,
    /// vLLM, completion form.
    prompt: Option<Prompt>,
    /// vLLM, chat form (the chat template applied).
    messages: Option<Vec<RawMessage>>,
    /// vLLM: add the reply's priming (default true).
    add_generation_prompt: Option<bool>,
    /// vLLM: also answer each token's text.
    return_token_strs: Option<bool>,
}

/// vLLM's `TokenizeResponse`, fields in its order.
#[derive(Serialize)]
struct VllmTokenized {
    count: usize,
    max_model_len: u64,
    tokens: Vec<u32>,
    token_strs: Option<Vec<String>>,
}

/// A llama.cpp piece: the token's text, or its bytes when they are not valid UTF-8 alone.
#[derive(Serialize)]
#[serde(untagged)]
enum Piece {
    Text(String),
    Bytes(Vec<u8>),
}

#[derive(Serialize)]
struct PieceToken {
    id: u32,
    piece: Piece,
}

fn piece(id: u32) -> Piece {
    let bytes = tokens::token_bytes(id).unwrap_or_default();
    match String::from_utf8(bytes) {
        Ok(s) => Piece::Text(s),
        Err(e) => Piece::Bytes(e.into_bytes()),
    }
}

/// `POST /tokenize`: `{"content"}` is answered as llama.cpp does (`{"tokens":[…]}`),
/// `{"prompt"}` or `{"messages"}` as vLLM does (`{"count","max_model_len","tokens",
/// "token_strs"}`). The ids are those the simulator counts as `prompt_tokens`.
pub(crate) async fn tokenize(State(app): State<Arc<AppState>>, body: Bytes) -> Response {
    let req: TokenizeRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(&format!("invalid request body: {e}"), None),
    };
    let mut sink = PromptSink::collecting();
    if let Some(content) = &req.content {
        sink.text(content);
        let ids = sink.into_ids();
        let body = if req.with_pieces.unwrap_or(false) {
            let pieces: Vec<PieceToken> = ids
                .into_iter()
                .map(|id| PieceToken {
                    id,
                    piece: piece(id),
                })
                .collect();
            serde_json::json!({ "tokens": pieces })
        } else {
            serde_json::json!({ "tokens": ids })
        };
        return json_response(StatusCode::OK, body.to_string(), None);
    }
    if let Some(messages) = &req.messages {
        chat::tokens(
            messages,
            req.add_generation_prompt.unwrap_or(true),
            &mut sink,
        );
    } else if let Some(prompt) = &req.prompt {
        prompt.feed(&mut sink);
    } else {
        return bad_request(
            "missing `content` (llama.cpp), `prompt` or `messages` (vLLM)",
            Some("prompt"),
        );
    }
    let ids = sink.into_ids();
    let token_strs = req.return_token_strs.unwrap_or(false).then(|| {
        ids.iter()
            .map(|&id| {
                String::from_utf8_lossy(&tokens::token_bytes(id).unwrap_or_default()).into_owned()
            })
            .collect()
    });
    let out = VllmTokenized {
        count: ids.len(),
        max_model_len: app.config.kv_capacity,
        tokens: ids,
        token_strs,
    };
    let body = serde_json::to_string(&out).unwrap_or_default();
    json_response(StatusCode::OK, body, None)
}

#[derive(Deserialize)]
struct DetokenizeRequest {
    tokens: Vec<u64>,
    model: Option<serde::de::IgnoredAny>,
}

/// `POST /detokenize {"tokens":[…]}`: `{"content"}` as llama.cpp answers, or `{"prompt"}` as
/// vLLM does when the request names a `model` (vLLM's clients send one).
pub(crate) async fn detokenize(body: Bytes) -> Response {
    let req: DetokenizeRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(&format!("invalid request body: {e}"), Some("tokens")),
    };
    let text = match tokens::detokenize(&req.tokens) {
        Ok(t) => t,
        Err(id) => {
            return bad_request(
                &format!("token id {id} is out of vocabulary"),
                Some("tokens"),
            );
        }
    };
    let key = if req.model.is_some() {
        "prompt"
    } else {
        "content"
    };
    let body = serde_json::json!({ key: text }).to_string();
    json_response(StatusCode::OK, body, None)
}

/// `POST /reset_prefix_cache` (vLLM): 200 with `{"success": true}`, or, as vLLM does while
/// requests hold cache blocks, `{"success": false}` and the cache kept while any request is
/// running or waiting.
pub(crate) async fn reset_prefix_cache(State(app): State<Arc<AppState>>) -> Response {
    let success = !app.metrics.busy();
    if success && let Some(cache) = &app.prefix {
        lock(cache).clear();
    }
    let body = serde_json::json!({ "success": success }).to_string();
    json_response(StatusCode::OK, body, None)
}

/// `GET|POST /flush_cache` (SGLang): 200 with SGLang's text.
pub(crate) async fn flush_cache(State(app): State<Arc<AppState>>) -> Response {
    if let Some(cache) = &app.prefix {
        lock(cache).clear();
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n",
    )
        .into_response()
}

/// `POST /slots/{id}?action=erase` (llama.cpp): `{"id_slot","n_erased"}`. The simulator's
/// cache is not split by slot, so erasing any slot drops all of it; `n_erased` counts every
/// token dropped.
pub(crate) async fn slot_action(
    State(app): State<Arc<AppState>>,
    id: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Response {
    let slot = id
        .ok()
        .and_then(|Path(s)| s.parse::<u64>().ok())
        .filter(|&s| s < u64::from(app.config.max_running));
    let Some(slot) = slot else {
        return bad_request("Invalid slot ID", Some("id_slot"));
    };
    let action = query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("action="));
    if action != Some("erase") {
        // save and restore need llama-server's --slot-save-path; the simulator has no slots
        // to save.
        return bad_request("Invalid action", Some("action"));
    }
    let erased = app.prefix.as_ref().map_or(0, |c| lock(c).clear());
    let body = serde_json::json!({ "id_slot": slot, "n_erased": erased }).to_string();
    json_response(StatusCode::OK, body, None)
}

/// `GET /version` (vLLM).
pub(crate) async fn version() -> Response {
    let body = serde_json::json!({ "version": VERSION }).to_string();
    json_response(StatusCode::OK, body, None)
}

/// `GET /props` (llama.cpp): the fields clients read to identify the server and its limits.
pub(crate) async fn props(State(app): State<Arc<AppState>>) -> Response {
    let c = &app.config;
    let body = serde_json::json!({
        "default_generation_settings": {
            "id": 0,
            "id_task": -1,
            "n_ctx": c.kv_capacity,
            "is_processing": false,
            "params": { "n_predict": c.default_max_tokens, "cache_prompt": c.prefix_cache },
        },
        "total_slots": c.max_running,
        "model_path": c.model,
        "model_alias": c.model,
        "modalities": { "vision": false, "audio": false },
        "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}<|im_sep|>{{ m.content }}{% endfor %}<|im_start|>assistant<|im_sep|>",
        "bos_token": "",
        "eos_token": "<|endoftext|>",
        "build_info": format!("infermeter-sim-{VERSION}"),
    });
    json_response(StatusCode::OK, body.to_string(), None)
}

/// `GET /get_server_info` (SGLang): a few of its server arguments and the version.
pub(crate) async fn server_info(State(app): State<Arc<AppState>>) -> Response {
    let c = &app.config;
    let body = serde_json::json!({
        "model_path": c.model,
        "tokenizer_path": c.model,
        "served_model_name": c.model,
        "context_length": c.kv_capacity,
        "max_running_requests": c.max_running,
        "max_total_num_tokens": c.kv_capacity,
        "chunked_prefill_size": c.prefill_chunk,
        "page_size": c.prefix_cache_block,
        "disable_radix_cache": !c.prefix_cache,
        "version": VERSION,
    });
    json_response(StatusCode::OK, body.to_string(), None)
}
