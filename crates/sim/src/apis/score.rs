//! The simulator's side of `api "score"`: `text_1` and `text_2` (one text or several, each
//! scored against `text_1`), answered with `data` (one score per pair) and `usage`, as vLLM
//! answers.

use serde::Deserialize;

use super::pooled::{self, Texts};
use crate::wire::{BadRequest, GenRequest, SimApi, Stream, Whole};

/// The score API's side.
pub(crate) struct Score;

#[derive(Deserialize)]
struct Request {
    text_1: String,
    text_2: Texts,
}

impl SimApi for Score {
    fn name(&self) -> &'static str {
        "score"
    }

    fn parse(&self, body: &[u8], collect_ids: bool) -> Result<GenRequest, BadRequest> {
        let req: Request = pooled::decode(body)?;
        pooled::request(Some(&req.text_1), req.text_2.as_slice(), collect_ids)
    }

    fn stream(&self) -> Stream {
        Stream::Choices(&pooled::NO_STREAM)
    }

    fn whole(&self, w: &Whole<'_>) -> serde_json::Value {
        let data: Vec<serde_json::Value> = (0..w.inputs)
            .map(|i| {
                let score = (pooled::value(w.id, i, 0) + 1.0) / 2.0;
                serde_json::json!({ "index": i, "object": "score", "score": score })
            })
            .collect();
        serde_json::json!({
            "id": format!("score-sim-{}", w.id), "object": "list", "created": w.created,
            "model": w.model, "data": data, "usage": pooled::usage(w),
        })
    }
}
