//! `api "embeddings"`: OpenAI's embeddings, `POST {base}/embeddings` with `input`, one text or
//! a batch of texts (the target's `batch`), answered in one JSON body (`data`, one embedding
//! per input, and `usage`): not streamed. See `pooled.rs`.

use super::api::{Answer, ApiKind, Inputs};
use super::body::{self, Request};
use super::chunk::{ChunkError, Event};
use super::pooled::{self, List, Pooled, WholeError};

/// The embeddings API.
pub struct Embeddings;

impl ApiKind for Embeddings {
    fn otlp_operation(&self) -> &'static str {
        "embeddings"
    }

    fn name(&self) -> &'static str {
        "embeddings"
    }

    fn help(&self) -> &'static str {
        "`POST {base}/embeddings` with `input` (one text, or `batch` texts); answered whole, not streamed."
    }

    fn path(&self) -> &'static str {
        "/embeddings"
    }

    fn conversation(&self) -> bool {
        false
    }

    /// Per input: an encoder's start and end tokens (`[CLS]`, `[SEP]`), a decoder's BOS/EOS.
    fn template_tokens(&self) -> u32 {
        2
    }

    /// `{"model","input":"…"}`, or `"input":["…",…]` for a batch, then the extra fields.
    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>) {
        body::open(out, req.model);
        let (first, rest) = pooled::texts(req);
        let texts: Vec<&str> = first
            .into_iter()
            .chain(rest.iter().map(String::as_str))
            .collect();
        pooled::text_field(out, "input", &texts, !rest.is_empty());
        pooled::close(out, req);
    }

    fn decode_event<'a>(&self, _data: &'a str) -> Result<Event<'a>, ChunkError> {
        Err(pooled::no_event())
    }

    fn answer(&self) -> Answer {
        Answer::Pooled(Inputs::Batch)
    }

    fn decode_whole(&self, body: &[u8], inputs: u32) -> Result<Pooled, WholeError> {
        pooled::decode(body, List::Data, inputs)
    }
}
