use serde_json::Value;

use super::*;
use crate::framing::Framing;
use crate::wire::Finish;

fn request(body: &str) -> GenRequest {
    Responses.parse(body.as_bytes(), false).expect("parses")
}

/// The events of a whole stream of `n` tokens, `reasoning` of them reasoning: (SSE event
/// name, data as JSON).
fn stream(n: u64, reasoning: u64, reason: FinishReason) -> Vec<(String, Value)> {
    let req = request(r#"{"input":"hi","stream":true,"max_output_tokens":8}"#);
    let f = Framing::new(Responses.stream(), 7, 100, "m\"x", &req, true, None)
        .with_reasoning(reasoning);
    let mut buf = BytesMut::new();
    for i in 0..n {
        let finish = (i + 1 == n).then(|| Finish {
            reason,
            prompt: 12,
            completion: n,
            cached: 4,
            reasoning: reasoning.min(n),
            timings: None,
        });
        f.write_token(&mut buf, " w", i, finish.as_ref());
    }
    std::str::from_utf8(&buf)
        .unwrap()
        .split_terminator("\n\n")
        .map(|e| {
            let (name, data) = e.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap().to_string();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(
                data["type"],
                name.as_str(),
                "the event line names the data's type"
            );
            (name, data)
        })
        .collect()
}

#[test]
fn a_reasoning_phase_then_the_answer() {
    let ev = stream(5, 2, FinishReason::Stop);
    let kinds: Vec<&str> = ev.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.output_item.added",
            "response.reasoning_text.delta",
            "response.reasoning_text.delta",
            "response.output_item.done",
            "response.output_item.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let seq: Vec<u64> = ev
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seq, (0..ev.len() as u64).collect::<Vec<_>>());
    assert_eq!(ev[0].1["response"]["model"], "m\"x");
    assert_eq!(ev[6].1["delta"], " w");
    assert_eq!(ev[6].1["output_index"], 1);
    let done = &ev[10].1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["usage"],
        serde_json::json!({"input_tokens": 12, "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 17})
    );
}

#[test]
fn a_budget_spent_reasoning_is_incomplete_without_an_answer() {
    let ev = stream(3, 8, FinishReason::Length);
    assert!(ev.iter().all(|(k, _)| k != "response.output_text.delta"));
    let (kind, last) = ev.last().unwrap();
    assert_eq!(kind, "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(
        last["response"]["usage"]["output_tokens_details"]["reasoning_tokens"],
        3
    );
    // Without reasoning: no reasoning item, the message is item 0.
    let ev = stream(2, 0, FinishReason::Stop);
    assert_eq!(ev[1].1["item"]["type"], "message");
    assert_eq!(ev[2].1["output_index"], 0);
}

#[test]
fn requests_read_input_instructions_and_effort() {
    let text = request(r#"{"input":"hello world","max_output_tokens":5}"#);
    let items = request(
        r#"{"instructions":"be brief","input":[{"role":"user","content":"hello world"}],"reasoning":{"effort":"high"},"max_tokens":9}"#,
    );
    assert_eq!(text.max_tokens, Some(5));
    assert_eq!(items.max_tokens, Some(9));
    assert_eq!(
        items.reasoning_effort,
        Some(crate::protocol::ReasoningEffort::High)
    );
    assert_eq!(text.reasoning_effort, None);
    // The instructions are a system message before the same user message.
    assert!(items.prompt_tokens > text.prompt_tokens);
    let odd = request(r#"{"input":"x","reasoning":{"effort":"extreme"}}"#);
    assert_eq!(odd.reasoning_effort, None, "an unknown effort is ignored");
    assert!(Responses.parse(br#"{"input":5}"#, false).is_err());
    assert_eq!(
        Responses
            .parse(br#"{"prompt":"x"}"#, false)
            .unwrap_err()
            .param,
        Some("input")
    );
}

#[test]
fn garbage_is_cut_json() {
    let req = request(r#"{"input":"hi","stream":true}"#);
    let f = Framing::new(Responses.stream(), 1, 1, "m", &req, false, None);
    let mut buf = BytesMut::new();
    f.write_garbage(&mut buf);
    let text = std::str::from_utf8(&buf).unwrap();
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    assert!(serde_json::from_str::<Value>(data).is_err());
}

/// The arguments the simulator's call of request `id` carries, `n` words long.
fn call_arguments(id: u64, n: u64) -> String {
    let words: String = (0..n).map(|i| crate::words::word(id, i)).collect();
    crate::tools::whole_call(id, &words).1
}

#[test]
fn a_continuation_answers_the_stored_responses_calls_and_counts_as_resent() {
    use crate::protocol::Api;
    use crate::store::{ResponseStore, asked, pending};
    let store = std::sync::Arc::new(ResponseStore::new(10, 10_000, None));
    let mut first = request(r#"{"input":"What is the weather?","store":true}"#);
    let c = asked(&store, Api::RESPONSES, &mut first).unwrap().unwrap();
    let (_, p) = pending(&store, c, (4, Some("get_weather")), true);
    p.unwrap().commit(3);
    let output = |call: &str| {
        format!(
            r#"{{"previous_response_id":"resp_sim-4","input":[{{"type":"function_call_output","call_id":"{call}","output":"sunny, 21 degrees"}}]}}"#
        )
    };
    let mut next = request(&output("call-sim-4"));
    assert_eq!(next.tool_results.count, 1);
    assert!(next.tool_results.last, "answered with text");
    asked(&store, Api::RESPONSES, &mut next).unwrap().unwrap();
    // The conversation resent whole counts the same tokens.
    let resent = request(&format!(
        r#"{{"input":[{{"role":"user","content":"What is the weather?"}},
            {{"type":"function_call","call_id":"call-sim-4","name":"get_weather","arguments":{}}},
            {{"type":"function_call_output","call_id":"call-sim-4","output":"sunny, 21 degrees"}}]}}"#,
        serde_json::to_string(&call_arguments(4, 3)).unwrap()
    ));
    assert_eq!(next.prompt_tokens, resent.prompt_tokens);
    // An output naming a call the stored response did not make: OpenAI's 400.
    let mut wrong = request(&output("call-sim-9"));
    let (status, body) = asked(&store, Api::RESPONSES, &mut wrong).unwrap_err();
    assert_eq!(status, 400);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v["error"]["message"],
        "No tool call found for function call output with call_id \"call-sim-9\"."
    );
    assert_eq!(v["error"]["param"], "input");
    // Without previous_response_id it names no call at all: refused as it is parsed.
    let plain = output("call-sim-4").replace(r#""previous_response_id":"resp_sim-4","#, "");
    assert!(Responses.parse(plain.as_bytes(), false).is_err());
    // A continued response answered with text made no call: an output is refused.
    let (_, p) = pending(&store, next_context(&store), (5, None), true);
    p.unwrap().commit(2);
    let mut after_text = request(&output("call-sim-4").replace("resp_sim-4", "resp_sim-5"));
    assert_eq!(
        asked(&store, Api::RESPONSES, &mut after_text)
            .unwrap_err()
            .0,
        400
    );
}

fn next_context(store: &crate::store::ResponseStore) -> crate::store::Context {
    store.context_of("resp_sim-4").unwrap()
}

#[test]
fn a_whole_answer_that_calls_a_tool_is_a_function_call_item() {
    let w = Whole {
        id: 4,
        created: 1,
        model: "m",
        text: " the cat",
        reasoning: "",
        reasoning_tokens: 0,
        finish: "tool_calls",
        usage: serde_json::json!({"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}),
        inputs: 0,
        embedding_dim: 0,
        tool: Some("get_weather"),
    };
    let v = Responses.whole(&w);
    assert_eq!(v["status"], "completed");
    let out = v["output"].as_array().unwrap();
    assert_eq!(out.len(), 1, "{v}");
    assert_eq!(out[0]["type"], "function_call");
    assert_eq!(out[0]["call_id"], "call-sim-4");
    assert_eq!(out[0]["name"], "get_weather");
    let args: Value = serde_json::from_str(out[0]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["text"], " the cat");
    let chat = crate::apis::chat::Chat.whole(&w);
    let call = &chat["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(chat["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(chat["choices"][0]["message"]["content"], Value::Null);
    assert_eq!(call["id"], "call-sim-4");
    assert_eq!(call["function"]["arguments"], out[0]["arguments"]);
}
