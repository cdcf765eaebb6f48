//! The Responses API's stream events that both answers share (text and a function call): an
//! event's opening, a whole event, and the response's end with its usage.

use std::fmt::Write as _;

use bytes::BytesMut;

use crate::wire::{self, FinishReason, TokenEvent};

/// `event: KIND` and `data: {"type":"KIND"`, the object left open.
pub(super) fn open(buf: &mut BytesMut, kind: &str) {
    let _ = write!(buf, "event: {kind}\ndata: {{\"type\":\"{kind}\"");
}

/// A whole event: its type, sequence number and `fields` (JSON members).
pub(super) fn event(buf: &mut BytesMut, kind: &str, seq: u64, fields: &str) {
    open(buf, kind);
    let _ = write!(buf, ",\"sequence_number\":{seq},{fields}}}\n\n");
}

/// `response.completed`, or `response.incomplete` when the output budget ran out, with usage.
pub(super) fn completed(buf: &mut BytesMut, seq: u64, t: &TokenEvent<'_>, finish: &wire::Finish) {
    let (kind, status, details) = match finish.reason {
        FinishReason::Length => (
            "response.incomplete",
            "incomplete",
            r#"{"reason":"max_output_tokens"}"#,
        ),
        FinishReason::Stop => ("response.completed", "completed", "null"),
    };
    let (p, c) = (finish.prompt, finish.completion);
    let mut usage = format!(r#"{{"input_tokens":{p}"#);
    if t.usage_details {
        let _ = write!(
            usage,
            r#","input_tokens_details":{{"cached_tokens":{}}}"#,
            finish.cached
        );
    }
    let _ = write!(
        usage,
        r#","output_tokens":{c},"output_tokens_details":{{"reasoning_tokens":{}}},"total_tokens":{}}}"#,
        finish.reasoning,
        p + c
    );
    let response = format!(
        r#""response":{{"id":"resp_sim-{}","object":"response","created_at":{},"model":{},"status":"{status}","incomplete_details":{details},"output":[],"usage":{usage}}}"#,
        t.id, t.created, t.model_json
    );
    event(buf, kind, seq, &response);
}
