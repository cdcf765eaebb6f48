//! A tool-calling answer on the Responses API (`tool-calls #true`, a request offering
//! `tools`): one `function_call` output item, streamed as OpenAI and vLLM stream one —
//! `response.output_item.added` with the item's `call_id` (`call-sim-N`, as chat's) and
//! `name`, then `response.function_call_arguments.delta` per token (the arguments' JSON text,
//! `{"text":"…"}` as chat's), then `response.function_call_arguments.done`,
//! `response.output_item.done` and `response.completed` with usage.

use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};

use super::events::{completed, event, open};
use crate::tools::{ARGUMENTS_CLOSE, ARGUMENTS_OPEN};
use crate::wire::{EventStream, TokenEvent};

/// The Responses API's function call stream.
pub(crate) struct ResponsesTool;

impl EventStream for ResponsesTool {
    fn token(&self, buf: &mut BytesMut, t: &TokenEvent<'_>) {
        let name = t.tool.unwrap_or("\"\"");
        let seq = 2 + t.index;
        if t.index == 0 {
            let head = format!(
                r#""response":{{"id":"resp_sim-{}","object":"response","created_at":{},"model":{},"status":"in_progress","output":[],"usage":null}}"#,
                t.id, t.created, t.model_json
            );
            event(buf, "response.created", 0, &head);
            let item = item(t.id, name, "in_progress");
            event(
                buf,
                "response.output_item.added",
                1,
                &format!(r#""output_index":0,"item":{item}"#),
            );
        }
        open(buf, "response.function_call_arguments.delta");
        let _ = write!(
            buf,
            r#","item_id":"fc_sim-{}","output_index":0,"sequence_number":{seq},"delta":""#,
            t.id
        );
        if t.index == 0 {
            buf.put_slice(ARGUMENTS_OPEN);
        }
        buf.put_slice(t.word.as_bytes());
        if t.finish.is_some() {
            buf.put_slice(ARGUMENTS_CLOSE);
        }
        buf.put_slice(b"\"}\n\n");
        if let Some(finish) = t.finish {
            let id = t.id;
            event(
                buf,
                "response.function_call_arguments.done",
                seq + 1,
                &format!(r#""item_id":"fc_sim-{id}","output_index":0"#),
            );
            let item = item(id, name, "completed");
            event(
                buf,
                "response.output_item.done",
                seq + 2,
                &format!(r#""output_index":0,"item":{item}"#),
            );
            completed(buf, seq + 3, t, finish);
        }
    }

    fn garbage(&self, buf: &mut BytesMut) {
        open(buf, "response.function_call_arguments.delta");
        buf.put_slice(b",\"delta\":<<garbage\n\n");
    }
}

/// The function call item (`name` a JSON string).
fn item(id: u64, name: &str, status: &str) -> String {
    format!(
        r#"{{"type":"function_call","id":"fc_sim-{id}","call_id":"call-sim-{id}","name":{name},"arguments":"","status":"{status}"}}"#
    )
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;

    use crate::protocol::{Api, Event};
    use crate::wire::{Finish, FinishReason, TokenEvent};

    use super::*;

    #[test]
    fn a_function_call_streams_its_id_name_and_json_arguments() {
        let end = Finish {
            reason: FinishReason::Stop,
            prompt: 7,
            completion: 2,
            cached: 0,
            reasoning: 0,
            timings: None,
        };
        let mut buf = BytesMut::new();
        for (i, w) in [" hot", " day"].iter().enumerate() {
            let t = TokenEvent {
                id: 4,
                created: 1,
                model_json: "\"m\"",
                word: w,
                index: i as u64,
                reasoning: 0,
                finish: (i == 1).then_some(&end),
                usage_details: false,
                tool: Some("\"get\""),
            };
            ResponsesTool.token(&mut buf, &t);
        }
        let text = std::str::from_utf8(&buf).unwrap();
        let (mut id, mut name, mut args, mut last) = (None, None, String::new(), false);
        for data in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
            match Api::RESPONSES.kind().decode_event(data).unwrap() {
                Event::Chunk(c) => {
                    if let Some(i) = &c.tool_call.id {
                        id = Some(i.decode().into_owned());
                        name = c.tool_call.name.as_ref().map(|n| n.decode().into_owned());
                    }
                    if let Some(a) = &c.tool_call.arguments {
                        a.push_to(&mut args);
                    }
                }
                Event::Last(_) => last = true,
                Event::Done => {}
            }
        }
        assert_eq!(id.as_deref(), Some("call-sim-4"));
        assert_eq!(name.as_deref(), Some("get"));
        let v: serde_json::Value = serde_json::from_str(&args).unwrap();
        assert_eq!(v["text"], " hot day");
        assert!(last, "the stream ends with response.completed");
    }
}
