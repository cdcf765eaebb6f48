//! The first day's URL mistakes, through the real binary: a target URL that is the server's
//! root (`http://HOST:8000` for vLLM's `…/v1`) or already the API's whole path
//! (`…/v1/chat/completions`) stops `run` before its first request with exit 3 and the URL to
//! use, the server untouched; `HOST:PORT` without a scheme gets `wait`'s `/v1` suggestion
//! (exit 2), from `run --url` and from `wait`; a server that serves its API at its root, with
//! no `/models`, runs as before.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::raw_server::ok_response;
use crate::support::scrape::metrics;
use crate::support::{SimProcess, describe, infermeter, results, run, scenario, text};

const SCENARIO: &str = r#"
scenario "first-day"
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 6; }
sla { assert "ttft.p50 < 60s"; }
"#;

/// The tokens the simulator at `base_url` has prefilled: 0 when it generated nothing.
fn prefilled(base_url: &str) -> f64 {
    metrics(base_url, "vllm:prompt_tokens_total").values().sum()
}

#[test]
fn a_server_root_as_the_url_stops_before_the_first_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "s.kdl", SCENARIO);
    let sim = SimProcess::start(&["--decode-base", "1ms"]);
    let root = sim.base_url.strip_suffix("/v1").unwrap().to_string();
    let out = dir.path().join("out");
    let o = run(&file, &out, &["--url", &root]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, err) = text(&o);
    let said = format!(
        "{root} answers 404 for /chat/completions; did you mean {}?",
        sim.base_url
    );
    assert!(err.contains(&said), "{said}\n{}", describe(&o));
    // Nothing was measured, and the server generated nothing.
    let r = results(&out);
    assert_eq!(r["complete"], false, "{r}");
    assert_eq!(r["stages"].as_array().map(Vec::len), Some(0), "{r}");
    assert_eq!(prefilled(&sim.base_url), 0.0);

    // The URL it names works.
    let out = dir.path().join("out-2");
    let o = run(&file, &out, &["--url", &sim.base_url]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(prefilled(&sim.base_url) > 0.0);
}

#[test]
fn a_url_ending_in_the_api_path_stops_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "s.kdl", SCENARIO);
    let sim = SimProcess::start(&["--decode-base", "1ms"]);
    let whole = format!("{}/chat/completions", sim.base_url);
    let out = dir.path().join("out");
    let o = run(&file, &out, &["--url", &whole]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let said = format!(
        "{whole} ends in the chat API's path /chat/completions, which every request adds to \
         the base URL; did you mean {}?",
        sim.base_url
    );
    assert!(text(&o).1.contains(&said), "{said}\n{}", describe(&o));
    assert_eq!(prefilled(&sim.base_url), 0.0);
}

#[test]
fn host_and_port_without_a_scheme_get_the_v1_suggestion_from_run_and_wait() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "s.kdl", SCENARIO);
    let o = run(&file, &dir.path().join("out"), &["--url", "127.0.0.1:8000"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, err) = text(&o);
    assert!(
        err.contains("--url 127.0.0.1:8000: not an http(s) URL"),
        "{err}"
    );
    assert!(
        err.contains("did you mean --url http://127.0.0.1:8000/v1?"),
        "{err}"
    );
    let w = infermeter(&["wait", "127.0.0.1:8000", "--timeout", "1s"]);
    assert_eq!(w.status.code(), Some(2), "{}", describe(&w));
    assert!(
        text(&w)
            .1
            .contains("did you mean http://127.0.0.1:8000/v1?"),
        "{}",
        describe(&w)
    );
}

/// A server that serves the chat API at its root and nothing else: every `GET` (`/models`
/// too) is a 404, a `POST /chat/completions` of `{}` a 400 (as a server validating the body
/// answers), any other `POST` there a streamed answer, counted in `generated`.
struct RootServer {
    url: String,
    probes: Arc<AtomicUsize>,
    generated: Arc<AtomicUsize>,
}

impl RootServer {
    fn start() -> RootServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let probes = Arc::new(AtomicUsize::new(0));
        let generated = Arc::new(AtomicUsize::new(0));
        let (p, g) = (probes.clone(), generated.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (p, g) = (p.clone(), g.clone());
                std::thread::spawn(move || serve_root(conn, &p, &g));
            }
        });
        RootServer {
            url,
            probes,
            generated,
        }
    }
}

fn serve_root(conn: TcpStream, probes: &AtomicUsize, generated: &AtomicUsize) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let answer: Vec<u8> = if line.starts_with("POST /chat/completions ") {
            if body == b"{}" {
                probes.fetch_add(1, Ordering::SeqCst);
                let e = r#"{"error":{"message":"messages is required","type":"invalid_request_error"}}"#;
                format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{e}",
                    e.len()
                )
                .into_bytes()
            } else {
                generated.fetch_add(1, Ordering::SeqCst);
                ok_response("hi", 4)
            }
        } else {
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\nNot Found".to_vec()
        };
        if conn.write_all(&answer).is_err() {
            return;
        }
    }
}

#[test]
fn a_server_serving_its_api_at_its_root_runs_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), "s.kdl", SCENARIO);
    let server = RootServer::start();
    let out = dir.path().join("out");
    let o = run(&file, &out, &["--url", &server.url, "--model", "m"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    // One check (its 400 says the API is there), then the stage's requests, all answered.
    assert_eq!(server.probes.load(Ordering::SeqCst), 1);
    assert!(server.generated.load(Ordering::SeqCst) >= 6);
    let r = results(&out);
    assert_eq!(r["stages"][0]["requests"]["sent"], 6, "{r}");
    assert_eq!(r["stages"][0]["requests"]["failed"], 0, "{r}");

    // Without a model: `/models` is the only way to learn it, as before.
    let o = run(&file, &dir.path().join("out-2"), &["--url", &server.url]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    assert!(
        text(&o).1.contains("/models answered 404 Not Found"),
        "{}",
        describe(&o)
    );
}
