//! Unit tests of chunk decoding: every shape servers send, and the scanner held to the
//! serde_json reference on each.

use super::*;

/// Decodes a chunk the scanner must handle itself, and checks it against the reference.
fn fast(data: &str) -> ChunkInfo<'_> {
    let scanned = scan_chunk(data).unwrap_or_else(|| panic!("scanner gave up on {data}"));
    let reference = parse_chunk_value(data).expect("reference decodes it");
    assert_eq!(scanned, reference, "{data}");
    scanned
}

/// Decodes a valid chunk the scanner leaves to serde_json.
fn fallback(data: &str) -> ChunkInfo<'_> {
    assert!(
        scan_chunk(data).is_none(),
        "scanner should give up on {data}"
    );
    parse_chunk(data).expect("serde_json decodes it")
}

fn invalid(data: &str) {
    assert!(scan_chunk(data).is_none(), "scanner accepted {data:?}");
    assert!(parse_chunk(data).is_err(), "accepted {data:?}");
}

fn text(s: &Option<JsonStr<'_>>) -> Option<String> {
    s.as_ref().map(|s| s.decode().into_owned())
}

#[test]
fn role_only_chunk_is_not_output() {
    let c = fast(
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"}"#,
    );
    assert!(!c.has_output());
    let c = fast(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#);
    assert!(!c.has_output());
    assert_eq!(text(&c.answer).as_deref(), Some(""));
}

#[test]
fn chat_completions_and_reasoning() {
    let c = fast(r#"{"choices":[{"delta":{"content":"hi"}}]}"#);
    assert_eq!(text(&c.answer).as_deref(), Some("hi"));
    assert!(c.has_answer() && c.has_output());
    let c = fast(r#"{"choices":[{"text":" x","index":0}],"object":"text_completion"}"#);
    assert_eq!(text(&c.answer).as_deref(), Some(" x"));
    let c = fast(r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#);
    assert!(c.has_output() && !c.has_answer());
    assert_eq!(text(&c.reasoning).as_deref(), Some("hmm"));
    let c = fast(r#"{"choices":[{"delta":{"reasoning":"hmm"}}]}"#);
    assert!(c.has_output() && !c.has_answer());
    // `reasoning_content` wins over `reasoning`, `delta.content` over `text`, whatever the
    // order; a null one falls through to the other.
    let c = fast(
        r#"{"choices":[{"text":"t","delta":{"reasoning":"b","content":"a","reasoning_content":"r"}}]}"#,
    );
    assert_eq!(text(&c.answer).as_deref(), Some("a"));
    assert_eq!(text(&c.reasoning).as_deref(), Some("r"));
    let c = fast(
        r#"{"choices":[{"delta":{"content":null,"reasoning_content":null,"reasoning":"b"},"text":"t"}]}"#,
    );
    assert_eq!(text(&c.answer).as_deref(), Some("t"));
    assert_eq!(text(&c.reasoning).as_deref(), Some("b"));
    // Empty reasoning is not output either.
    assert!(!fast(r#"{"choices":[{"delta":{"reasoning_content":""}}]}"#).has_output());
}

#[test]
fn usage_only_chunk_with_empty_choices() {
    let c = fast(
        r#"{"choices":[],"usage":{"completion_tokens":8,"prompt_tokens":23,"total_tokens":31}}"#,
    );
    assert!(!c.has_output() && c.answer.is_none());
    assert_eq!(
        c.usage,
        Some(Usage {
            prompt_tokens: 23,
            completion_tokens: 8,
            cached_tokens: None,
            reasoning_tokens: None,
        })
    );
    // Absent counts are 0; `usage: null` (OpenAI's chunks before the last) is no usage.
    let c = fast(r#"{"usage":{}}"#);
    assert_eq!(c.usage, Some(Usage::default()));
    assert_eq!(fast(r#"{"choices":null,"usage":null}"#).usage, None);
    assert_eq!(fast("{}"), ChunkInfo::default());
}

#[test]
fn cached_tokens() {
    let usage = |data: &str| fast(data).usage.expect("usage");
    let c = usage(r#"{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":4}}}"#);
    assert_eq!((c.prompt_tokens, c.cached_tokens), (9, Some(4)));
    // Order, other details, a null or odd-typed details object or count: no cached count,
    // and never a failed request.
    let c = usage(
        r#"{"usage":{"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":7},"prompt_tokens":9}}"#,
    );
    assert_eq!(c.cached_tokens, Some(7));
    for details in [
        "null",
        "{}",
        r#"{"cached_tokens":null}"#,
        r#"{"cached_tokens":"4"}"#,
        r#"{"cached_tokens":-0}"#,
        r#"{"cached_tokens":4.0}"#,
        r#"{"cached_tokens":1e3}"#,
        "[4]",
        "4",
    ] {
        let data =
            format!(r#"{{"usage":{{"prompt_tokens":9,"prompt_tokens_details":{details}}}}}"#);
        assert_eq!(usage(&data).cached_tokens, None, "{details}");
    }
}

#[test]
fn reasoning_tokens() {
    let usage = |data: &str| fast(data).usage.expect("usage");
    let c = usage(
        r#"{"usage":{"completion_tokens":9,"completion_tokens_details":{"accepted_prediction_tokens":0,"reasoning_tokens":6},"prompt_tokens_details":{"cached_tokens":2}}}"#,
    );
    assert_eq!((c.reasoning_tokens, c.cached_tokens), (Some(6), Some(2)));
    for details in [
        "null",
        "{}",
        r#"{"reasoning_tokens":"6"}"#,
        r#"{"reasoning_tokens":-1}"#,
        "[6]",
    ] {
        let data = format!(r#"{{"usage":{{"completion_tokens_details":{details}}}}}"#);
        assert_eq!(usage(&data).reasoning_tokens, None, "{details}");
        assert_eq!(
            parse_chunk_value(&data)
                .unwrap()
                .usage
                .unwrap()
                .reasoning_tokens,
            None
        );
    }
}

#[test]
fn finish_reasons() {
    let reason = |r: &str| {
        let data = format!(r#"{{"choices":[{{"delta":{{}},"finish_reason":{r}}}]}}"#);
        let c = fast(&data);
        assert!(!c.has_output(), "{r}");
        c.finish_reason
    };
    assert_eq!(reason(r#""stop""#), Some(FinishReason::Stop));
    assert_eq!(reason(r#""length""#), Some(FinishReason::Length));
    assert_eq!(reason(r#""tool_calls""#), Some(FinishReason::ToolCalls));
    assert_eq!(reason(r#""""#), Some(FinishReason::Other));
    assert_eq!(reason(r#""st\u006fp""#), Some(FinishReason::Stop));
    assert_eq!(reason("null"), None);
    assert_eq!(reason("7"), Some(FinishReason::Other));
    assert_eq!(reason(r#"{"type":"stop"}"#), Some(FinishReason::Other));
    // The simulator's last token carries text and its reason together.
    let c =
        fast(r#"{"choices":[{"index":0,"text":"end","logprobs":null,"finish_reason":"length"}]}"#);
    assert!(c.has_answer());
    assert_eq!(c.finish_reason, Some(FinishReason::Length));
    // Only the first choice's reason counts.
    let c = fast(r#"{"choices":[{"delta":{}},{"delta":{},"finish_reason":"stop"}]}"#);
    assert_eq!(c.finish_reason, None);
}

#[test]
fn llama_cpp_timings() {
    let c = fast(
        r#"{"choices":[],"usage":{"completion_tokens":8,"prompt_tokens":23,"total_tokens":31,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_n":23,"prompt_ms":24.63,"prompt_per_token_ms":1.0708695652173912,"prompt_per_second":933.8205440519693,"predicted_n":8,"predicted_ms":30.963,"predicted_per_token_ms":4.423285714285714,"predicted_per_second":226.07628459774568}}"#,
    );
    assert_eq!(
        c.timings,
        Some(ServerTimings {
            prompt_n: Some(23),
            prompt_ms: Some(24.63),
            predicted_n: Some(8),
            predicted_ms: Some(30.963),
            cache_n: Some(0),
            ..ServerTimings::default()
        })
    );
    assert_eq!(c.usage.and_then(|u| u.cached_tokens), Some(0));
    // Integers are fine as milliseconds; odd types leave a field absent.
    let c =
        fast(r#"{"timings":{"prompt_ms":25,"predicted_ms":-0.5e1,"prompt_n":"23","cache_n":1.0}}"#);
    assert_eq!(
        c.timings,
        Some(ServerTimings {
            prompt_ms: Some(25.0),
            predicted_ms: Some(-5.0),
            ..ServerTimings::default()
        })
    );
    // A speculative llama-server adds its draft counters; a negative one is no count.
    let c = fast(r#"{"timings":{"predicted_n":16,"draft_n":12,"draft_n_accepted":9}}"#);
    let t = c.timings.unwrap();
    assert_eq!((t.draft_n, t.draft_n_accepted), (Some(12), Some(9)));
    let c = fast(r#"{"timings":{"draft_n":-3,"draft_n_accepted":1.5}}"#);
    assert_eq!(c.timings.unwrap(), ServerTimings::default());
    assert_eq!(fast(r#"{"timings":null}"#).timings, None);
    assert_eq!(fast(r#"{"timings":[1,2]}"#).timings, None);
}

#[test]
fn in_stream_error() {
    assert!(fast(r#"{"error":{"message":"boom","code":500}}"#).error);
    assert!(fast(r#"{"error":"overloaded"}"#).error);
    assert!(fast(r#"{"error":false}"#).error);
    assert!(!fast(r#"{"error":null,"choices":[]}"#).error);
    assert!(!fast(r#"{"choices":[{"delta":{"error":"not top level"}}]}"#).error);
}

#[test]
fn escapes_decode_like_serde_json() {
    for raw in [
        r#"a\"b\\c\/d"#,
        r#"\b\f\n\r\t"#,
        r#"caf\u00e9 \u65E5\u672c"#,
        r#"\ud83d\ude00 and \uD834\uDD1E"#,
        r#"\u0000\u001f\u007F"#,
        r#"x\\u0041"#,
        r#"{}[]:,"#,
        "already é 日本 😀",
    ] {
        let data = format!(r#"{{"choices":[{{"delta":{{"content":"{raw}"}}}}]}}"#);
        let c = fast(&data);
        let answer = c.answer.as_ref().expect("answer");
        let expected: String = serde_json::from_str(&format!("\"{raw}\"")).unwrap();
        assert_eq!(answer.decode(), expected, "{raw}");
        assert_eq!(answer.raw(), Some(raw));
        let mut out = String::from("prefix:");
        answer.push_to(&mut out);
        assert_eq!(out, format!("prefix:{expected}"));
        assert_eq!(answer.is_empty(), expected.is_empty());
    }
}

#[test]
fn invalid_strings_are_errors() {
    for raw in [
        r#"\x"#,
        r#"\u12"#,
        r#"\u12g4"#,
        r#"\ud800"#,
        r#"\ud800x"#,
        r#"\ud800\n"#,
        r#"\ud800\ud800"#,
        r#"\udc00"#,
        r#"\uDFFF\uD800"#,
        "tab\there",
        "nul\u{0}",
        "\\",
    ] {
        // In a field the scanner reads, and in one it skips: serde_json checks both.
        invalid(&format!(
            r#"{{"choices":[{{"delta":{{"content":"{raw}"}}}}]}}"#
        ));
        invalid(&format!(r#"{{"id":"{raw}","choices":[]}}"#));
    }
}

#[test]
fn keys_in_any_order_and_whitespace_everywhere() {
    let c = fast(
        r#"{"usage":{"completion_tokens":2,"prompt_tokens":3},"object":"chat.completion.chunk","choices":[{"finish_reason":"stop","delta":{"content":"x","role":"assistant"},"index":0}],"id":"1"}"#,
    );
    assert_eq!(text(&c.answer).as_deref(), Some("x"));
    assert_eq!(c.finish_reason, Some(FinishReason::Stop));
    assert_eq!(c.usage.map(|u| u.completion_tokens), Some(2));
    let spaced = fast(
        " \t\r\n{ \"usage\" :\n{ \"completion_tokens\" : 2 ,\"prompt_tokens\":3 } , \"object\" : \"chat.completion.chunk\" ,\r\n\"choices\" : [ { \"finish_reason\" : \"stop\" , \"delta\" : { \"content\" : \"x\" , \"role\" : \"assistant\" } , \"index\" : 0 } ] , \"id\" : \"1\" } \n",
    );
    assert_eq!(spaced, c);
}

#[test]
fn nested_unknown_values_are_skipped() {
    let c = fast(
        r#"{"meta":{"a":[1,{"b":"}]\"{["},[[],{}],"]"],"c":{"d":{"e":null}}},"choices":[{"logprobs":{"content":[{"token":"\"}","bytes":[34,125],"top_logprobs":[]}]},"delta":{"tool_calls":[{"function":{"arguments":"{\"content\":\"no\"}"}}],"content":"yes"}}],"x":[true,false,null,"a\"b"]}"#,
    );
    assert_eq!(text(&c.answer).as_deref(), Some("yes"));
    assert_eq!(
        text(&c.tool_call.arguments).as_deref(),
        Some(r#"{"content":"no"}"#)
    );
    // Names of fields we read, met in other places, are not read.
    let c =
        fast(r#"{"x":{"choices":[{"delta":{"content":"no"}}],"usage":{"prompt_tokens":"bad"}}}"#);
    assert_eq!(c, ChunkInfo::default());
}

#[test]
fn only_the_first_choice_counts() {
    let c = fast(
        r#"{"choices":[{"index":0,"delta":{"role":"assistant"}},{"index":1,"delta":{"content":"second"}},{"index":2,"text":5}]}"#,
    );
    assert!(!c.has_output());
    // The other elements are still JSON to validate, of any type.
    let c = fast(r#"{"choices":[{"text":"a"},null,1,"s",[],{}]}"#);
    assert_eq!(text(&c.answer).as_deref(), Some("a"));
    invalid(r#"{"choices":[{"text":"a"},{"text":"b",}]}"#);
}

#[test]
fn numbers_in_unknown_fields() {
    for n in [
        "0",
        "-0",
        "1e3",
        "1E3",
        "1e+3",
        "1e-3",
        "-1.5E-7",
        "0.0",
        "-12",
        "3.25",
        "1e308",
        "18446744073709551616",
        "123456789012345678901234567890",
        "0e99999",
    ] {
        let data = format!(
            r#"{{"created":{n},"choices":[{{"index":{n},"text":"t"}}],"usage":{{"total_tokens":{n},"prompt_tokens":1}}}}"#
        );
        let c = parse_chunk(&data).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(c, parse_chunk_value(&data).unwrap(), "{n}");
        assert_eq!(text(&c.answer).as_deref(), Some("t"));
    }
    // Plain forms stay on the fast path.
    fast(r#"{"a":-0,"b":1e3,"c":1.5E-7,"d":0.25}"#);
    for n in [
        "01", "1.", ".5", "-", "+1", "1e", "1e+", "--1", "0x10", "1e400", "Infinity", "NaN",
    ] {
        invalid(&format!(r#"{{"created":{n}}}"#));
    }
}

#[test]
fn token_counts_must_be_unsigned_integers() {
    for n in [
        "-1",
        "-0",
        "1.5",
        "1e3",
        "\"3\"",
        "null",
        "true",
        "18446744073709551616",
    ] {
        let data = format!(r#"{{"usage":{{"prompt_tokens":{n}}}}}"#);
        assert!(scan_chunk(&data).is_none(), "{n}");
        assert!(
            matches!(
                parse_chunk(&data),
                Err(ChunkError::Type {
                    field: "usage.prompt_tokens",
                    ..
                })
            ),
            "{n}"
        );
    }
    assert_eq!(
        fast(r#"{"usage":{"prompt_tokens":18446744073709551615}}"#)
            .usage
            .map(|u| u.prompt_tokens),
        Some(u64::MAX)
    );
}

#[test]
fn type_errors_and_garbage() {
    for data in [
        r#"{"choices":"nope"}"#,
        r#"{"choices":{}}"#,
        r#"{"choices":[null]}"#,
        r#"{"choices":[1]}"#,
        r#"{"choices":[{"delta":5}]}"#,
        r#"{"choices":[{"delta":[]}]}"#,
        r#"{"choices":[{"delta":{"content":5}}]}"#,
        r#"{"choices":[{"delta":{"reasoning":{}}}]}"#,
        r#"{"choices":[{"text":["a"]}]}"#,
        r#"{"usage":"x"}"#,
        r#"{"usage":[1,2]}"#,
    ] {
        assert!(scan_chunk(data).is_none(), "{data}");
        assert!(
            matches!(parse_chunk(data), Err(ChunkError::Type { .. })),
            "{data}"
        );
    }
    for data in ["[]", "\"x\"", "1", "null", r#"[{"choices":[]}]"#] {
        assert!(
            matches!(parse_chunk(data), Err(ChunkError::NotAnObject)),
            "{data}"
        );
    }
    for data in [
        "",
        " ",
        "{not json",
        "{}}",
        "{} x",
        "{}{}",
        r#"{"a":1,}"#,
        r#"{"a" 1}"#,
        r#"{"a":1 "b":2}"#,
        r#"{a:1}"#,
        r#"{"a":tru}"#,
        r#"{"a":nul}"#,
        r#"{"a":[1,]}"#,
        r#"{"a":[1 2]}"#,
        "{'a':1}",
        "\u{feff}{}",
    ] {
        invalid(data);
        assert!(
            matches!(parse_chunk(data), Err(ChunkError::Json(_))),
            "{data:?}"
        );
    }
}

#[test]
fn repeated_keys_count_once_the_last() {
    // serde_json keeps the last value of a repeated key; the scanner leaves those to it.
    let c = fallback(r#"{"choices":"nope","choices":[{"delta":{"content":"x"}}]}"#);
    assert_eq!(text(&c.answer).as_deref(), Some("x"));
    let c = fallback(r#"{"choices":[{"delta":{"content":"a","content":null}}]}"#);
    assert!(c.answer.is_none());
    let c = fallback(r#"{"usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}"#);
    assert_eq!(c.usage.map(|u| u.prompt_tokens), Some(2));
    // Unknown keys may repeat on the fast path.
    fast(r#"{"id":"a","id":"b","choices":[{"index":0,"index":1}]}"#);
}

#[test]
fn escaped_keys_and_deep_nesting_fall_back() {
    let c = fallback(r#"{"choices":[{"delta":{"con\u0074ent":"x"}}]}"#);
    assert_eq!(text(&c.answer).as_deref(), Some("x"));
    let c = fallback(r#"{"\u0069d":1,"choices":[]}"#);
    assert_eq!(c, ChunkInfo::default());
    let deep = |n: usize| {
        format!(
            r#"{{"x":{}{},"choices":[{{"text":"t"}}]}}"#,
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    assert!(fast(&deep(20)).has_answer());
    assert!(fallback(&deep(100)).has_answer());
    // Beyond serde_json's recursion limit the chunk is an error.
    invalid(&deep(200));
}

#[test]
fn truncated_chunks_are_errors_at_every_byte() {
    for data in [
        r#"{"choices":[{"index":0,"delta":{"content":"a\"\u00e9\ud83d\ude00"},"logprobs":null,"finish_reason":null}],"id":"x"}"#,
        r#"{"choices":[],"usage":{"completion_tokens":8,"prompt_tokens":23,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"prompt_ms":24.63,"predicted_n":8,"x":-1.5e-3}}"#,
        r#"{ "error" : { "message" : [true, false, null, {"a": "}"}] } }"#,
    ] {
        assert!(parse_chunk(data).is_ok());
        for end in 0..data.len() {
            if let Some(prefix) = data.get(..end) {
                assert!(parse_chunk(prefix).is_err(), "prefix {prefix:?}");
            }
        }
    }
}

#[test]
fn simulator_chunks_take_the_fast_path() {
    for data in [
        r#"{"id":"chatcmpl-sim-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-sim-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}]}"#,
        r#"{"id":"cmpl-sim-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":"stop"}]}"#,
        r#"{"id":"cmpl-sim-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}"#,
    ] {
        fast(data);
    }
}

/// Every data line of the real server captures decodes on the fast path, as serde_json
/// decodes it.
#[test]
fn real_transcripts() {
    let transcripts = [
        (
            include_str!("../../../../../tests/data/llama-cpp-python-chat-stream.sse"),
            (8, false),
        ),
        (
            include_str!("../../../../../tests/data/llama-server-chat-stream-usage.sse"),
            (8, true),
        ),
        (
            include_str!("../../../../../tests/data/llama-server-completions-stream.sse"),
            (6, true),
        ),
    ];
    for (body, (outputs, with_timings)) in transcripts {
        let mut seen = 0;
        let mut finish = None;
        let mut timings = None;
        for line in body.lines() {
            let Some(data) = line.strip_prefix("data: ").filter(|d| *d != "[DONE]") else {
                continue;
            };
            let c = fast(data);
            seen += usize::from(c.has_output());
            finish = finish.or(c.finish_reason);
            timings = timings.or(c.timings);
        }
        assert_eq!(seen, outputs);
        assert_eq!(finish, Some(FinishReason::Length));
        assert_eq!(timings.is_some(), with_timings);
    }
}

#[test]
fn tool_call_deltas_are_answer_output() {
    // vLLM's first tool-call delta: the id, the type and the whole name, empty arguments.
    let c = fast(
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"chatcmpl-tool-1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}"#,
    );
    assert!(c.has_output() && c.has_answer());
    assert_eq!(text(&c.tool_call.name).as_deref(), Some("get_weather"));
    assert_eq!(text(&c.tool_call.arguments).as_deref(), Some(""));
    // Later deltas: a fragment of the arguments' JSON, escapes and all.
    let c = fast(
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Par"}}]}}]}"#,
    );
    assert!(c.has_answer());
    assert_eq!(
        text(&c.tool_call.arguments).as_deref(),
        Some(r#"{"city": "Par"#)
    );
    assert_eq!(c.tool_call.name, None);
    // Empty, null and absent parts are no output.
    for quiet in [
        r#"{"choices":[{"delta":{"tool_calls":[]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":null}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":null}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":null,"arguments":""}}]}}]}"#,
    ] {
        assert!(!fast(quiet).has_output(), "{quiet}");
    }
    // Parallel calls in one delta: every one is read (by serde_json: the scanner gives a
    // delta of several up rather than allocate), every one's output counts.
    let c = fallback(
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0},{"index":1,"function":{"name":"b","arguments":"{\"x\":1}"}},{"index":2,"function":{"arguments":"{}"}}]}}]}"#,
    );
    assert!(!c.tool_call.has_output());
    assert!(c.has_answer(), "the second call is output");
    assert_eq!(c.more_tool_calls.len(), 2);
    assert_eq!(text(&c.more_tool_calls[0].name).as_deref(), Some("b"));
    assert_eq!(
        text(&c.more_tool_calls[0].arguments).as_deref(),
        Some(r#"{"x":1}"#)
    );
    assert_eq!(c.tool_calls().count(), 3);
    // A later call of the wrong shape is as malformed as a first one.
    invalid(
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a"}},{"function":{"name":"b","arguments":[1]}}]}}]}"#,
    );
    // The finish reason of a tool-calling answer.
    let c = fast(r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#);
    assert_eq!(c.finish_reason, Some(FinishReason::ToolCalls));
}

#[test]
fn broken_tool_call_deltas_are_errors_or_fall_back() {
    // Types the grammar does not allow: the request is malformed.
    for bad in [
        r#"{"choices":[{"delta":{"tool_calls":"get_weather"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":{"function":{"name":"x"}}}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[7]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":"x"}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":7}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":{"city":"x"}}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"unterminated}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a"}}"#,
    ] {
        invalid(bad);
    }
    // A repeated key is serde_json's to settle (the last wins).
    let c = fallback(
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","name":"b"}}]}}]}"#,
    );
    assert_eq!(text(&c.tool_call.name).as_deref(), Some("b"));
    let c = fallback(
        r#"{"choices":[{"delta":{"tool_calls":null,"tool_calls":[{"function":{"arguments":"x"}}]}}]}"#,
    );
    assert!(c.has_answer());
    // Every prefix of a tool-call chunk is an error, never a panic.
    let data = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}"#;
    for end in 1..data.len() {
        invalid(&data[..end]);
    }
}
