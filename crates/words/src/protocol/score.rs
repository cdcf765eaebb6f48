//! `api "score"`: vLLM's score API, `POST {base}/score` with `text_1` and `text_2` (one text,
//! or the target's `batch` of them, each scored against `text_1`), answered in one JSON body
//! (`data`, one score per pair, and `usage`): not streamed. See `pooled.rs`.

use super::api::{Answer, ApiKind, Inputs};
use super::body::Request;
use super::chunk::{ChunkError, Event};
use super::pooled::{self, List, Pooled, WholeError};

/// The score API.
pub struct Score;

impl ApiKind for Score {
    fn otlp_operation(&self) -> &'static str {
        "score"
    }

    fn name(&self) -> &'static str {
        "score"
    }

    fn help(&self) -> &'static str {
        "`POST {base}/score` with `text_1` and `text_2` (`batch` texts); answered whole, not streamed."
    }

    fn path(&self) -> &'static str {
        "/score"
    }

    fn conversation(&self) -> bool {
        false
    }

    /// Per pair: a cross-encoder's start, separator and end tokens.
    fn template_tokens(&self) -> u32 {
        4
    }

    /// `{"model","text_1":"…","text_2":"…"}`, `text_2` a list for a batch of more than one,
    /// then the extra fields.
    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>) {
        pooled::write_pairs(out, req, ("text_1", "text_2"), false);
    }

    fn decode_event<'a>(&self, _data: &'a str) -> Result<Event<'a>, ChunkError> {
        Err(pooled::no_event())
    }

    fn answer(&self) -> Answer {
        Answer::Pooled(Inputs::Pairs)
    }

    fn decode_whole(&self, body: &[u8], inputs: u32) -> Result<Pooled, WholeError> {
        pooled::decode(body, List::Data, inputs)
    }
}
