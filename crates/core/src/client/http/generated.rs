//! A generation API asked for its whole answer (`stream #false`): one JSON body of generated
//! text, read by the same path as a pooling answer (`whole.rs`: the same bounds, timeout and
//! connection reuse) and decoded by the API kind into its text, reasoning, tool calls, finish
//! reason and usage. Nothing arrives token by token, so the record has no first token and no
//! gaps: its E2E latency and output tokens are what it measures. An answer that is not the
//! API's JSON is `malformed`, the server's error object (or a failed status) `stream_broken`
//! as an in-stream error is, an answer with no output at all `empty`.

use std::time::Instant;

use bytes::Bytes;

use super::super::wire::{Held, Tag};
use super::Client;
use super::whole::Read;
use crate::metrics::{ErrorKind, RequestRecord};
use crate::protocol::{ResponseId, WholeError};

impl Client {
    /// Sends one request asking for its whole answer and fills `rec`; the answer's text
    /// (reasoning, answer and tool calls) for `validate` hooks and token counts.
    pub(super) async fn execute_generated(
        &self,
        body: Bytes,
        on: (Tag<'_>, Option<&mut Held>),
        rec: &mut RequestRecord,
        t0: Instant,
    ) -> String {
        let api = self.api;
        let outcome = self
            .read_whole(body, on, rec, t0, |b| api.kind().decode_generated(b))
            .await;
        let answer = match outcome {
            Read::TimedOut => {
                rec.error = Some(ErrorKind::Timeout);
                None
            }
            Read::Failed => None,
            Read::Answer(Err(e)) => {
                tracing::debug!("unreadable answer: {e}");
                rec.error = Some(match e {
                    WholeError::Server => ErrorKind::StreamBroken,
                    _ => ErrorKind::Malformed,
                });
                None
            }
            Read::Answer(Ok(g)) => Some(g),
        };
        let mut text = String::new();
        let usage = answer.as_ref().and_then(|g| g.usage);
        if let Some(g) = &answer {
            g.push_text(&mut text);
            // `push_text` writes the reasoning first: the answer starts after it.
            rec.answer_at = g.reasoning.len().min(u32::MAX as usize) as u32;
            if rec.keep_tool_calls {
                rec.tool_calls = crate::protocol::kept_calls(&g.tool_calls);
            }
            rec.calls = u16::try_from(g.tool_calls.len()).unwrap_or(u16::MAX);
            rec.finish_reason = g.finish_reason;
            rec.answered = Some(g.has_answer());
            rec.response_id = g.id.as_deref().map(ResponseId::judge);
            // Hidden reasoning (OpenAI sends none of its text) still counts in usage.
            if !g.has_output() && usage.is_none_or(|u| u.completion_tokens == 0) {
                rec.error = Some(ErrorKind::Empty);
            }
            if let Some(u) = usage {
                self.check_prompt(rec, u.prompt_tokens, u.cached_tokens);
            }
        }
        self.count_output(rec, usage, &text).await;
        text
    }
}
