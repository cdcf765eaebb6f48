//! One stream's events folded into its request record as they arrive: the first token, the
//! gaps between output chunks, the answer's first instant, the text, usage and finish reason.
//! Per chunk: no allocation beyond the record's gap buffer and the text, no lock.

use super::super::sse::Events;
use crate::metrics::{ErrorKind, RequestRecord};
use crate::protocol::{
    Api, ChunkInfo, ChunkMemo, EventKind, FinishReason, MAX_KEPT_CALL_BYTES, MAX_KEPT_CALLS,
    ResponseId, ToolCall, ToolCallDelta, Usage,
};

/// How a stream ended.
pub(super) enum End {
    /// `data: [DONE]`.
    Done,
    /// The body ended without it.
    Eof,
    Failed(ErrorKind),
}

/// What one stream's events add up to so far.
pub(super) struct Tally {
    /// Whose grammar the events follow.
    api: Api,
    /// When the last chunk with output arrived.
    last: Option<u64>,
    pub(super) usage: Option<Usage>,
    /// The stream carried a tool call (kept or not).
    called: bool,
    /// The calls kept so far, when the record keeps them (`keep_tool_calls`).
    calls: Calls,
    /// What the stream's chunks repeat, validated once.
    memo: ChunkMemo,
}

/// What is kept of a stream's tool calls: bounded by [`MAX_KEPT_CALLS`] calls and
/// [`MAX_KEPT_CALL_BYTES`] of arguments, whatever the server sends.
#[derive(Default)]
struct Calls {
    /// Arguments' bytes kept.
    bytes: usize,
    /// The call the deltas now continue is not kept (past a bound).
    dropping: bool,
}

impl Tally {
    pub(super) fn new(api: Api) -> Tally {
        Tally {
            api,
            last: None,
            usage: None,
            called: false,
            calls: Calls::default(),
            memo: ChunkMemo::default(),
        }
    }

    /// Takes every complete event `events` holds (all arrived at `now`); how the stream
    /// ended, if one of them ended it.
    pub(super) fn take_events(
        &mut self,
        events: &mut Events,
        now: u64,
        rec: &mut RequestRecord,
        text: &mut String,
    ) -> Option<End> {
        loop {
            let data = match events.next_data() {
                Ok(Some(d)) => d,
                Ok(None) => return None,
                Err(_) => return Some(End::Failed(ErrorKind::Malformed)),
            };
            // Filled where it lies: a chunk returned by value was copied twice per event.
            let mut chunk = ChunkInfo::default();
            let last = match self
                .api
                .kind()
                .decode_event_into(data, &mut chunk, &mut self.memo)
            {
                Ok(EventKind::Chunk) => false,
                Ok(EventKind::Last) => true,
                Ok(EventKind::Done) => return Some(End::Done),
                Err(_) => return Some(End::Failed(ErrorKind::Malformed)),
            };
            if chunk.error {
                return Some(End::Failed(ErrorKind::StreamBroken));
            }
            if chunk.has_output() {
                match self.last {
                    None => rec.first_token_ns = Some(now),
                    Some(prev) => rec
                        .itl_us
                        .push(((now - prev) / 1_000).min(u32::MAX as u64) as u32),
                }
                self.last = Some(now);
                rec.chunks += 1;
            }
            if chunk.has_answer() && rec.first_answer_ns.is_none() {
                rec.first_answer_ns = Some(now);
                // Once per request: where the answer starts, past the reasoning before it.
                rec.answer_at = text.len().min(u32::MAX as usize) as u32;
            }
            if let Some(a) = &chunk.answer {
                a.push_to(text);
            }
            if let Some(r) = &chunk.reasoning {
                r.push_to(text);
            }
            self.take_calls(&chunk, rec, text);
            if let Some(u) = chunk.usage {
                self.usage = Some(u);
            }
            if chunk.finish_reason.is_some() {
                rec.finish_reason = chunk.finish_reason;
                // A stream that stopped after tool calls ended with them, as a whole answer's
                // decoding says (the Responses API's `completed` names no reason of its own).
                if rec.finish_reason == Some(FinishReason::Stop) && self.called {
                    rec.finish_reason = Some(FinishReason::ToolCalls);
                }
            }
            if chunk.timings.is_some() {
                rec.server_timings = chunk.timings;
            }
            // Once or twice per response (its creation and its end): judged, and kept only
            // when it differs from the one already kept.
            if let Some(id) = &chunk.response_id {
                let judged = ResponseId::judge_json(id);
                if rec.response_id.as_ref() != Some(&judged) {
                    rec.response_id = Some(judged);
                }
            }
            if last {
                return Some(End::Done);
            }
        }
    }
}

impl Tally {
    /// A chunk's tool calls: a call's name and arguments are generated tokens like answer
    /// text, every call's when a delta carries several; kept when the record keeps them. Most
    /// chunks carry none: nothing to walk.
    fn take_calls(&mut self, chunk: &ChunkInfo<'_>, rec: &mut RequestRecord, text: &mut String) {
        let any = chunk.tool_call.id.is_some()
            || chunk.tool_call.has_output()
            || !chunk.more_tool_calls.is_empty();
        if !any {
            return;
        }
        for call in chunk.tool_calls() {
            // Every chunk has a (most often empty) first call delta.
            if call.id.is_none() && !call.has_output() {
                continue;
            }
            for part in [&call.name, &call.arguments].into_iter().flatten() {
                part.push_to(text);
            }
            // A delta with an id starts a call (its later deltas carry only arguments),
            // as `Calls::keep` reads them; a server that sends no id has one call.
            if call.id.is_some() || !self.called {
                rec.calls = rec.calls.saturating_add(1);
            }
            self.called = true;
            if rec.keep_tool_calls {
                self.calls.keep(&mut rec.tool_calls, call);
            }
        }
    }
}

impl Calls {
    /// Adds a streamed tool-call delta to the calls so far, for a session's next turn: a
    /// delta with an id starts a call, one without continues the last (a call's later deltas
    /// carry only its arguments). Allocates only on tool-call deltas, as the reply text does.
    /// Past [`MAX_KEPT_CALLS`] a new call is not kept; a call whose arguments would take the
    /// kept bytes past [`MAX_KEPT_CALL_BYTES`] is emptied (no id: never answered) and its
    /// later deltas are not kept.
    fn keep(&mut self, calls: &mut Vec<ToolCall>, delta: &ToolCallDelta<'_>) {
        if delta.id.is_some() || calls.is_empty() {
            self.dropping = calls.len() >= MAX_KEPT_CALLS;
            if !self.dropping {
                calls.push(ToolCall::default());
            }
        }
        let Some(call) = calls.last_mut().filter(|_| !self.dropping) else {
            return;
        };
        if let Some(id) = &delta.id {
            id.push_to(&mut call.call_id);
        }
        if let Some(name) = &delta.name {
            name.push_to(&mut call.name);
        }
        if let Some(args) = &delta.arguments {
            let before = call.arguments.len();
            args.push_to(&mut call.arguments);
            self.bytes += call.arguments.len() - before;
            if self.bytes > MAX_KEPT_CALL_BYTES {
                self.bytes -= call.arguments.len();
                *call = ToolCall::default();
                self.dropping = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{MAX_KEPT_CALL_BYTES, MAX_KEPT_CALLS, usable_call};

    /// A chat stream's chunk whose delta carries `calls` (the `tool_calls` array's elements).
    fn chunk(calls: &str, finish: &str) -> String {
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{calls}]}},\"finish_reason\":{finish}}}]}}\n\n"
        )
    }

    fn start(id: &str, args: &str) -> String {
        format!(
            r#"{{"index":0,"id":"{id}","type":"function","function":{{"name":"get","arguments":"{args}"}}}}"#
        )
    }

    /// Folds `body` into a record that keeps its calls or not; the record and the text.
    fn fold(body: &str, keep: bool) -> (RequestRecord, String) {
        let mut events = Events::new(64 << 20);
        events.push(body.as_bytes());
        let mut rec = RequestRecord {
            keep_tool_calls: keep,
            ..RequestRecord::default()
        };
        let mut text = String::new();
        let mut tally = Tally::new(Api::CHAT);
        while tally
            .take_events(&mut events, 1_000, &mut rec, &mut text)
            .is_none()
        {
            if events.pending().is_empty() {
                break;
            }
        }
        (rec, text)
    }

    fn stream(calls: &[String], more_args: usize) -> String {
        let mut body = String::new();
        for c in calls {
            body.push_str(&chunk(c, "null"));
            for _ in 0..more_args {
                body.push_str(&chunk(
                    r#"{"index":0,"function":{"arguments":"ab"}}"#,
                    "null",
                ));
            }
        }
        body.push_str(&chunk("", "\"stop\""));
        body.push_str("data: [DONE]\n\n");
        body
    }

    #[test]
    fn a_plain_request_keeps_no_call_and_a_session_turn_keeps_them() {
        let body = stream(&[start("c1", "{"), start("c2", "")], 50);
        let (plain, text) = fold(&body, false);
        // Counted as output and a tool-call ending, but nothing kept: no allocation per
        // tool-call delta beyond the text.
        assert_eq!(plain.tool_calls.capacity(), 0);
        assert_eq!(plain.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(text.len(), 2 * ("get".len() + 100) + 1);
        let (turn, _) = fold(&body, true);
        assert_eq!(turn.tool_calls.len(), 2);
        assert_eq!(turn.tool_calls[0].call_id, "c1");
        assert_eq!(turn.tool_calls[0].arguments.len(), 101);
        assert_eq!(turn.finish_reason, Some(FinishReason::ToolCalls));
    }

    #[test]
    fn what_is_kept_of_a_flood_of_calls_or_huge_arguments_is_bounded() {
        // 10,000 calls in one answer: the first MAX_KEPT_CALLS are kept.
        let calls: Vec<String> = (0..10_000).map(|i| start(&format!("c{i}"), "{}")).collect();
        let (rec, _) = fold(&stream(&calls, 0), true);
        assert_eq!(rec.tool_calls.len(), MAX_KEPT_CALLS);
        assert_eq!(
            rec.tool_calls[MAX_KEPT_CALLS - 1].call_id,
            format!("c{}", MAX_KEPT_CALLS - 1)
        );
        // Arguments past the bytes kept: the call is emptied (never answered), its later
        // deltas dropped; the next call is kept.
        let huge = "x".repeat(MAX_KEPT_CALL_BYTES / 4);
        let mut body = chunk(&start("big", ""), "null");
        for _ in 0..8 {
            body.push_str(&chunk(
                &format!(r#"{{"index":0,"function":{{"arguments":"{huge}"}}}}"#),
                "null",
            ));
        }
        body.push_str(&stream(&[start("small", "{}")], 1));
        let (rec, text) = fold(&body, true);
        assert!(text.len() > 2 * MAX_KEPT_CALL_BYTES, "all of it is output");
        assert_eq!(
            rec.tool_calls.len(),
            2,
            "{:?}",
            rec.tool_calls
                .iter()
                .map(|c| &c.call_id)
                .collect::<Vec<_>>()
        );
        assert!(!usable_call(&rec.tool_calls[0]));
        assert!(rec.tool_calls[0].arguments.capacity() == 0);
        assert_eq!(rec.tool_calls[1].call_id, "small");
        assert_eq!(rec.tool_calls[1].arguments, "{}ab");
    }
}
