//! A test-only API kind, the proof of "Adding an API kind" in `docs/architecture.md`: this
//! file, two lines in `protocol.rs` (its module, its `REGISTRY` entry) and its simulator side
//! (`crates/sim/src/apis/echo.rs` and two lines in `crates/sim/src/apis.rs`) are all it takes for
//! `api "echo"` to parse, plan, run and be served. It posts
//! `{"model","input","max_tokens","stream",…}` to `/echo` and reads OpenAI `text` chunks back.

use super::api::ApiKind;
use super::body::{self, PromptRef, Request};
use super::chunk::{self, ChunkError, Event};

/// The test API.
pub struct Echo;

impl ApiKind for Echo {
    fn otlp_operation(&self) -> &'static str {
        "text_completion"
    }

    fn name(&self) -> &'static str {
        "echo"
    }

    fn help(&self) -> &'static str {
        "`POST {base}/echo` with `input` (a test-only API)."
    }

    fn path(&self) -> &'static str {
        "/echo"
    }

    fn conversation(&self) -> bool {
        false
    }

    /// None: the simulator counts `input` exactly as the plan does.
    fn template_tokens(&self) -> u32 {
        0
    }

    fn write_body(&self, out: &mut Vec<u8>, req: &Request<'_>) {
        body::open(out, req.model);
        out.extend_from_slice(b",\"input\":");
        match req.prompt {
            PromptRef::Text(t) => body::json_str(out, t),
            PromptRef::Messages(m) => {
                let joined: Vec<&str> = m.iter().map(|m| m.content).collect();
                body::json_str(out, &joined.join(" "));
            }
        }
        body::streamed_generation(out, req);
    }

    fn decode_event<'a>(&self, data: &'a str) -> Result<Event<'a>, ChunkError> {
        chunk::openai_event(data)
    }
}
