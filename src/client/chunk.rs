//! Decoding one streamed OpenAI-style chunk (`data: {...}`) into what the measurement needs:
//! does it carry generated output, which kind, and the server's token usage.
//!
//! Decoding borrows from the event's text (no copy unless the JSON has escapes) and keeps only
//! the first choice, so a chunk costs no heap allocation in the common case.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{IgnoredAny, SeqAccess, Visitor};

/// What one chunk says.
#[derive(Debug, Default, PartialEq)]
pub struct ChunkInfo<'a> {
    /// Generated answer text (`delta.content` for chat, `text` for completions).
    pub answer: Option<Cow<'a, str>>,
    /// Generated reasoning text (`delta.reasoning_content` or `delta.reasoning`).
    pub reasoning: Option<Cow<'a, str>>,
    pub usage: Option<Usage>,
    /// The server reported an error inside the stream.
    pub error: bool,
}

impl ChunkInfo<'_> {
    /// A chunk counts as a token arrival only when it carries generated text: role-only first
    /// chunks and empty deltas with a `finish_reason` do not.
    pub fn has_output(&self) -> bool {
        self.has_answer() || self.reasoning.as_deref().is_some_and(|s| !s.is_empty())
    }
    pub fn has_answer(&self) -> bool {
        self.answer.as_deref().is_some_and(|s| !s.is_empty())
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
}

#[derive(Deserialize)]
struct RawChunk<'a> {
    #[serde(default, borrow)]
    choices: FirstChoice<'a>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Default, Deserialize)]
struct RawChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<RawDelta<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Default, Deserialize)]
struct RawDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
}

/// The first element of `choices`, skipping the rest without collecting them into a Vec.
#[derive(Default)]
struct FirstChoice<'a>(Option<RawChoice<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(FirstChoice(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<RawChoice<'a>>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Decodes one `data:` payload (not `[DONE]`).
pub fn parse_chunk(data: &str) -> Result<ChunkInfo<'_>, serde_json::Error> {
    let raw: RawChunk<'_> = serde_json::from_str(data)?;
    let mut info = ChunkInfo {
        usage: raw.usage,
        error: raw.error.is_some(),
        ..ChunkInfo::default()
    };
    if let Some(choice) = raw.choices.0 {
        if let Some(delta) = choice.delta {
            info.answer = delta.content;
            info.reasoning = delta.reasoning_content.or(delta.reasoning);
        }
        if info.answer.is_none() {
            info.answer = choice.text;
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_only_chunk_is_not_output() {
        let c = parse_chunk(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"}"#,
        )
        .unwrap();
        assert!(!c.has_output());
        let c =
            parse_chunk(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#).unwrap();
        assert!(!c.has_output());
    }

    #[test]
    fn content_text_and_reasoning() {
        let c = parse_chunk(r#"{"choices":[{"delta":{"content":"hi \"there\""}}]}"#).unwrap();
        assert_eq!(c.answer.as_deref(), Some("hi \"there\""));
        assert!(c.has_answer());
        let c = parse_chunk(r#"{"choices":[{"text":" x","index":0}],"object":"text_completion"}"#)
            .unwrap();
        assert_eq!(c.answer.as_deref(), Some(" x"));
        let c = parse_chunk(r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#).unwrap();
        assert!(c.has_output() && !c.has_answer());
        let c = parse_chunk(r#"{"choices":[{"delta":{"reasoning":"hmm"}}]}"#).unwrap();
        assert!(c.has_output() && !c.has_answer());
    }

    #[test]
    fn usage_in_empty_choices_chunk() {
        let c = parse_chunk(
            r#"{"choices":[],"usage":{"completion_tokens":8,"prompt_tokens":23,"total_tokens":31}}"#,
        )
        .unwrap();
        assert!(!c.has_output());
        assert_eq!(
            c.usage,
            Some(Usage {
                prompt_tokens: 23,
                completion_tokens: 8
            })
        );
    }

    #[test]
    fn errors_and_garbage() {
        assert!(
            parse_chunk(r#"{"error":{"message":"boom"}}"#)
                .unwrap()
                .error
        );
        assert!(parse_chunk("{not json").is_err());
        assert!(parse_chunk(r#"{"choices":"nope"}"#).is_err());
        // `choices: null` is tolerated as no choice.
        assert!(!parse_chunk(r#"{"choices":null}"#).unwrap().has_output());
    }
}
