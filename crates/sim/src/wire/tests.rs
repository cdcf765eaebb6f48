use super::*;
use crate::apis::chat::{Chat, Messages, PER_MESSAGE_TOKENS, REPLY_PRIMING_TOKENS};
use crate::apis::completions::{Completions, Prompt};
use crate::framing::Framing;

fn req(stream: bool, include_usage: bool) -> GenRequest {
    GenRequest {
        prompt_tokens: 7,
        max_tokens: Some(2),
        min_tokens: 0,
        ignore_eos: true,
        stream,
        include_usage,
        prompt_ids: Vec::new(),
        cache_prompt: true,
        tool: None,
        inputs: 0,
        reasoning_effort: None,
        model: None,
        priority: 0,
        tool_results: Default::default(),
        store: false,
        previous_response_id: None,
        answered: Vec::new(),
    }
}

fn finish(reason: FinishReason, prompt: u64, completion: u64) -> Finish {
    Finish {
        reason,
        prompt,
        completion,
        cached: 0,
        reasoning: 0,
        timings: None,
    }
}

fn events(buf: &[u8]) -> Vec<String> {
    std::str::from_utf8(buf)
        .unwrap()
        .split_terminator("\n\n")
        .map(|e| e.strip_prefix("data: ").unwrap().to_string())
        .collect()
}

#[test]
fn chat_stream_chunks_are_valid_json() {
    let f = Framing::new(Chat.stream(), 5, 100, "m\"q", &req(true, true), false, None);
    let mut buf = BytesMut::new();
    f.write_token(&mut buf, " the", 0, None);
    f.write_token(
        &mut buf,
        " of",
        1,
        Some(&finish(FinishReason::Length, 7, 2)),
    );
    let ev = events(&buf);
    assert_eq!(ev.len(), 5);
    let v: Vec<serde_json::Value> = ev[..4]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(v[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(v[0]["model"], "m\"q");
    assert_eq!(v[1]["choices"][0]["delta"]["content"], " the");
    assert_eq!(v[1]["object"], "chat.completion.chunk");
    assert_eq!(v[1]["id"], "chatcmpl-sim-5");
    assert!(v[1]["choices"][0]["finish_reason"].is_null());
    assert_eq!(v[2]["choices"][0]["finish_reason"], "length");
    assert_eq!(v[3]["choices"].as_array().unwrap().len(), 0);
    assert_eq!(v[3]["usage"]["total_tokens"], 9);
    assert_eq!(ev[4], "[DONE]");
}

#[test]
fn chat_reasoning_then_content() {
    let f =
        Framing::new(Chat.stream(), 5, 100, "m", &req(true, true), false, None).with_reasoning(1);
    let mut buf = BytesMut::new();
    f.write_token(&mut buf, " think", 0, None);
    let done = Finish {
        reasoning: 1,
        ..finish(FinishReason::Length, 7, 2)
    };
    f.write_token(&mut buf, " say", 1, Some(&done));
    let ev = events(&buf);
    let v: Vec<serde_json::Value> = ev[..4]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(v[1]["choices"][0]["delta"]["reasoning_content"], " think");
    assert!(v[1]["choices"][0]["delta"].get("content").is_none());
    assert_eq!(v[2]["choices"][0]["delta"]["content"], " say");
    assert_eq!(
        v[3]["usage"]["completion_tokens_details"]["reasoning_tokens"],
        1
    );
}

#[test]
fn completions_and_plain_framing() {
    let f = Framing::new(
        Completions.stream(),
        1,
        1,
        "m",
        &req(true, false),
        false,
        None,
    );
    let mut buf = BytesMut::new();
    f.write_token(&mut buf, " a", 0, Some(&finish(FinishReason::Stop, 1, 1)));
    let ev = events(&buf);
    assert_eq!(ev.len(), 2);
    let v: serde_json::Value = serde_json::from_str(&ev[0]).unwrap();
    assert_eq!(v["choices"][0]["text"], " a");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let mut garbage = BytesMut::new();
    f.write_garbage(&mut garbage);
    assert!(serde_json::from_str::<serde_json::Value>(&events(&garbage)[0]).is_err());

    let plain = Framing::new(
        Completions.stream(),
        1,
        1,
        "m",
        &req(false, false),
        false,
        None,
    );
    let mut buf = BytesMut::new();
    plain.write_token(&mut buf, " a", 0, Some(&finish(FinishReason::Stop, 1, 1)));
    assert_eq!(&buf[..], b" a");
}

fn parse_counting(api: &dyn SimApi, body: &[u8]) -> Result<GenRequest, BadRequest> {
    api.parse(body, false)
}

#[test]
fn stream_tail_with_cached_tokens_and_timings() {
    let timings = Timings {
        cache_n: 16,
        prompt_n: 8,
        prompt_ms: 12.0,
        predicted_n: 5,
        predicted_ms: 20.0,
        draft_n: None,
        draft_n_accepted: None,
    };
    let done = Finish {
        cached: 16,
        timings: Some(timings.clone()),
        ..finish(FinishReason::Length, 24, 5)
    };
    for include_usage in [true, false] {
        let f = Framing::new(
            Chat.stream(),
            1,
            1,
            "m",
            &req(true, include_usage),
            true,
            None,
        );
        let mut buf = BytesMut::new();
        f.write_token(&mut buf, " a", 1, Some(&done));
        let ev = events(&buf);
        assert_eq!(ev.last().unwrap(), "[DONE]");
        let last: serde_json::Value = serde_json::from_str(&ev[ev.len() - 2]).unwrap();
        let t = &last["timings"];
        assert_eq!(t["cache_n"], 16);
        assert_eq!(t["prompt_n"], 8);
        assert_eq!(t["prompt_per_token_ms"], 1.5);
        assert_eq!(t["prompt_per_second"], 8.0 / 12.0 * 1e3);
        assert_eq!(t["predicted_per_token_ms"], 5.0);
        assert_eq!(t["predicted_per_second"], 200.0);
        if include_usage {
            assert_eq!(
                last["usage"],
                serde_json::json!({"prompt_tokens": 24, "completion_tokens": 5,
                    "total_tokens": 29, "prompt_tokens_details": {"cached_tokens": 16}})
            );
            let fin: serde_json::Value = serde_json::from_str(&ev[0]).unwrap();
            assert!(fin.get("timings").is_none());
        } else {
            assert_eq!(ev.len(), 2);
        }
    }
}

#[test]
fn collected_ids_match_the_count() {
    let body = br#"{"messages":[{"role":"system","content":"be brief"},{"role":7,"content":[{"type":"text","text":"hello"}]}],"cache_prompt":false}"#;
    let counted = parse::<Messages>(body, false).unwrap();
    let collected = parse::<Messages>(body, true).unwrap();
    assert!(counted.prompt_ids.is_empty());
    assert_eq!(collected.prompt_ids.len() as u64, counted.prompt_tokens);
    assert_eq!(collected.prompt_tokens, counted.prompt_tokens);
    assert!(!collected.cache_prompt);
    let c = parse::<Prompt>(br#"{"prompt":["ab cd","ef"]}"#, true).unwrap();
    assert_eq!(c.prompt_ids.len() as u64, c.prompt_tokens);
    assert!(c.cache_prompt);
}

#[test]
fn each_api_reads_its_own_prompt_key_in_one_pass() {
    // A repeated key is an error, as serde's derive makes it; unknown keys are skipped.
    assert!(parse::<Messages>(br#"{"messages":[],"messages":[]}"#, false).is_err());
    let twice = br#"{"max_tokens":1,"messages":[],"max_tokens":2}"#;
    assert!(parse::<Messages>(twice, false).is_err());
    let r = parse::<Messages>(
        br#"{"prompt":{"x":[1,{}]},"max_tokens":null,"messages":[],"stream":true}"#,
        false,
    )
    .unwrap();
    assert_eq!(r.max_tokens, None);
    assert!(r.stream);
    // Another API's prompt key is just an unknown key; an escaped key is the same key.
    let c = parse::<Prompt>(br#"{"messages":5,"pro\u006dpt":[7,8]}"#, false).unwrap();
    assert_eq!(c.prompt_tokens, 2);
    assert!(parse::<Prompt>(br#"[1]"#, false).is_err());
}

#[test]
fn parsing_counts_tokens_and_reports_missing_fields() {
    let r = parse_counting(
        &Chat,
        br#"{"messages":[{"role":"user","content":"hello world"},{"role":"user","content":[{"type":"text","text":"hello"}]}],"max_completion_tokens":5,"max_tokens":9,"stream":true,"stream_options":{"include_usage":true},"temperature":0.3,"whatever":{}}"#,
    )
    .unwrap();
    assert_eq!(
        r.prompt_tokens,
        2 + 1 + 2 * PER_MESSAGE_TOKENS + REPLY_PRIMING_TOKENS
    );
    assert_eq!(r.max_tokens, Some(5));
    assert!(r.stream && r.include_usage);
    let c = parse_counting(&Completions, br#"{"prompt":[1,2,3]}"#).unwrap();
    assert_eq!(c.prompt_tokens, 3);
    assert!(!c.stream);
    assert_eq!(
        parse_counting(&Chat, br#"{"prompt":"x"}"#)
            .unwrap_err()
            .param,
        Some("messages")
    );
    assert_eq!(
        parse_counting(&Completions, b"{}").unwrap_err().param,
        Some("prompt")
    );
    assert!(parse_counting(&Chat, b"{not json").is_err());
    assert!(parse_counting(&Chat, br#"{"messages":[],"max_tokens":"x"}"#).is_err());
}

#[test]
fn the_model_and_priority_are_read() {
    let body = br#"{"model":"lora-sql","priority":-3,"prompt":"hi","max_tokens":2}"#;
    let r = parse::<Prompt>(body, false).unwrap();
    assert_eq!(r.model.as_deref(), Some("lora-sql"));
    assert_eq!(r.priority, -3);
    let r = parse::<Prompt>(br#"{"prompt":"hi"}"#, false).unwrap();
    assert_eq!((r.model, r.priority), (None, 0));
    assert!(parse::<Prompt>(br#"{"prompt":"hi","priority":"high"}"#, false).is_err());
}
