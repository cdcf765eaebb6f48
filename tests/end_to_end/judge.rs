//! The LLM judge of a data set's answers (docs/quality.md, "LLM judge"): the real binary with
//! the embedded simulator as target and judge over real HTTP, `judge_score` gated on its
//! interval, on the stage and on each model apart; a cached rerun that calls the judge no
//! more; the judge's cost, its tokens at the scenario's prices; a judge answering garbage, or
//! never answering, counted as judge failures while the run completes; the judge's key sent
//! and never shown; bad judge settings refused by `validate` where they are written.

use std::sync::{Arc, Mutex};

use crate::support::raw_server::{After, RawServer};
use crate::support::*;

/// The shipped question set, by absolute path (the scenario is written to a temp dir).
fn qa_set() -> String {
    format!("{}/scenarios/data/qa.jsonl", env!("CARGO_MANIFEST_DIR"))
}

/// The simulator answering `accuracy` of 120 questions right, judged by `judge` (the
/// block's body), with `asserts`.
fn judged(accuracy: f64, judge: &str, asserts: &[&str]) -> String {
    let asserts: String = asserts
        .iter()
        .map(|a| format!("    assert \"{a}\"\n"))
        .collect();
    format!(
        r#"
scenario "judged" {{ seed 7; }}
target "sim" {{
    timeout "30s"
    decode-base "1ms"
    max-running 64
    ignore-eos #false
    answer-accuracy {accuracy}
}}
dataset "qa" {{
    jsonl "{path}" max-tokens=48
    quality {{
        score "number"
        judge {{
            rubric "Is the answer correct?"
            {judge}
        }}
    }}
}}
stage "qa" {{ dataset "qa"; arrival "concurrency" clients=8; requests 120; }}
sla {{
{asserts}}}
"#,
        path = qa_set()
    )
}

fn verdict<'a>(r: &'a serde_json::Value, expr: &str) -> &'a serde_json::Value {
    r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["expr"] == expr)
        .unwrap_or_else(|| panic!("no verdict for {expr}: {}", r["sla"]))
}

fn run_in(dir: &std::path::Path, kdl: &str) -> (serde_json::Value, std::process::Output) {
    let path = scenario(dir, "judged.kdl", kdl);
    let out = dir.join("out");
    let o = run(&path, &out, &["--force"]);
    (try_results(&out).unwrap_or(serde_json::Value::Null), o)
}

#[test]
fn judge_score_gates_and_a_cached_rerun_calls_the_judge_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = judged(
        0.5,
        "url \"sim\"; model \"infermeter-sim\"; with-reference #true; sample 80",
        &["judge_score > 2", "judge_score > 4.5"],
    );
    let (r, o) = run_in(dir.path(), &kdl);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let j = &stage(&r, "qa")["quality"]["judge"];
    assert_eq!(
        (j["sampled"].as_u64(), j["scored"].as_u64()),
        (Some(80), Some(80)),
        "{j}"
    );
    assert_eq!(
        (j["calls"].as_u64(), j["cache_hits"].as_u64()),
        (Some(80), Some(0)),
        "{j}"
    );
    assert_eq!(j["failures"], 0, "{j}");
    assert!(j["prompt_tokens"].as_u64().unwrap() > 0, "{j}");
    // No price written, no cost (not a cost of 0).
    assert!(j.get("cost").is_none(), "{j}");
    assert!(!text(&o).0.contains("cost"), "{}", text(&o).0);
    // Right answers get 5, wrong ones 1: about half each.
    let mean = j["mean"].as_f64().unwrap();
    assert!((2.2..3.8).contains(&mean), "{j}");
    assert_eq!(verdict(&r, "judge_score > 2")["outcome"], "pass");
    assert_eq!(verdict(&r, "judge_score > 4.5")["outcome"], "fail");
    let cache = dir.path().join(".infermeter/judge-cache.jsonl");
    assert_eq!(std::fs::read_to_string(&cache).unwrap().lines().count(), 80);
    // The mean in stages.csv too, its interval beside it.
    let csv = std::fs::read_to_string(dir.path().join("out/stages.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "judge_score").unwrap();
    let row = csv.lines().nth(1).unwrap();
    let cell = row.rsplit(',').nth(header.len() - 1 - at).unwrap();
    assert_eq!(cell.parse::<f64>().ok(), Some(mean), "{row}");

    let (again, o) = run_in(dir.path(), &kdl);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let k = &stage(&again, "qa")["quality"]["judge"];
    assert_eq!(
        (k["calls"].as_u64(), k["cache_hits"].as_u64()),
        (Some(0), Some(80)),
        "{k}"
    );
    assert_eq!(k["counts"], j["counts"], "the same scores from the cache");
    let (stdout, _) = text(&o);
    assert!(stdout.is_empty() || !stdout.contains("Score:"), "{stdout}");
}

#[test]
fn each_model_is_judged_on_its_own_answers_and_the_cost_is_tokens_at_the_prices() {
    let dir = tempfile::tempdir().unwrap();
    let kdl = judged(
        1.0,
        "url \"sim\"; model \"infermeter-sim\"; with-reference #true; sample 120\n\
         price input=\"0.15/1M\" output=\"0.60/1M\" currency=\"USD\"",
        &[
            "judge_score[model=infermeter-sim] > 4",
            "judge_score[model=worse] > 3",
        ],
    )
    .replace(
        "ignore-eos #false",
        "ignore-eos #false\n    adapters { worse 1.0; }\n    adapter-accuracy { worse 0.2; }",
    )
    .replace(
        "requests 120;",
        "requests 240; model \"infermeter-sim\" weight=1; model \"worse\" weight=1;",
    );
    let (r, o) = run_in(dir.path(), &kdl);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let base = verdict(&r, "judge_score[model=infermeter-sim] > 4");
    assert_eq!(base["outcome"], "pass", "{base}");
    let worse = verdict(&r, "judge_score[model=worse] > 3");
    assert_eq!(worse["outcome"], "fail", "{worse}");
    // Each judged on its own Student-t interval, wholly under the threshold.
    assert!(
        worse["interval"]["high"].as_f64().is_some_and(|h| h < 3.0),
        "{worse}"
    );

    let s = stage(&r, "qa");
    let j = &s["quality"]["judge"];
    let groups = s["groups"].as_array().unwrap();
    let label = |name: &str| {
        &groups.iter().find(|g| g["label"] == name).unwrap()["summary"]["quality"]["judge"]
    };
    let (b, w) = (label("infermeter-sim"), label("worse"));
    // The stage's sample, split between the models: every judged answer counted once.
    for field in [
        "sampled",
        "scored",
        "calls",
        "prompt_tokens",
        "completion_tokens",
    ] {
        assert_eq!(
            b[field].as_u64().unwrap() + w[field].as_u64().unwrap(),
            j[field].as_u64().unwrap(),
            "{field}: {b} {w} {j}"
        );
    }
    assert_eq!(j["scored"], 120, "{j}");
    assert!(
        b["scored"].as_u64().unwrap() >= 40 && w["scored"].as_u64().unwrap() >= 40,
        "{b} {w}"
    );
    assert_eq!(b["mean"], 5.0, "every right answer gets 5: {b}");
    let wm = w["mean"].as_f64().unwrap();
    assert!((1.2..2.8).contains(&wm), "{w}");
    let [low, high] = [
        w["interval"][0].as_f64().unwrap(),
        w["interval"][1].as_f64().unwrap(),
    ];
    assert!(low < wm && wm < high && high < 3.0, "{w}");

    // The cost is the tokens at the prices, for the stage and each model.
    for t in [j, b, w] {
        let tokens = |k: &str| t[k].as_u64().unwrap() as f64;
        let want = tokens("prompt_tokens") * 0.15 / 1e6 + tokens("completion_tokens") * 0.60 / 1e6;
        let c = &t["cost"];
        assert!((c["total"].as_f64().unwrap() - want).abs() < 1e-12, "{t}");
        assert_eq!(c["currency"], "USD", "{t}");
        assert!(want > 0.0, "{t}");
    }
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("model worse:") && stdout.contains(", cost "),
        "{stdout}"
    );
    assert!(stdout.contains("judge_score[model=worse] > 3"), "{stdout}");
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(
        md.contains("| judge score |") && md.contains(" USD"),
        "{md}"
    );
}

/// A judge server answering each call with `content(n)` for call `n`, counting calls and
/// keeping the last `Authorization` header.
fn judge_server(
    content: impl Fn(usize) -> Option<String> + Send + Sync + 'static,
) -> (RawServer, Arc<Mutex<Option<String>>>) {
    let auth = Arc::new(Mutex::new(None));
    let seen = auth.clone();
    let server = RawServer::start(true, move |p| {
        *seen.lock().unwrap() = p.header("authorization");
        let _ = p.body();
        match content(p.n) {
            Some(text) => p.json(
                &serde_json::json!({
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 3},
                })
                .to_string(),
            ),
            // Never answers: reads nothing more and holds the connection.
            None => After::Hold,
        }
    });
    (server, auth)
}

#[test]
fn a_judge_answering_garbage_is_counted_apart_and_its_key_never_shown() {
    let (server, auth) = judge_server(|n| {
        Some(if n % 2 == 0 {
            "Score: 4".into()
        } else {
            "<b>great</b> answer\u{1b}[31m, 11/10".into()
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let judge = format!(
        "url \"{}\"; model \"j\"; api-key env=\"INFERMETER_TEST_JUDGE_KEY\"; sample 30; \
         concurrency 3; cache \"judge.jsonl\"; price input=\"2/1M\" output=\"0.01/1K\"",
        server.base_url
    );
    let kdl = judged(1.0, &judge, &["judge_score > 3"]);
    let path = scenario(dir.path(), "judged.kdl", &kdl);
    let out = dir.path().join("out");
    let key = "sk-judge-Very-Secret-0123456789";
    let o = command()
        .env("INFERMETER_TEST_JUDGE_KEY", key)
        .args(["run", "--untrusted", "judge", "--out"])
        .arg(&out)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let r = results(&out);
    let j = &stage(&r, "qa")["quality"]["judge"];
    assert_eq!(j["calls"], 30, "{j}");
    assert_eq!(server.posts(), 30);
    assert_eq!(
        j["scored"].as_u64().unwrap() + j["failures"].as_u64().unwrap(),
        30,
        "{j}"
    );
    assert_eq!(j["failures"], 15, "{j}");
    assert_eq!(j["mean"], 4.0, "{j}");
    // Every call is paid for, scored or not: 30 × 100 prompt tokens at 2 a million, 30 × 3
    // completion tokens at 0.01 a thousand (10 a million).
    let cost = &j["cost"];
    assert_eq!(
        (j["prompt_tokens"].as_u64(), j["completion_tokens"].as_u64()),
        (Some(3000), Some(90))
    );
    assert!(
        (cost["input"].as_f64().unwrap() - 0.006).abs() < 1e-12,
        "{cost}"
    );
    assert!(
        (cost["output"].as_f64().unwrap() - 0.0009).abs() < 1e-12,
        "{cost}"
    );
    assert!(
        (cost["total"].as_f64().unwrap() - 0.0069).abs() < 1e-12,
        "{cost}"
    );
    assert_eq!(cost["output_per_million"], 10.0, "{cost}");
    assert!(cost.get("currency").is_none(), "{cost}");
    assert!(
        text(&o).0.contains("3000 + 90 tokens, cost 0.0069)"),
        "{}",
        text(&o).0
    );
    // The answers themselves are not the judge's failures.
    assert_eq!(stage(&r, "qa")["quality"]["correct"], 120);
    assert_eq!(
        auth.lock().unwrap().as_deref(),
        Some(format!("Bearer {key}").as_str())
    );
    let (stdout, stderr) = text(&o);
    assert!(!stdout.contains(key) && !stderr.contains(key));
    assert!(!stdout.contains("great"), "no judge text shown: {stdout}");
    for f in std::fs::read_dir(&out).unwrap() {
        let f = f.unwrap().path();
        if let Ok(t) = std::fs::read_to_string(&f) {
            assert!(!t.contains(key), "{} holds the key", f.display());
        }
    }
}

#[test]
fn a_judge_that_never_answers_is_bounded_by_its_timeout_and_counted() {
    let (server, _) = judge_server(|_| None);
    let dir = tempfile::tempdir().unwrap();
    let judge = format!(
        "url \"{}\"; model \"j\"; sample 10; concurrency 10; timeout \"1s\"",
        server.base_url
    );
    let kdl = judged(1.0, &judge, &["judge_score > 3", "accuracy > 50%"]);
    let path = scenario(dir.path(), "judged.kdl", &kdl);
    let out = dir.path().join("out");
    let child = spawn_run(&path, &out, &["--untrusted", "judge"]);
    let o = wait_bounded(child, 60, "a run whose judge never answers");
    let r = results(&out);
    let j = &stage(&r, "qa")["quality"]["judge"];
    assert_eq!(
        (j["failures"].as_u64(), j["scored"].as_u64()),
        (Some(10), Some(0)),
        "{j}"
    );
    assert!(j.get("mean").is_none(), "{j}");
    assert_eq!(verdict(&r, "accuracy > 50%")["outcome"], "pass");
    assert_ne!(verdict(&r, "judge_score > 3")["outcome"], "pass");
    assert!(matches!(o.status.code(), Some(1 | 4)), "{}", describe(&o));
}

/// `validate` on `judge` (the judge block's body) in a scored data set, with `files` beside.
fn validate(judge: &str, files: &[(&str, &str)]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    std::fs::write(
        dir.path().join("q.jsonl"),
        r#"{"prompt": "What is 1 + 1?", "reference": "2"}"#,
    )
    .unwrap();
    let kdl = format!(
        "target \"sim\"\ndataset \"d\" {{\n    jsonl \"q.jsonl\"\n    quality {{\n        judge {{\n\
         {judge}\n        }}\n    }}\n}}\n\
         stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=1; requests 2; }}\n"
    );
    let path = scenario(dir.path(), "qa.kdl", &kdl);
    let o = command().arg("validate").arg(&path).output().unwrap();
    let (stdout, stderr) = text(&o);
    (o.status.code(), format!("{stdout}{stderr}"))
}

#[test]
fn bad_judge_settings_are_refused_by_validate_where_they_are_written() {
    let invalid = Some(infermeter_core::exit::INVALID);
    let (code, said) = validate("model \"m\"; rubric \"r\"", &[]);
    assert_eq!(code, invalid, "{said}");
    assert!(
        said.contains("`judge` needs a `url`") && said.contains("qa.kdl:5"),
        "{said}"
    );

    let (code, said) = validate("url \"http://127.0.0.1:9/v1\"; rubric \"r\"", &[]);
    assert_eq!(code, invalid, "{said}");
    assert!(said.contains("`judge` needs a `model`"), "{said}");

    let (code, said) = validate("url \"sim\"; model \"m\"; rubric \"r\"; scale 1", &[]);
    assert_eq!(code, invalid, "{said}");
    assert!(
        said.contains("scale") && said.contains("qa.kdl:6"),
        "{said}"
    );

    let (code, said) = validate("url \"sim\"; model \"m\"\nrubric file=\"missing.txt\"", &[]);
    assert_eq!(code, invalid, "{said}");
    assert!(
        said.contains("rubric file `missing.txt`") && said.contains("qa.kdl:7"),
        "{said}"
    );

    let (code, said) = validate(
        "url \"sim\"; model \"m\"; rubric \"r\"; api-key \"sk-123\"",
        &[],
    );
    assert_eq!(code, invalid, "{said}");
    assert!(said.contains("not the key"), "{said}");

    let (code, said) = validate(
        "url \"sim\"; model \"m\"; rubric file=\"rubric.txt\"; scale 10",
        &[("rubric.txt", "Correct and complete.")],
    );
    assert_eq!(code, Some(0), "{said}");

    // A judge with no prompt texts to show it.
    let (code, said) = validate_synthetic_judged();
    assert_eq!(code, invalid, "{said}");
    assert!(said.contains("no prompt texts"), "{said}");

    // A judge_score assertion on a data set without a judge.
    let (code, said) = validate_plain_with_judge_score();
    assert_eq!(code, invalid, "{said}");
    assert!(said.contains("data set `d` judges none"), "{said}");
}

#[test]
fn judge_score_per_label_and_the_judges_prices_are_checked_by_validate() {
    let invalid = Some(infermeter_core::exit::INVALID);
    // judge_score split by a label: each label's share of the judged sample, counted as such.
    let split = |selector: &str| {
        validate_text(&format!(
            "target \"sim\" {{\n    model \"base\"\n    adapters {{ lora 1.5; }}\n}}\n\
             dataset \"d\" {{\n    jsonl \"{}\"\n    quality {{ judge {{ url \"sim\"; model \"base\"; rubric \"r\"; sample 40; }} }}\n}}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=1; requests 200; \
             model \"base\" weight=1; model \"lora\" weight=1; }}\n\
             sla {{ assert \"judge_score[{selector}] > 3\"; }}\n",
            qa_set()
        ))
    };
    let (code, said) = split("model=base");
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("10 judged answers")
            && said.contains(
                "judge scores about 20 of this label's answers (50 % of a sample of 40): ok"
            ),
        "{said}"
    );
    // A label no stage has is refused as on any other metric.
    let (code, said) = split("model=nope");
    assert_eq!(code, invalid, "{said}");
    assert!(
        said.contains("no stage here has the model `nope`"),
        "{said}"
    );

    // A price needs its unit, and is a number ≥ 0: refused at its line, with the form to write.
    let (code, said) = validate(
        "url \"sim\"; model \"m\"; rubric \"r\"\nprice input=\"0.15\" output=\"0.6/1M\"",
        &[],
    );
    assert_eq!(code, invalid, "{said}");
    assert!(
        said.contains("`input` needs its unit")
            && said.contains("qa.kdl:7")
            && said.contains("\"0.15/1M\""),
        "{said}"
    );
    let (code, said) = validate(
        "url \"sim\"; model \"m\"; rubric \"r\"\nprice input=\"0.15/1M\" output=\"-2/1M\"",
        &[],
    );
    assert_eq!(code, invalid, "{said}");
    assert!(
        said.contains("`output` is no price") && said.contains("qa.kdl:7"),
        "{said}"
    );
}

fn validate_plain_with_judge_score() -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("q.jsonl"),
        r#"{"prompt": "What is 1 + 1?", "reference": "2"}"#,
    )
    .unwrap();
    let kdl = "target \"sim\"\ndataset \"d\" {\n    jsonl \"q.jsonl\"\n    quality { score \"exact\" }\n}\n\
               stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 2; }\n\
               sla { assert \"judge_score > 3\"; }\n";
    let path = scenario(dir.path(), "qa.kdl", kdl);
    let o = command().arg("validate").arg(&path).output().unwrap();
    let (stdout, stderr) = text(&o);
    (o.status.code(), format!("{stdout}{stderr}"))
}

fn validate_synthetic_judged() -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let kdl = "target \"sim\"\ndataset \"d\" {\n    synthetic { input-tokens 8; output-tokens 4; }\n    \
               quality { judge { url \"sim\"; model \"m\"; rubric \"r\"; } }\n}\n\
               stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 2; }\n";
    let path = scenario(dir.path(), "qa.kdl", kdl);
    let o = command().arg("validate").arg(&path).output().unwrap();
    let (stdout, stderr) = text(&o);
    (o.status.code(), format!("{stdout}{stderr}"))
}

fn validate_text(kdl: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "qa.kdl", kdl);
    let o = command().arg("validate").arg(&path).output().unwrap();
    let (stdout, stderr) = text(&o);
    (o.status.code(), format!("{stdout}{stderr}"))
}

#[test]
fn a_ten_megabyte_answer_reaches_the_judge_as_its_first_64_kib() {
    // The target: 160 chunks of 64 KiB, a 10 MiB answer to each request.
    let piece = "<b>answer</b> 2 ".repeat(4096);
    let target = RawServer::engine(move |p| {
        p.read_body();
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                    transfer-encoding: chunked\r\n\r\n";
        if !p.write(head.as_bytes()) {
            return After::Close;
        }
        let mut send = |text: &str| p.write(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes());
        let chunk = format!(
            "data: {{\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\
             \"delta\":{{\"content\":\"{piece}\"}}}}]}}\n\n"
        );
        for _ in 0..160 {
            if !send(&chunk) {
                return After::Close;
            }
        }
        send("data: [DONE]\n\n");
        p.write(b"0\r\n\r\n");
        After::KeepAlive
    });
    // The judge: the largest body it was sent.
    let largest = Arc::new(Mutex::new(0usize));
    let seen = largest.clone();
    let judge = RawServer::start(true, move |p| {
        let mut l = seen.lock().unwrap();
        *l = (*l).max(p.body_len);
        drop(l);
        let _ = p.body();
        p.json(r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Score: 3"}}]}"#)
    });
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{url}" {{ model "m"; timeout "60s"; max-event-size "1MiB"; }}
dataset "d" {{
    jsonl "{qa}" max-tokens=2000
    quality {{ judge {{ url "{judge}"; model "j"; rubric "r"; with-reference #true; }} }}
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 2; }}
"#,
        url = target.base_url,
        qa = qa_set(),
        judge = judge.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--untrusted", "judge"]);
    assert!(
        matches!(o.status.code(), Some(0 | 1 | 4)),
        "{}",
        describe(&o)
    );
    let r = results(&out);
    let j = &stage(&r, "s")["quality"]["judge"];
    assert_eq!(
        (j["scored"].as_u64(), j["mean"].as_f64()),
        (Some(2), Some(3.0)),
        "{j}"
    );
    let largest = *largest.lock().unwrap();
    assert!(
        largest > 64 * 1024 && largest < 80 * 1024,
        "{largest} bytes to the judge"
    );
}
