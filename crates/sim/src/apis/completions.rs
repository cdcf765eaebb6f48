//! The simulator's side of `api "completions"`: a `prompt` given as text, several texts or
//! token ids, and `text_completion` events.

use serde::Deserialize;

use crate::tokens::PromptSink;
use crate::wire::{self, BadRequest, ChoiceStream, GenRequest, PromptField, SimApi, Stream, Whole};

/// The completions API's side.
pub(crate) struct Completions;

const STREAM: ChoiceStream = ChoiceStream {
    id_prefix: "cmpl-sim-",
    object: "text_completion",
    open: br#""choices":[{"index":0,"text":""#,
    close: br#"","logprobs":null,"finish_reason":"#,
    first: None,
    open_reasoning: None,
};

impl SimApi for Completions {
    fn name(&self) -> &'static str {
        "completions"
    }

    fn parse(&self, body: &[u8], collect_ids: bool) -> Result<GenRequest, BadRequest> {
        wire::parse::<Prompt>(body, collect_ids)
    }

    fn stream(&self) -> Stream {
        Stream::Choices(&STREAM)
    }

    /// Completions has no reasoning field: the reasoning is text, as its stream sends it.
    fn whole(&self, w: &Whole<'_>) -> serde_json::Value {
        let text = format!("{}{}", w.reasoning, w.text);
        serde_json::json!({
            "id": format!("cmpl-sim-{}", w.id), "object": "text_completion",
            "created": w.created, "model": w.model,
            "choices": [{ "index": 0, "text": text, "logprobs": null, "finish_reason": w.finish }],
            "usage": w.usage,
        })
    }
}

/// A request's `prompt`.
#[derive(Deserialize)]
#[serde(untagged)]
pub(crate) enum Prompt {
    Text(String),
    Texts(Vec<String>),
    Ids(Vec<u64>),
}

impl PromptField for Prompt {
    const KEY: &'static str = "prompt";
    fn feed(&self, sink: &mut PromptSink) {
        match self {
            Prompt::Text(t) => sink.text(t),
            Prompt::Texts(ts) => ts.iter().for_each(|t| sink.text(t)),
            Prompt::Ids(ids) => sink.ids(ids),
        }
    }
}
