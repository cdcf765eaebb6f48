//! An attacker's audit of what reaches the outputs, through the real binary: a server that
//! streams a `/metrics` page or a model list without end (the scrape and `wait` read a
//! bounded part and say why they stopped; the server could not send more than the bound and
//! the sockets' buffers), a `wait` line over a list of thousands of long ids (a bounded line),
//! error bodies that carry markup, workflow commands, terminal escapes, secrets and a
//! megabyte of text (none reaches any output), class and model names that are spreadsheet
//! formulas or workflow commands (escaped for each output), and agentic trace ids that carry
//! the same (escaped, or cut, in the error that names them).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::*;

/// A secret a server puts in what it sends: shaped like an OpenAI key, so masked wherever it
/// would stand; it must never be written.
pub(crate) const SERVER_SECRET: &str = "sk-proj-HOSTILEhostileHOSTILEhostile0123456789";

/// Text chosen to hurt whoever shows it: a tag, a live link and mention, a table's `|`, a
/// formula, a terminal title and clear, a workflow command on a line of its own, a NUL.
pub(crate) fn hostile_text() -> String {
    format!(
        "<script>alert(1)</script></table>|x|@octocat [go](javascript:alert(1)) `tick` \
         \u{1b}]0;pwned\u{7}\u{1b}[2J\n::error::pwned\n=HYPERLINK(\"http://evil\")\u{0} \
         Authorization: Bearer {SERVER_SECRET} api-key: {SERVER_SECRET}"
    )
}

/// A server that answers every `GET` whose path ends with one of `endless` by streaming
/// `line` without end (a `content-length` of a terabyte), `/health` with an empty 200, and
/// anything else with a 404; `most` is the most bytes it wrote on one connection.
struct Endless {
    url: String,
    most: Arc<AtomicUsize>,
}

impl Endless {
    fn start(endless: &'static [&'static str], line: &'static str) -> Endless {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let most = Arc::new(AtomicUsize::new(0));
        let m = most.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let m = m.clone();
                std::thread::spawn(move || serve_endless(conn, endless, line, &m));
            }
        });
        Endless { url, most }
    }
}

fn serve_endless(mut conn: TcpStream, endless: &[&str], line: &str, most: &AtomicUsize) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
    }
    let path = request.split(' ').nth(1).unwrap_or("").to_string();
    let path = path.split('?').next().unwrap_or("");
    if path.ends_with("/health") {
        let _ =
            conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
    }
    if !endless.iter().any(|e| path.ends_with(e)) {
        let _ = conn
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
    }
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
    if conn.write_all(head.as_bytes()).is_err() {
        return;
    }
    let block = line.repeat((64 << 10) / line.len().max(1) + 1);
    let mut sent = 0usize;
    // Until the client hangs up (or 2 GiB: far past any bound, and the test fails then).
    while sent < 2 << 30 && conn.write_all(block.as_bytes()).is_ok() {
        sent += block.len();
        most.fetch_max(sent, Ordering::SeqCst);
    }
}

/// Every byte a run wrote (each file under `out`) and printed, by name.
pub(crate) fn every_output(
    out: &std::path::Path,
    o: &std::process::Output,
) -> Vec<(String, Vec<u8>)> {
    let mut all = vec![
        ("stdout".to_string(), o.stdout.clone()),
        ("stderr".to_string(), o.stderr.clone()),
    ];
    let mut dirs = vec![out.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                all.push((p.display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    all
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn an_endless_metrics_page_is_a_failed_scrape_not_the_memory() {
    let sim = SimProcess::start(&["--decode-base", "1ms", "--jitter", "0"]);
    let metrics = Endless::start(&["/metrics"], "vllm:num_requests_running{a=\"b\"} 1\n");
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{sim}" {{ timeout "20s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
telemetry {{
    interval "250ms"
    nvml required=#false
    prometheus "{m}/metrics" kind="vllm" required=#false
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 4; }}
"#,
        sim = sim.base_url,
        m = metrics.url,
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(stage(&results(&out), "s")["requests"]["ok"], 4);
    // The scrape stopped at its bound (16 MiB) plus what the sockets held: far from the
    // gigabytes a server streaming at loopback speed sends in the scrape's seconds.
    let most = metrics.most.load(Ordering::SeqCst);
    assert!(
        most < 48 << 20,
        "the server wrote {most} bytes on one scrape"
    );
    let (stdout, stderr) = text(&o);
    let said = format!(
        "{stdout}{stderr}{}",
        std::fs::read_to_string(out.join("results.json")).unwrap()
    );
    assert!(
        said.contains("larger than 16 MiB"),
        "the failed scrape says why:\n{}",
        describe(&o)
    );
}

/// `run`'s model lookup reads the same bounded list (the target names no model, so the run
/// takes the server's first): an endless one ends the run, exit 3, naming the bound.
#[test]
fn run_reads_a_bounded_model_list() {
    let server = Endless::start(&["/models"], "{\"id\":\"m\",\"object\":\"model\"},");
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{url}/v1" {{ timeout "20s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 2; }}
"#,
        url = server.url,
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let o = run(&path, &dir.path().join("out"), &["--no-plots"]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains("sent a model list larger than 4 MiB"),
        "{stderr}"
    );
    let most = server.most.load(Ordering::SeqCst);
    assert!(most < 32 << 20, "the server wrote {most} bytes");
}

#[test]
fn wait_reads_a_bounded_model_list_and_prints_a_bounded_line() {
    // A list that never ends: each attempt reads 4 MiB, says so, and tries again until the
    // timeout (exit 3).
    let server = Endless::start(&["/models"], "{\"id\":\"m\",\"object\":\"model\"},");
    let o = infermeter(&[
        "wait",
        &format!("{}/v1", server.url),
        "--timeout",
        "3s",
        "--interval",
        "100ms",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("larger than 4 MiB"), "{stderr}");
    let most = server.most.load(Ordering::SeqCst);
    assert!(
        most < 32 << 20,
        "the server wrote {most} bytes on one attempt"
    );

    // A list of 3000 ids of 1000 characters each (3 MB, within the bound): the ready line shows
    // 20, each cut, and counts the rest.
    let long = format!("{}{}", hostile_text().replace('\n', " "), "x".repeat(1000));
    let list: Vec<serde_json::Value> = (0..3000)
        .map(|i| serde_json::json!({ "id": format!("{i}-{long}"), "object": "model" }))
        .collect();
    let body = serde_json::json!({ "object": "list", "data": list }).to_string();
    let listed = ListServer::start(body);
    let o = infermeter(&["wait", &listed.url, "--timeout", "20s"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    assert!(stdout.len() < 16 << 10, "a line of {} bytes", stdout.len());
    assert!(stdout.contains("and 2980 more"), "{stdout}");
    for (what, t) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(
            !t.contains('\u{1b}') && !t.contains('\u{7}') && !t.contains('\0'),
            "{what}: {t}"
        );
        assert!(
            !t.lines().any(|l| l.trim_start().starts_with("::")),
            "{what}: {t}"
        );
        assert!(!t.contains(SERVER_SECRET), "{what} holds the secret: {t}");
    }
}

/// A server whose `/models` is `body` (whole) and whose `/health` is an empty 200.
struct ListServer {
    url: String,
}

impl ListServer {
    fn start(body: String) -> ListServer {
        ListServer::page("/models", body)
    }

    /// Answers a path containing `path` with `body`, any other with an empty 200.
    fn page(path: &'static str, body: String) -> ListServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let body = Arc::new(body);
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let body = body.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    let n = conn.read(&mut buf).unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let answer = if req.contains(path) {
                        body.as_str()
                    } else {
                        ""
                    };
                    let head = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        answer.len()
                    );
                    let _ = conn.write_all(head.as_bytes());
                    let _ = conn.write_all(answer.as_bytes());
                });
            }
        });
        ListServer { url }
    }
}

/// Every answer: a 500 whose JSON error carries the hostile text, then a megabyte.
#[test]
fn agentic_trace_ids_are_escaped_and_cut_in_the_error_that_names_them() {
    let dir = tempfile::tempdir().unwrap();
    let bad_id = format!("{}{}", hostile_text(), "z".repeat(10 << 20));
    let line = serde_json::json!({
        "id": "root",
        "turns": [{ "text": "go", "output_tokens": 8, "fork": [bad_id] }]
    });
    std::fs::write(dir.path().join("trace.jsonl"), format!("{line}\n")).unwrap();
    let kdl = r#"
target "sim" { timeout "20s"; }
dataset "a" { agentic "trace.jsonl" }
stage "s" { dataset "a"; arrival "concurrency" clients=1; requests 2; }
"#;
    let path = scenario(dir.path(), "s.kdl", kdl);
    for cmd in ["validate", "run"] {
        let out = dir.path().join(format!("out-{cmd}"));
        let mut c = command();
        c.arg(cmd).arg(&path);
        if cmd == "run" {
            c.arg("--out").arg(&out);
        }
        let o = c.output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{cmd}: a data set error\n{}",
            describe(&o)
        );
        let (stdout, stderr) = text(&o);
        for (what, t) in [("stdout", &stdout), ("stderr", &stderr)] {
            assert!(t.len() < 64 << 10, "{cmd} {what}: {} bytes", t.len());
            assert!(
                !t.contains('\u{1b}') && !t.contains('\u{7}') && !t.contains('\0'),
                "{cmd} {what}: {t}"
            );
            assert!(
                !t.lines().any(|l| l.trim_start().starts_with("::")),
                "{cmd} {what}: {t}"
            );
            assert!(
                !t.contains(SERVER_SECRET),
                "{cmd} {what} holds the secret: {t}"
            );
        }
        assert!(
            stderr.contains("trace.jsonl"),
            "{cmd}: the file is named:\n{stderr}"
        );
    }
}

#[test]
fn a_megabyte_model_id_is_refused_not_written_everywhere() {
    // The first id the server lists is a megabyte of hostile text: a run that names no model
    // refuses it, naming the fix, in a bounded line.
    let id = format!("{}{}", hostile_text(), "m".repeat(1 << 20));
    let body = serde_json::json!({ "object": "list", "data": [{ "id": id, "object": "model" }] })
        .to_string();
    let server = ListServer::start(body);
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{url}" {{ timeout "20s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 2; }}
"#,
        url = server.url
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    assert!(stderr.contains("model id of 1048"), "{stderr}");
    assert!(stderr.contains("`model"), "the fix is named: {stderr}");
    for (what, bytes) in every_output(&out, &o) {
        assert!(bytes.len() < 64 << 10, "{what} is {} bytes", bytes.len());
        assert!(
            !contains(&bytes, b"mmmmmmmmmmmmmmmm"),
            "{what} holds the id"
        );
        assert!(
            !contains(&bytes, SERVER_SECRET.as_bytes()),
            "{what} holds the secret"
        );
    }
    assert!(!stdout.contains('\u{1b}') && !stderr.contains('\u{1b}'));
}

/// One streamed answer whose every field a client might keep is hostile: the response id and
/// model, reasoning, content, and a tool call's id, name and arguments; then usage.
#[test]
fn a_dcgm_page_of_a_thousand_hostile_gpus_is_cut_and_escaped() {
    let sim = SimProcess::start(&["--decode-base", "1ms", "--jitter", "0"]);
    // A thousand GPUs, each named with the hostile text and 1 kB more (labels are one line:
    // the line break and ESC are written as the exposition format escapes them, or raw).
    let name = format!("{} {}", hostile_text().replace('\n', " "), "g".repeat(1000));
    let name = name.replace('\\', "\\\\").replace('"', "\\\"");
    let mut page = String::new();
    for i in 0..1000 {
        page.push_str(&format!(
            "DCGM_FI_DEV_GPU_UTIL{{gpu=\"{i}{}\",modelName=\"{name}\"}} 50\n\
             DCGM_FI_DEV_POWER_USAGE{{gpu=\"{i}{}\",modelName=\"{name}\"}} 300\n",
            "i".repeat(300),
            "i".repeat(300),
        ));
    }
    assert!(page.len() < 16 << 20, "within the scrape's bound");
    let metrics = ListServer::page("/metrics", page);
    let dir = tempfile::tempdir().unwrap();
    let kdl = format!(
        r#"
target "{sim}" {{ timeout "20s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
telemetry {{
    interval "5s"
    nvml required=#false
    prometheus "{m}/metrics" kind="dcgm-exporter" required=#false
}}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; requests 4; }}
"#,
        sim = sim.base_url,
        m = metrics.url.trim_end_matches("/v1"),
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
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let gpus = r["telemetry"]["gpus"].as_array().expect("GPU series");
    assert_eq!(gpus.len(), 64, "the page's first 64 GPUs, no more");
    for (what, bytes) in every_output(&out, &o) {
        // 64 GPUs of 128-character names: kilobytes, not the page's megabytes.
        assert!(bytes.len() < 2 << 20, "{what} is {} bytes", bytes.len());
        assert!(
            !contains(&bytes, "g".repeat(200).as_bytes()),
            "{what}: a name not cut"
        );
        for bad in [SERVER_SECRET, "\u{1b}", "<script>alert", "\n::error::"] {
            // results.json keeps the name as the server sent it (JSON-escaped): data, not markup.
            if bad == "<script>alert" && what.ends_with("results.json") {
                continue;
            }
            assert!(!contains(&bytes, bad.as_bytes()), "{what} holds {bad:?}");
        }
    }
}

#[test]
fn import_names_a_hostile_trace_row_inert_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // The filler first: the id is not one long secret-shaped word that masking would take whole.
    let id = format!("{} {}", "s".repeat(4 << 20), hostile_text());
    let rows = [
        serde_json::json!({ "request_id": id, "session_id": id, "input_length": 10,
            "output_length": 5, "timestamp": 0 }),
        serde_json::json!({ "request_id": "r2", "session_id": id, "input_length": 10,
            "output_length": 5, "timestamp": 1, "wait_for": [format!("{id}-unknown")] }),
    ];
    let body: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.path().join("trace.jsonl"), body).unwrap();
    let o = command()
        .args(["import", "dynamo-agentic"])
        .arg(dir.path().join("trace.jsonl"))
        .arg("-o")
        .arg(dir.path().join("tasks.jsonl"))
        .output()
        .unwrap();
    let (stdout, stderr) = text(&o);
    for (what, t) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(t.len() < 64 << 10, "{what}: {} bytes", t.len());
        assert!(
            !t.contains('\u{1b}') && !t.contains('\u{7}') && !t.contains('\0'),
            "{what}: {t}"
        );
        assert!(
            !t.lines().any(|l| l.trim_start().starts_with("::")),
            "{what}: {t}"
        );
        assert!(!t.contains(SERVER_SECRET), "{what} holds the secret: {t}");
    }
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(stderr.contains("characters cut"), "{stderr}");
    assert!(stderr.contains("which no row of the file is"), "{stderr}");
}
