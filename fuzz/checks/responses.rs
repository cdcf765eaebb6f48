//! The promises the Responses API's decoders keep on any input, checked by the `responses`
//! fuzz target on every input it makes and by `tests/library/responses_corpus.rs` on its
//! corpus; one copy, included by both with `#[path]`. Neither decoder panics, on any bytes:
//! a streamed event (`decode_event`) and a whole answer (`decode_generated`, `stream #false`).
//! What they give is usable: its text decodes; an event with output has text; a whole
//! answer's id is short enough to send back, and an answer is output. And the two agree: a
//! whole answer that decodes, wrapped as a stream's `response.completed`, ends the stream with
//! the same usage.

use infermeter_core::protocol::{Api, Event};

/// Every check, on `input` as a streamed event's data (when UTF-8) and as a whole answer.
pub fn check(input: &[u8]) {
    let kind = Api::RESPONSES.kind();
    if let Ok(text) = std::str::from_utf8(input) {
        check_event(text);
    }
    let Ok(whole) = kind.decode_generated(input) else {
        return;
    };
    assert!(
        whole
            .id
            .as_ref()
            .is_none_or(|id| !id.is_empty() && id.len() <= 256)
    );
    assert!(!whole.has_answer() || whole.has_output());
    assert!(
        whole.finish_reason.is_some(),
        "a decoded answer says how it ended"
    );
    let mut text = String::new();
    whole.push_text(&mut text);
    // The same object as the stream's last event: the same usage.
    let Ok(object) = std::str::from_utf8(input) else {
        return;
    };
    let event = format!(r#"{{"type":"response.completed","response":{object}}}"#);
    match kind.decode_event(&event) {
        Ok(Event::Last(info)) => assert_eq!(info.usage, whole.usage, "{event}"),
        other => panic!("a whole answer that decodes ends no stream: {other:?}"),
    }
}

/// One event's data: no panic, and what it carries decodes.
fn check_event(text: &str) {
    let Ok(event) = Api::RESPONSES.kind().decode_event(text) else {
        return;
    };
    let info = match event {
        Event::Chunk(info) | Event::Last(info) => info,
        Event::Done => panic!("the Responses API has no [DONE] marker"),
    };
    let mut out = String::new();
    for s in [&info.answer, &info.reasoning].into_iter().flatten() {
        s.push_to(&mut out);
    }
    for call in info.tool_calls() {
        for s in [&call.name, &call.arguments].into_iter().flatten() {
            s.push_to(&mut out);
        }
    }
    if info.has_output() {
        assert!(!out.is_empty(), "output without text: {text}");
    }
}
