//! The simulator's side of `api "rerank"`: a `query` and `documents`, each document scored
//! against the query (a pair's tokens are the query's and the document's), answered with
//! `results` (one relevance score per document, best first) and `usage`, as vLLM answers.

use serde::Deserialize;

use super::pooled::{self, Texts};
use crate::wire::{BadRequest, GenRequest, SimApi, Stream, Whole};

/// The rerank API's side.
pub(crate) struct Rerank;

#[derive(Deserialize)]
struct Request {
    query: String,
    documents: Texts,
}

impl SimApi for Rerank {
    fn name(&self) -> &'static str {
        "rerank"
    }

    fn parse(&self, body: &[u8], collect_ids: bool) -> Result<GenRequest, BadRequest> {
        let req: Request = pooled::decode(body)?;
        pooled::request(Some(&req.query), req.documents.as_slice(), collect_ids)
    }

    fn stream(&self) -> Stream {
        Stream::Choices(&pooled::NO_STREAM)
    }

    fn whole(&self, w: &Whole<'_>) -> serde_json::Value {
        let mut scored: Vec<(u32, f64)> = (0..w.inputs)
            .map(|i| (i, (pooled::value(w.id, i, 0) + 1.0) / 2.0))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        let results: Vec<serde_json::Value> = scored
            .into_iter()
            .map(|(i, s)| serde_json::json!({ "index": i, "relevance_score": s }))
            .collect();
        serde_json::json!({
            "id": format!("rerank-sim-{}", w.id), "model": w.model,
            "usage": pooled::usage(w), "results": results,
        })
    }
}
