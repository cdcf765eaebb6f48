//! The simulator's side of the test-only `api "echo"` (see `crates/words/src/protocol/echo.rs`): an `input`
//! string, answered as completions' `text` chunks with an object of its own.

use serde::Deserialize;

use crate::tokens::PromptSink;
use crate::wire::{self, BadRequest, ChoiceStream, GenRequest, PromptField, SimApi, Stream, Whole};

/// The test API's side.
pub(crate) struct Echo;

const STREAM: ChoiceStream = ChoiceStream {
    id_prefix: "echo-sim-",
    object: "echo.chunk",
    open: br#""choices":[{"index":0,"text":""#,
    close: br#"","finish_reason":"#,
    first: None,
    open_reasoning: None,
};

impl SimApi for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }

    fn parse(&self, body: &[u8], collect_ids: bool) -> Result<GenRequest, BadRequest> {
        wire::parse::<Input>(body, collect_ids)
    }

    fn stream(&self) -> Stream {
        Stream::Choices(&STREAM)
    }

    fn whole(&self, w: &Whole<'_>) -> serde_json::Value {
        serde_json::json!({
            "id": format!("echo-sim-{}", w.id), "object": "echo", "model": w.model,
            "choices": [{ "index": 0, "text": w.text, "finish_reason": w.finish }],
            "usage": w.usage,
        })
    }
}

/// A request's `input`.
#[derive(Deserialize)]
struct Input(String);

impl PromptField for Input {
    const KEY: &'static str = "input";
    fn feed(&self, sink: &mut PromptSink) {
        sink.text(&self.0);
    }
}
