//! Answer quality measured and gated in the same run as latency (docs/quality.md): the real
//! binary against the embedded simulator answering the shipped questions with a chosen
//! accuracy and repetition, `accuracy` and `repetition_rate` judged on their Wilson intervals;
//! invalid quality settings and references refused by `validate` with their place; and a
//! hostile server's 10 MB answer of markup scored on its first 64 KiB, never shown.

use crate::support::raw_server::{After, Post, RawServer};
use crate::support::*;

/// The shipped question set, by absolute path (the scenario is written to a temp dir).
fn qa_set() -> String {
    format!("{}/scenarios/data/qa.jsonl", env!("CARGO_MANIFEST_DIR"))
}

/// A scenario against the simulator answering `accuracy` of the questions right and
/// degenerating `repetition` of them, 300 questions, with `asserts`.
fn qa_scenario(target_extra: &str, asserts: &[&str]) -> String {
    let asserts: String = asserts
        .iter()
        .map(|a| format!("    assert \"{a}\"\n"))
        .collect();
    format!(
        r#"
scenario "qa" {{ seed 7; }}
target "sim" {{
    timeout "30s"
    decode-base "1ms"
    max-running 64
    {target_extra}
}}
dataset "qa" {{
    jsonl "{path}" max-tokens=48
    quality {{
        score "number"
        repetition ngram=4 share=0.5
    }}
}}
stage "qa" {{ dataset "qa"; arrival "concurrency" clients=8; requests 300; }}
sla {{
{asserts}}}
"#,
        path = qa_set()
    )
}

fn run_text(text: &str) -> (serde_json::Value, std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "qa.kdl", text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    let r = try_results(&out).unwrap_or(serde_json::Value::Null);
    (r, o, dir)
}

fn verdict<'a>(r: &'a serde_json::Value, expr: &str) -> &'a serde_json::Value {
    r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["expr"] == expr)
        .unwrap_or_else(|| panic!("no verdict for {expr}: {}", r["sla"]))
}

#[test]
fn half_right_answers_fail_the_accuracy_gate_with_an_interval_around_a_half() {
    let kdl = qa_scenario(
        "ignore-eos #false\n    answer-accuracy 0.5",
        &["accuracy > 80%", "ttft.p95 < 5s"],
    );
    let (r, o, _dir) = run_text(&kdl);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let q = &stage(&r, "qa")["quality"];
    assert_eq!(q["scorer"], "number", "{q}");
    assert_eq!(q["scored"], 300, "{q}");
    let accuracy = q["accuracy"].as_f64().unwrap();
    assert!((0.4..0.6).contains(&accuracy), "{q}");
    let [low, high] = [0, 1].map(|i| q["accuracy_interval"][i].as_f64().unwrap());
    assert!(low < 0.5 && 0.5 < high, "{q}");
    let v = verdict(&r, "accuracy > 80%");
    assert_eq!(v["outcome"], "fail", "{v}");
    assert!(v["interval"]["high"].as_f64().unwrap() < 80.0, "{v}");
    assert_eq!(verdict(&r, "ttft.p95 < 5s")["outcome"], "pass");
    let (stdout, _) = text(&o);
    assert!(stdout.contains("quality (number): accuracy"), "{stdout}");
}

#[test]
fn right_answers_pass_and_are_the_same_in_every_run() {
    let kdl = qa_scenario(
        "ignore-eos #false\n    answer-accuracy 1.0",
        &["accuracy > 80%", "repetition_rate < 5%", "empty_rate < 5%"],
    );
    let (r, o, dir) = run_text(&kdl);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let q = &stage(&r, "qa")["quality"];
    assert_eq!(
        (q["correct"].as_u64(), q["scored"].as_u64()),
        (Some(300), Some(300))
    );
    assert_eq!(q["repetitive"], 0, "{q}");
    assert_eq!(q["cut"], 0, "answers end on their own: {q}");
    assert!(q.get("ignore_eos").is_none(), "{q}");
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("| answer quality | |"), "{md}");
    // Half right, twice: the same answers judged the same.
    let half = qa_scenario("ignore-eos #false\n    answer-accuracy 0.5", &[]);
    let (first, _, _d1) = run_text(&half);
    let (second, _, _d2) = run_text(&half);
    let quality = |r: &serde_json::Value| stage(r, "qa")["quality"].clone();
    assert_eq!(quality(&first), quality(&second));
}

#[test]
fn degenerate_answers_are_flagged_and_fail_the_repetition_gate() {
    let kdl = qa_scenario(
        "ignore-eos #false\n    answer-accuracy 1.0\n    repetition 0.3",
        &["repetition_rate < 5%"],
    );
    let (r, o, _dir) = run_text(&kdl);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let q = &stage(&r, "qa")["quality"];
    let repetitive = q["repetitive"].as_u64().unwrap();
    assert!((50..130).contains(&repetitive), "{q}");
    // A looping answer runs to its budget and holds no number.
    assert_eq!(q["cut"].as_u64(), Some(repetitive), "{q}");
    assert_eq!(q["correct"].as_u64(), Some(300 - repetitive), "{q}");
    assert_eq!(verdict(&r, "repetition_rate < 5%")["outcome"], "fail");
}

#[test]
fn ignore_eos_on_a_scored_stage_says_its_answers_are_cut() {
    // The simulator's target sends ignore_eos by default.
    let kdl = qa_scenario("answer-accuracy 1.0", &[]).replace("requests 300", "requests 10");
    let (r, o, _dir) = run_text(&kdl);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let q = &stage(&r, "qa")["quality"];
    assert_eq!(q["ignore_eos"], true, "{q}");
    assert_eq!(q["cut"], 10, "{q}");
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("answers cut: the target sends ignore_eos"),
        "{stdout}"
    );
}

/// `validate` on `text` (written as `qa.kdl` beside `files`): its exit code and what it said.
fn validate(kdl: &str, files: &[(&str, &str)]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let path = scenario(dir.path(), "qa.kdl", kdl);
    let o = command().arg("validate").arg(&path).output().unwrap();
    let (stdout, stderr) = text(&o);
    (o.status.code(), format!("{stdout}{stderr}"))
}

#[test]
fn validate_counts_what_answer_quality_assertions_need_in_answers() {
    let kdl = qa_scenario(
        "",
        &["accuracy > 80%", "repetition_rate < 5%", "error_rate < 5%"],
    );
    let (code, said) = validate(&kdl, &[]);
    assert_eq!(code, Some(0), "{said}");
    for need in ["16 scored answers", "73 checked answers", "73 requests"] {
        assert!(said.contains(need), "{need}: {said}");
    }
    // Too few requests for the answers it needs: the warning counts answers too.
    let (_, said) = validate(&kdl.replace("requests 300", "requests 10"), &[]);
    assert!(
        said.contains("it needs at least 16 scored answers (one a request at best) to pass"),
        "{said}"
    );
}

#[test]
fn a_bad_regex_or_reference_is_an_invalid_scenario_named_where_it_is() {
    let with = |quality: &str, path: &str| {
        format!(
            "target \"sim\"\ndataset \"d\" {{\n    jsonl \"{path}\"\n    quality {{ {quality} }}\n}}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=1; requests 2; }}\n"
        )
    };
    let good = r#"{"prompt": "What is 1 + 1?", "reference": "2"}"#;
    let (code, said) = validate(
        &with("score \"regex\" pattern=\"(unclosed\"", "q.jsonl"),
        &[("q.jsonl", good)],
    );
    assert_eq!(code, Some(infermeter_core::exit::INVALID), "{said}");
    assert!(said.contains("invalid regular expression"), "{said}");
    assert!(said.contains("qa.kdl:4"), "the pattern's line: {said}");

    let (code, said) = validate(&with("score \"nmber\"", "q.jsonl"), &[("q.jsonl", good)]);
    assert_eq!(code, Some(infermeter_core::exit::INVALID), "{said}");
    assert!(
        said.contains("unknown scorer") && said.contains("number"),
        "{said}"
    );

    // An assertion on answers nobody checks is refused where it is written.
    let (code, said) = validate(
        &with("repetition", "q.jsonl").replace(
            "stage \"s\"",
            "sla { assert \"accuracy > 50%\"; }\nstage \"s\"",
        ),
        &[("q.jsonl", good)],
    );
    assert_eq!(code, Some(infermeter_core::exit::INVALID), "{said}");
    assert!(said.contains("data set `d` scores none"), "{said}");

    let wrong = format!("{good}\n{{\"prompt\": \"x\", \"reference\": 5}}\n");
    let (code, said) = validate(&with("score \"exact\"", "q.jsonl"), &[("q.jsonl", &wrong)]);
    assert_eq!(code, Some(infermeter_core::exit::INVALID), "{said}");
    assert!(said.contains("q.jsonl:2"), "{said}");
    assert!(
        said.contains("`reference` must be a string or a list"),
        "{said}"
    );
}

/// One chat chunk carrying `content` (already JSON-escaped).
fn content_chunk(content: &str) -> String {
    format!(
        "data: {{\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
         \"delta\":{{\"content\":\"{content}\"}}}}]}}\n\n"
    )
}

#[test]
fn a_ten_megabyte_answer_of_markup_is_scored_on_its_start_and_never_shown() {
    // 160 chunks of 64 KiB of markup: 10 MiB an answer.
    let piece = "<script>alert(1)</script><b>@team</b> |x| ".repeat(1560);
    let server = RawServer::engine(move |p: &mut Post<'_>| {
        p.read_body();
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                    transfer-encoding: chunked\r\n\r\n";
        if !p.write(head.as_bytes()) {
            return After::Close;
        }
        let mut send = |text: &str| p.write(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes());
        for _ in 0..160 {
            if !send(&content_chunk(&piece)) {
                return After::Close;
            }
        }
        let end = "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\
                   \"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":8,\
                   \"completion_tokens\":1000,\"total_tokens\":1008}}\n\ndata: [DONE]\n\n";
        send(end);
        p.write(b"0\r\n\r\n");
        After::KeepAlive
    });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("q.jsonl"),
        "{\"prompt\": \"What is 1 + 1?\", \"reference\": \"2\"}\n",
    )
    .unwrap();
    let kdl = format!(
        r#"
scenario "hostile" {{ seed 1; }}
target "{url}" {{ model "m"; timeout "60s"; max-event-size "1MiB"; }}
dataset "d" {{
    jsonl "q.jsonl" max-tokens=2000
    quality {{ score "contains"; repetition; refusal "<script>"; }}
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 2; }}
sla {{ assert "accuracy > 50%"; }}
"#,
        url = server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--untrusted", "judge"]);
    drop(server);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let r = results(&out);
    let q = &stage(&r, "s")["quality"];
    assert_eq!(q["checked"], 2, "{q}");
    assert_eq!(q["clipped"], 2, "judged on their first 64 KiB: {q}");
    assert_eq!(q["correct"], 0, "{q}");
    assert_eq!(q["repetitive"], 2, "{q}");
    assert_eq!(q["refusals"], 2, "{q}");
    for file in ["report.md", "report.html", "stages.csv"] {
        let body = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(!body.contains("<script>alert"), "{file} shows the answer");
    }
}

#[test]
fn a_split_run_judges_each_model_on_its_own_answers() {
    let kdl = qa_scenario(
        "ignore-eos #false\n    answer-accuracy 1.0\n    adapters { worse 1.0; }\n    \
         adapter-accuracy { worse 0.2; }",
        &[
            "accuracy[model=infermeter-sim] > 80%",
            "accuracy[model=worse] > 80%",
        ],
    )
    .replace(
        "requests 300;",
        "requests 300; model \"infermeter-sim\" weight=1; model \"worse\" weight=1;",
    );
    let (r, o, _dir) = run_text(&kdl);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    assert_eq!(
        verdict(&r, "accuracy[model=infermeter-sim] > 80%")["outcome"],
        "pass"
    );
    assert_eq!(
        verdict(&r, "accuracy[model=worse] > 80%")["outcome"],
        "fail"
    );
    let groups = stage(&r, "qa")["groups"].as_array().unwrap();
    let worse = groups.iter().find(|g| g["label"] == "worse").unwrap();
    let accuracy = worse["summary"]["quality"]["accuracy"].as_f64().unwrap();
    assert!((0.05..0.4).contains(&accuracy), "{worse}");
}
