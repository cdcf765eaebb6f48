//! The simulator's side of `api "embeddings"`: `input` as one text, several texts or token
//! ids, answered with one embedding per input (`embedding-dim` values each) and `usage`, as
//! vLLM answers (`tests/data/vllm-embeddings.json`).

use serde::Deserialize;

use super::completions::Prompt;
use super::pooled;
use crate::wire::{BadRequest, GenRequest, PromptField, SimApi, Stream, Whole};

/// The embeddings API's side.
pub(crate) struct Embeddings;

#[derive(Deserialize)]
struct Request {
    input: Prompt,
}

impl SimApi for Embeddings {
    fn name(&self) -> &'static str {
        "embeddings"
    }

    fn parse(&self, body: &[u8], collect_ids: bool) -> Result<GenRequest, BadRequest> {
        let req: Request = pooled::decode(body)?;
        match req.input {
            Prompt::Text(t) => pooled::request(None, &[t], collect_ids),
            Prompt::Texts(ts) => pooled::request(None, &ts, collect_ids),
            // Token ids: one input.
            ids @ Prompt::Ids(_) => pooled::fed(1, collect_ids, |sink| ids.feed(sink)),
        }
    }

    fn stream(&self) -> Stream {
        Stream::Choices(&pooled::NO_STREAM)
    }

    fn whole(&self, w: &Whole<'_>) -> serde_json::Value {
        let data: Vec<serde_json::Value> = (0..w.inputs)
            .map(|i| {
                let v: Vec<f64> = (0..w.embedding_dim)
                    .map(|j| pooled::value(w.id, i, j))
                    .collect();
                serde_json::json!({ "index": i, "object": "embedding", "embedding": v })
            })
            .collect();
        serde_json::json!({
            "id": format!("embd-sim-{}", w.id), "object": "list", "created": w.created,
            "model": w.model, "data": data, "usage": pooled::usage(w),
        })
    }
}
