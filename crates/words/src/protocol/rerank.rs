//! `api "rerank"`: the rerank API vLLM serves (Jina's and Cohere's shape), `POST
//! {base}/rerank` with a `query` and `documents` (the target's `batch` of them), answered in
//! one JSON body (`results`, one relevance score per document, and `usage`): not streamed. A
//! server encodes each (query, document) pair, so its prompt count holds the query once per
//! document. See `pooled.rs`.

use super::api::{Answer, ApiKind, Inputs};
use super::body::Request;
use super::chunk::{ChunkError, Event};
use super::pooled::{self, List, Pooled, WholeError};

/// The rerank API.
pub struct Rerank;

impl ApiKind for Rerank {
    fn otlp_operation(&self) -> &'static str {
        "rerank"
    }

    fn name(&self) -> &'static str {
        "rerank"
    }

    fn help(&self) -> &'static str {
        "`POST {base}/rerank` with `query` and `documents` (`batch` of them); answered whole, not streamed."
    }

    fn path(&self) -> &'static str {
        "/rerank"
    }

    fn conversation(&self) -> bool {
        false
    }

    /// Per pair: a cross-encoder's start, separator and end tokens.
    fn template_tokens(&self) -> u32 {
        4
    }

    /// `{"model","query":"…","documents":["…",…]}`, then the extra fields.
    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>) {
        pooled::write_pairs(out, req, ("query", "documents"), true);
    }

    fn decode_event<'a>(&self, _data: &'a str) -> Result<Event<'a>, ChunkError> {
        Err(pooled::no_event())
    }

    fn answer(&self) -> Answer {
        Answer::Pooled(Inputs::Pairs)
    }

    fn decode_whole(&self, body: &[u8], inputs: u32) -> Result<Pooled, WholeError> {
        pooled::decode(body, List::Results, inputs)
    }
}
