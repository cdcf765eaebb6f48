//! What the simulator's pooling sides share (embeddings, rerank, score): a request of texts
//! becomes a generation of one token whose prefill is every text's tokens, so a batch takes
//! the latency model's prefill time for all its tokens, queued and batched with everything
//! else the scheduler runs; its answer is one JSON body with a result per input and `usage`
//! with prompt tokens only, as vLLM's pooling endpoints answer.

use serde::Deserialize;

use crate::tokens::PromptSink;
use crate::wire::{BadRequest, ChoiceStream, GenRequest, Whole};

/// Never written: a pooling request does not stream (`stream` is not read from its body).
pub(super) const NO_STREAM: ChoiceStream = ChoiceStream {
    id_prefix: "pool-sim-",
    object: "list",
    open: b"",
    close: b"",
    first: None,
    open_reasoning: None,
};

/// A text field that may be one text or several (`input`, `text_2`, `documents`).
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Texts {
    One(String),
    Many(Vec<String>),
}

impl Texts {
    pub(super) fn as_slice(&self) -> &[String] {
        match self {
            Texts::One(t) => std::slice::from_ref(t),
            Texts::Many(ts) => ts,
        }
    }
}

/// Decodes a pooling request's body into `T`, a 400 naming what is wrong otherwise.
pub(super) fn decode<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, BadRequest> {
    serde_json::from_slice(body).map_err(|e| BadRequest {
        message: format!("invalid request body: {e}"),
        param: None,
    })
}

/// The generation a pooling request is served as: `texts` each their own input, or with a
/// `query` each paired with it (the query's tokens counted once per pair, as a cross-encoder
/// sees them).
pub(super) fn request(
    query: Option<&str>,
    texts: &[String],
    collect_ids: bool,
) -> Result<GenRequest, BadRequest> {
    let inputs = u32::try_from(texts.len()).unwrap_or(u32::MAX);
    fed(inputs, collect_ids, |sink| {
        for t in texts {
            if let Some(q) = query {
                sink.text(q);
            }
            sink.text(t);
        }
    })
}

/// The generation of `inputs` inputs whose tokens `feed` gives.
pub(super) fn fed(
    inputs: u32,
    collect_ids: bool,
    feed: impl FnOnce(&mut PromptSink),
) -> Result<GenRequest, BadRequest> {
    if inputs == 0 {
        return Err(BadRequest {
            message: "at least one input is required".into(),
            param: None,
        });
    }
    let mut sink = if collect_ids {
        PromptSink::collecting()
    } else {
        PromptSink::counting()
    };
    feed(&mut sink);
    Ok(GenRequest {
        prompt_tokens: sink.count(),
        max_tokens: Some(1),
        min_tokens: 0,
        ignore_eos: true,
        stream: false,
        include_usage: false,
        prompt_ids: sink.into_ids(),
        cache_prompt: true,
        tool: None,
        inputs,
        reasoning_effort: None,
        model: None,
        priority: 0,
        tool_results: Default::default(),
        store: false,
        previous_response_id: None,
        answered: Vec::new(),
    })
}

/// A pooling answer's `usage`: the prompt's tokens, nothing generated.
pub(super) fn usage(w: &Whole<'_>) -> serde_json::Value {
    let prompt = w.usage.get("prompt_tokens").cloned().unwrap_or(0.into());
    serde_json::json!({
        "prompt_tokens": prompt, "total_tokens": prompt, "completion_tokens": 0,
        "prompt_tokens_details": null,
    })
}

/// A deterministic value in -1..1 for result `i` of request `id` (component `j`).
pub(super) fn value(id: u64, i: u32, j: u32) -> f64 {
    let mut s = id ^ (u64::from(i) << 32) ^ u64::from(j);
    s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    s = (s ^ (s >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    s = (s ^ (s >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}
