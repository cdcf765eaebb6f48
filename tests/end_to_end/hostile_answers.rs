//! What a hostile server answers, through the real binary: error bodies (markup, workflow
//! commands, escapes, a secret, a megabyte) and streamed answers (ids, model, reasoning, tool
//! calls) reach no output unescaped, and an endless error body is left unread. The helpers
//! (every output of a run, the hostile text) are `hostile_out.rs`'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::hostile_out::{SERVER_SECRET, contains, every_output, hostile_text};
use crate::support::raw_server::{After, Post, RawServer};
use crate::support::*;

fn hostile_500_server() -> RawServer {
    let message = format!("{} {}", hostile_text(), "y".repeat(1 << 20));
    let body = serde_json::json!({ "error": { "message": message, "type": "<b>x</b>", "code": "::error::x" } })
        .to_string();
    RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        let head = format!(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        );
        if p.write(head.as_bytes()) && p.write(body.as_bytes()) {
            After::KeepAlive
        } else {
            After::Close
        }
    })
}

#[test]
fn error_bodies_and_label_names_reach_no_output_unescaped() {
    let server = hostile_500_server();
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    // Label names are a closed alphabet (letters, digits, `. _ - / :`), which still spells a
    // formula (`-1-1`) and a workflow command (`::error::x`).
    let kdl = format!(
        r#"
target "{base}" {{ model "m"; timeout "20s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=1
    requests 6
    class "-1-1" weight=1
    class "::error::x" weight=1
}}
"#,
        base = server.base_url,
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = command()
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .arg("--junit")
        .arg(out.join("junit.xml"))
        .arg("--progress-lines")
        .arg("--requests-jsonl")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(stage(&r, "s")["requests"]["errors"]["http_500"], 6, "{r}");
    let mut all = every_output(&out, &o);
    all.push((
        "step summary".into(),
        std::fs::read(&summary).unwrap_or_default(),
    ));
    assert!(
        all.len() > 6,
        "the run wrote its files: {:?}",
        all.iter().map(|a| &a.0).collect::<Vec<_>>()
    );
    for (what, bytes) in &all {
        // The error bodies are no output's: none of their words is anywhere, escaped or not.
        for bad in [
            SERVER_SECRET,
            "alert(1)",
            "octocat",
            "HYPERLINK",
            "pwned",
            "\u{1b}",
            "yyyyyyyyyyyyyyyy",
            "<b>x</b>",
            "&lt;b&gt;x",
        ] {
            assert!(!contains(bytes, bad.as_bytes()), "{what} holds {bad:?}");
        }
        assert!(bytes.len() < 4 << 20, "{what} is {} bytes", bytes.len());
    }
    // The class names: shown, and escaped where they would act.
    let (stdout, stderr) = text(&o);
    for (what, t) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(
            !t.lines().any(|l| l.trim_start().starts_with("::")),
            "{what}:\n{t}"
        );
    }
    let csv: String = ["stages.csv", "classes.csv", "groups.csv"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(out.join(f)).ok())
        .collect();
    for cell in csv.lines().flat_map(|l| l.split(',')) {
        let cell = cell.trim_matches('"');
        assert!(
            !cell.starts_with("-1-1") && !cell.starts_with('='),
            "a formula cell in:\n{csv}"
        );
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("1-1"), "the class is shown:\n{md}");
}

fn hostile_stream() -> String {
    let h = serde_json::to_string(&hostile_text()).unwrap();
    let chunk = |delta: String| {
        format!(
            "data: {{\"id\":{h},\"object\":\"chat.completion.chunk\",\"model\":{h},\
             \"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":null}}]}}\n\n"
        )
    };
    let mut body = chunk(format!(
        "{{\"role\":\"assistant\",\"reasoning_content\":{h}}}"
    ));
    body.push_str(&chunk(format!("{{\"content\":{h}}}")));
    body.push_str(&chunk(format!(
        "{{\"tool_calls\":[{{\"index\":0,\"id\":{h},\"type\":\"function\",\
         \"function\":{{\"name\":{h},\"arguments\":{h}}}}}]}}"
    )));
    body.push_str(&format!(
        "data: {{\"id\":{h},\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}],\
         \"usage\":{{\"prompt_tokens\":8,\"completion_tokens\":3}}}}\n\ndata: [DONE]\n\n"
    ));
    body
}

#[test]
fn hostile_answers_and_tool_definitions_reach_no_output() {
    let body = hostile_stream();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if p.write(head.as_bytes()) && p.write(body.as_bytes()) {
            After::KeepAlive
        } else {
            After::Close
        }
    });
    let dir = tempfile::tempdir().unwrap();
    // The data file's own tool definitions, tool_choice and response_format carry it too.
    let h = hostile_text();
    let line = serde_json::json!({
        "messages": [{ "role": "user", "content": h }],
        "tools": [{ "type": "function", "function": { "name": h, "description": h,
            "parameters": { "type": "object" } } }],
        "tool_choice": "auto",
    });
    std::fs::write(dir.path().join("t.jsonl"), format!("{line}\n")).unwrap();
    let kdl = format!(
        r#"
target "{base}" {{ model "m"; timeout "20s"; }}
dataset "d" {{ jsonl "t.jsonl"; }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; }}
"#,
        base = server.base_url,
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = command()
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .arg("--junit")
        .arg(out.join("junit.xml"))
        .arg("--requests-jsonl")
        .arg("--progress-lines")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(stage(&r, "s")["requests"]["ok"], 3, "{r}");
    let jsonl = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    assert!(
        jsonl.contains("\"finish_reason\":\"tool_calls\""),
        "{jsonl}"
    );
    let parquet = command()
        .arg("report")
        .arg(out.join("results.json"))
        .args(["--format", "parquet", "--out"])
        .arg(out.join("requests.parquet"))
        .output()
        .unwrap();
    assert_eq!(parquet.status.code(), Some(0), "{}", describe(&parquet));
    let all = every_output(&out, &o);
    assert!(all.iter().any(|(w, _)| w.ends_with("requests.parquet")));
    for (what, bytes) in &all {
        for bad in [
            SERVER_SECRET,
            "alert(1)",
            "octocat",
            "HYPERLINK",
            "pwned",
            "\u{1b}",
        ] {
            // Parquet is binary: any byte may stand in it; its strings are checked by words.
            if bad == "\u{1b}" && what.ends_with(".parquet") {
                continue;
            }
            assert!(!contains(bytes, bad.as_bytes()), "{what} holds {bad:?}");
        }
    }
}

#[test]
fn an_endless_error_body_on_the_reqwest_path_is_left_unread() {
    // Every answer a 500 whose body never ends; the client's reqwest path (a proxy variable
    // set, the server under NO_PROXY) reads a bounded part and closes the connection.
    let most = Arc::new(AtomicUsize::new(0));
    let m = most.clone();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        p.read_body();
        let head = "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n\
                    content-length: 1099511627776\r\n\r\n{\"error\":{\"message\":\"";
        if !p.write(head.as_bytes()) {
            return After::Close;
        }
        let block = "e".repeat(64 << 10);
        let mut sent = 0usize;
        while sent < 2 << 30 && p.write(block.as_bytes()) {
            sent += block.len();
            m.fetch_max(sent, Ordering::SeqCst);
        }
        After::Close
    });
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{base}" {{ model "m"; timeout "20s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 3; }}
"#,
        base = server.base_url,
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = command()
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .env("http_proxy", closed_port_url())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(stage(&r, "s")["requests"]["errors"]["http_500"], 3, "{r}");
    let most = most.load(Ordering::SeqCst);
    assert!(
        most < 32 << 20,
        "the server wrote {most} bytes of one error body"
    );
}
