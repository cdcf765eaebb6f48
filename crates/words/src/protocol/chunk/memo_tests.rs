//! Decoding in place with a stream's memo ([`ChunkMemo`]) held to decoding by value.

use super::super::Api;
use super::*;

/// Chunks that share their opening (`P`) or their shape with other answers, and others: read
/// whole, given up after filling some fields (a repeated key), left to serde_json, `[DONE]`,
/// invalid.
fn cases() -> Vec<String> {
    const P: &str = r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","#;
    let shared = [
        r#""choices":[{"index":0,"delta":{"content":"a"}}]}"#,
        r#""choices":[{"index":0,"delta":{"content":"bcd efg"}}]}"#,
        r#""choices":[{"index":0,"delta":{"content":""}}]}"#,
        r#""choices":[{"index":0,"delta":{"content":"q\"u\u00e9"}}]}"#,
        r#""choices":[{"index":0,"delta":{"content":"bad\q"}}]}"#,
        "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ctl\u{1}\"}}]}",
        r#""choices":[{"index":0,"delta":{"content":"a"},"x":"}]}"}]}"#,
        r#""choices":[{"index":0,"delta":{"content":"a"}}]}  "#,
        r#""choices":[{"index":0,"delta":{"content":"a"}}]"#,
        r#""choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}"#,
        r#""choices":[{"index":0,"delta":{"content":"c"},"finish_reason":"stop"}]}"#,
        r#""choices":[{"index":0,"delta":{"content":"a","reasoning":"r"}}]}"#,
        r#""choices":[{"index":0,"delta":{"content":"b","reasoning":"r"}}]}"#,
        r#""choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#""choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
        r#" "choices":[]}"#,
        r#""choices":[{"delta":{"content":"a","content":"b"}}]}"#,
        r#""choices":["#,
        r#""choices":[]} x"#,
        r#""choices":[],"choices":[]}"#,
        r#""error":{"message":"x"}}"#,
        r#""usage":null,"choices":[{"delta":{"content":"u"}}]}"#,
        r#""choices":[{"text":"t"}],"usage":{"prompt_tokens":3}}"#,
        r#""choices":[{"text":"s"}],"usage":{"prompt_tokens":3}}"#,
        r#""choices":1}"#,
        "}",
    ];
    let mut all: Vec<String> = shared.iter().map(|s| format!("{P}{s}")).collect();
    all.extend(
        [
            r#"{"id":"x","object":"chat.completion.chunk","created":12,"model":"m","choices":[]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"c","function":{"name":"f"}},{"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],"timings":{"prompt_n":3}}"#,
            r#"{"choices":[{"delta":{"content":"yz"}}],"timings":{"prompt_n":3}}"#,
            r#"{"error":{"message":"no"}}"#,
            r#"{}"#,
            "[DONE]",
            "not json",
        ]
        .map(String::from),
    );
    all
}

/// `data` decoded in place after `before` (both with one memo) is `data` decoded by value.
fn same(api: Api, before: &[&str], data: &str) {
    let mut memo = ChunkMemo::default();
    for b in before {
        let mut earlier = ChunkInfo::default();
        let _ = api.kind().decode_event_into(b, &mut earlier, &mut memo);
    }
    let mut info = ChunkInfo::default();
    let into = api.kind().decode_event_into(data, &mut info, &mut memo);
    match (api.kind().decode_event(data), into) {
        (Ok(Event::Chunk(c)), Ok(EventKind::Chunk)) | (Ok(Event::Last(c)), Ok(EventKind::Last)) => {
            assert_eq!(c, info, "{data} after {before:?}")
        }
        (Ok(Event::Done), Ok(EventKind::Done)) | (Err(_), Err(_)) => {}
        (by_value, in_place) => {
            panic!("{data} after {before:?}: {by_value:?}, in place {in_place:?}")
        }
    }
}

/// Decoding in place gives what decoding by value gives, for every API that streams chunks,
/// whatever two chunks came before it in the stream.
#[test]
fn in_place_decoding_is_decoding_by_value() {
    let cases = cases();
    for api in [Api::CHAT, Api::COMPLETIONS, Api::RESPONSES] {
        for a in &cases {
            for b in &cases {
                same(api, &[a], b);
                for c in &cases {
                    same(api, &[a, b], c);
                }
            }
        }
    }
}

/// The opening and the shape are remembered, and used.
#[test]
fn an_opening_and_a_shape_are_remembered() {
    let cases = cases();
    let mut memo = ChunkMemo::default();
    let mut info = ChunkInfo::default();
    assert!(scan::memo::scan_with(&cases[0], &mut info, &mut memo).is_some());
    // Up to the quote of `"choices"`.
    assert_eq!(memo.prefix_len(), 67);
    assert!(memo.has_shape());
    let mut info = ChunkInfo::default();
    assert!(scan::memo::scan_with(&cases[1], &mut info, &mut memo).is_some());
    assert_eq!(
        info.answer.map(|a| a.decode().into_owned()).as_deref(),
        Some("bcd efg")
    );
    // Reasoning is a second string: no shape.
    let mut info = ChunkInfo::default();
    assert!(scan::memo::scan_with(&cases[11], &mut info, &mut memo).is_some());
    assert!(!memo.has_shape());
}
