use std::collections::BTreeMap;

use super::*;
use serde_json::Value;

use crate::protocol::{ReasoningEffort, Usage};

fn chunk(data: &str) -> ChunkInfo<'_> {
    match decode(data) {
        Ok(Event::Chunk(c)) => c,
        other => panic!("{data}: {other:?}"),
    }
}

fn last(data: &str) -> ChunkInfo<'_> {
    match decode(data) {
        Ok(Event::Last(c)) => c,
        other => panic!("{data}: {other:?}"),
    }
}

fn text(s: &Option<JsonStr<'_>>) -> String {
    s.as_ref()
        .map(|s| s.decode().into_owned())
        .unwrap_or_default()
}

/// vLLM's stream, captured: deltas are answer text in order, the last event ends the stream
/// with usage and `incomplete_details.reason` `max_output_tokens`, and the SSE `event:`
/// lines name the same types the data does.
#[test]
fn the_vllm_transcript() {
    const BODY: &str = include_str!("../../../../../tests/data/vllm-responses-stream.sse");
    let mut answer = String::new();
    let mut end = None;
    for event in BODY.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let name = event
            .lines()
            .find_map(|l| l.strip_prefix("event: "))
            .unwrap();
        let data = event
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap();
        assert!(data.contains(&format!("\"type\":\"{name}\"")), "{event}");
        assert!(end.is_none(), "an event after the last");
        match decode(data).unwrap() {
            Event::Chunk(c) => {
                assert!(!c.error && c.usage.is_none() && c.reasoning.is_none());
                if let Some(a) = &c.answer {
                    a.push_to(&mut answer);
                }
            }
            Event::Last(c) => end = Some(c),
            Event::Done => panic!("no [DONE] in this grammar"),
        }
    }
    assert_eq!(answer, " SSLreadable follow**** successpyenv");
    let end = end.expect("response.completed");
    assert_eq!(end.finish_reason, Some(FinishReason::Length));
    assert_eq!(
        end.usage,
        Some(Usage {
            prompt_tokens: 14,
            completion_tokens: 6,
            cached_tokens: Some(0),
            reasoning_tokens: Some(0),
        })
    );
    assert!(!end.has_output() && !end.error);
}

#[test]
fn deltas_borrow_from_the_event() {
    let c =
        chunk(r#"{"type":"response.output_text.delta","delta":"a \"q\"\n","sequence_number":4}"#);
    let a = c.answer.as_ref().unwrap();
    assert_eq!(
        a.raw(),
        Some(r#"a \"q\"\n"#),
        "escapes stay until asked for"
    );
    assert_eq!(a.decode(), "a \"q\"\n");
    assert!(c.has_answer());
    let r = chunk(r#"{"delta":"think","type":"response.reasoning_text.delta"}"#);
    assert_eq!(text(&r.reasoning), "think");
    assert!(r.has_output() && !r.has_answer());
    let s = chunk(r#"{"type":"response.reasoning_summary_text.delta","delta":"\u00e9t\u00e9"}"#);
    assert_eq!(text(&s.reasoning), "été");
    // serde_json lets a lone surrogate escape through a raw value: it decodes as U+FFFD.
    let lone = chunk(r#"{"type":"response.output_text.delta","delta":"a\ud800"}"#);
    assert_eq!(text(&lone.answer), "a\u{fffd}");
    // An empty or null delta is no output; a delta with no type of ours is skipped.
    assert!(!chunk(r#"{"type":"response.output_text.delta","delta":""}"#).has_output());
    assert!(!chunk(r#"{"type":"response.output_text.delta","delta":null}"#).has_output());
    assert!(!chunk(r#"{"type":"response.output_text.delta"}"#).has_output());
    let other = r#"{"type":"response.web_search_call.searching","delta":"{}"}"#;
    assert_eq!(chunk(other), ChunkInfo::default());
}

#[test]
fn unknown_and_bookkeeping_events_carry_nothing() {
    for data in [
        r#"{"type":"response.created","response":{"status":"in_progress","usage":null}}"#,
        r#"{"type":"response.in_progress","response":7}"#,
        r#"{"type":"response.output_text.done","text":"whole answer"}"#,
        r#"{"type":"response.something_new","delta":5,"x":[{"y":null}]}"#,
        r#"{"type":"keepalive"}"#,
    ] {
        assert_eq!(chunk(data), ChunkInfo::default(), "{data}");
    }
}

#[test]
fn completion_finish_reasons() {
    let reason = |data: &str| last(data).finish_reason;
    let done = r#"{"type":"response.completed","response":{"status":"completed","usage":null}}"#;
    assert_eq!(reason(done), Some(FinishReason::Stop));
    assert_eq!(last(done).usage, None, "usage null is no usage");
    let no_status = r#"{"type":"response.completed","response":{}}"#;
    assert_eq!(reason(no_status), Some(FinishReason::Stop));
    let no_response = r#"{"type":"response.completed"}"#;
    assert_eq!(reason(no_response), Some(FinishReason::Stop));
    assert_eq!(last(no_response).usage, None, "missing usage");
    let budget = r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#;
    assert_eq!(reason(budget), Some(FinishReason::Length));
    let filtered = r#"{"type":"response.incomplete","response":{"incomplete_details":{"reason":"content_filter"}}}"#;
    assert_eq!(reason(filtered), Some(FinishReason::Other));
    let odd = r#"{"type":"response.incomplete","response":{"incomplete_details":[1]}}"#;
    assert_eq!(reason(odd), Some(FinishReason::Other));
    let cancelled = r#"{"type":"response.completed","response":{"status":"cancelled"}}"#;
    assert_eq!(reason(cancelled), Some(FinishReason::Other));
    let failed = r#"{"type":"response.completed","response":{"status":"failed"}}"#;
    assert!(last(failed).error);
}

#[test]
fn usage_counts_and_details() {
    let usage = |u: &str| {
        let data = format!(r#"{{"type":"response.completed","response":{{"usage":{u}}}}}"#);
        decode(&data).map(|e| match e {
            Event::Last(c) => c.usage,
            other => panic!("{other:?}"),
        })
    };
    let full = r#"{"input_tokens":30,"input_tokens_details":{"cached_tokens":16},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":40},"total_tokens":80}"#;
    assert_eq!(
        usage(full).unwrap(),
        Some(Usage {
            prompt_tokens: 30,
            completion_tokens: 50,
            cached_tokens: Some(16),
            reasoning_tokens: Some(40),
        })
    );
    assert_eq!(usage("{}").unwrap(), Some(Usage::default()));
    // Details of another type are absent, never a failed request.
    for details in [
        "null",
        "[]",
        "4",
        r#"{"reasoning_tokens":"4"}"#,
        r#"{"reasoning_tokens":-1}"#,
    ] {
        let u = format!(r#"{{"output_tokens":3,"output_tokens_details":{details}}}"#);
        let got = usage(&u).unwrap().unwrap();
        assert_eq!(
            (got.completion_tokens, got.reasoning_tokens),
            (3, None),
            "{details}"
        );
    }
    // A count of another type, or usage of another type, is malformed.
    for bad in [
        r#"{"output_tokens":"6"}"#,
        r#"{"input_tokens":-1}"#,
        r#"{"output_tokens":1.5}"#,
        "[]",
        "7",
    ] {
        assert!(usage(bad).is_err(), "{bad}");
    }
}

#[test]
fn errors_in_the_stream() {
    let e = chunk(r#"{"type":"error","code":"server_error","message":"boom","sequence_number":3}"#);
    assert!(e.error && !e.has_output());
    let f = chunk(
        r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"x","message":"y"}}}"#,
    );
    assert!(f.error);
}

/// Truncated JSON, wrong types, other shapes: a malformed event (the request fails as
/// `malformed`), never a panic and never output.
#[test]
fn hostile_events() {
    for data in [
        "",
        "{",
        r#"{"type":"response.output_text.delta","delta":"cut"#,
        r#"{"type":"response.output_text.delta","delta":"a\q"}"#,
        r#"{"type":"response.output_text.delta","delta":5}"#,
        r#"{"type":"response.output_text.delta","delta":["a"]}"#,
        r#"{"type":"response.output_text.delta","delta":{"text":"a"}}"#,
        r#"{"type":7,"delta":"a"}"#,
        r#"{"type":null}"#,
        r#"{"delta":"no type"}"#,
        r#"{"type":"response.output_text.delta","type":"error"}"#,
        r#"{"type":"response.completed","response":"done"}"#,
        r#"{"type":"response.completed","response":{"usage":{"output_tokens":"many"}}}"#,
        r#"["response.output_text.delta"]"#,
        "[DONE]",
        "null",
        r#""text""#,
    ] {
        assert!(decode(data).is_err(), "{data:?} decoded");
    }
}

#[test]
fn a_huge_delta_is_one_delta() {
    let big = "x".repeat(4 << 20);
    let data = format!(r#"{{"type":"response.output_text.delta","delta":"{big}"}}"#);
    let c = chunk(&data);
    assert_eq!(
        c.answer.as_ref().unwrap().raw().map(str::len),
        Some(big.len())
    );
}

fn body(prompt: PromptRef<'_>, effort: Option<ReasoningEffort>, ignore_eos: bool) -> Value {
    let extra = BTreeMap::from([("temperature".to_string(), Value::from(0.0))]);
    let item = BTreeMap::from([("temperature".to_string(), Value::from(0.5))]);
    let mut out = Vec::new();
    Responses.write_body(
        &mut out,
        &Request {
            model: "m\"1",
            prompt,
            max_tokens: 64,
            ignore_eos,
            stream: true,
            reasoning_effort: effort,
            extra: &extra,
            item: Some(&item),
            images: &[],
            batch: &[],
        },
    );
    serde_json::from_slice(&out).expect("valid JSON")
}

#[test]
fn request_bodies() {
    let b = body(PromptRef::Text("say \"hi\"\n"), None, false);
    assert_eq!(
        b,
        serde_json::json!({"model": "m\"1", "input": "say \"hi\"\n", "max_output_tokens": 64,
            "stream": true, "temperature": 0.5})
    );
    let messages = [
        Message {
            role: "system",
            content: "be brief",
            tool: None,
        },
        Message {
            role: "user",
            content: "q1",
            tool: None,
        },
        Message {
            role: "assistant",
            content: "a1",
            tool: None,
        },
        Message {
            role: "user",
            content: "q2",
            tool: None,
        },
    ];
    let b = body(
        PromptRef::Messages(&messages),
        Some(ReasoningEffort::High),
        true,
    );
    assert_eq!(b["instructions"], "be brief");
    assert_eq!(
        b["input"],
        serde_json::json!([{"role": "user", "content": "q1"},
            {"role": "assistant", "content": "a1"}, {"role": "user", "content": "q2"}])
    );
    assert_eq!(b["reasoning"], serde_json::json!({"effort": "high"}));
    assert_eq!(b["ignore_eos"], true);
    assert!(b.get("max_tokens").is_none() && b.get("stream_options").is_none());
    // Without a system prompt, every message is an input item.
    let b = body(PromptRef::Messages(&messages[1..2]), None, false);
    assert!(b.get("instructions").is_none());
    assert_eq!(b["input"][0]["content"], "q1");
}

#[test]
fn function_call_arguments_stream_as_answer_output() {
    let c = chunk(
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"city\":"}"#,
    );
    assert!(c.has_answer() && c.has_output());
    assert_eq!(text(&c.tool_call.arguments), r#"{"city":"#);
    assert!(decode(r#"{"type":"response.function_call_arguments.delta","delta":5}"#).is_err());
}

/// The response's id: read from `response.created` and `response.completed` (a later turn
/// names it), borrowed; not a string, or in a broken `response.created`, is no id.
#[test]
fn the_response_id_is_read_where_it_is_given() {
    let created = chunk(
        r#"{"type":"response.created","response":{"id":"resp_1\u0007","status":"in_progress"}}"#,
    );
    assert_eq!(text(&created.response_id), "resp_1\u{7}");
    assert!(!created.has_output());
    let done =
        last(r#"{"type":"response.completed","response":{"id":"resp_2","status":"completed"}}"#);
    assert_eq!(text(&done.response_id), "resp_2");
    assert_eq!(done.finish_reason, Some(FinishReason::Stop));
    for no_id in [
        r#"{"type":"response.created","response":{"id":7}}"#,
        r#"{"type":"response.created","response":{"status":"in_progress"}}"#,
        r#"{"type":"response.created","response":[1]}"#,
        r#"{"type":"response.created"}"#,
        r#"{"type":"response.output_text.delta","delta":"x","response":{"id":"resp_3"}}"#,
    ] {
        assert!(chunk(no_id).response_id.is_none(), "{no_id}");
    }
}
