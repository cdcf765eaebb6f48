//! OpenTelemetry through the real binary: every request carries a `traceparent`; `otlp`
//! exports a span per request to a real OTLP/HTTP receiver (a loopback server written here,
//! decoding with `opentelemetry-proto`), whose trace ids are those the server saw (the
//! simulator exports its own span, child of the client's, from the `traceparent` it read);
//! `otlp-receive` joins the simulator's spans to the requests; a dead collector only warns.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use crate::support::{SimProcess, describe, results, run, scenario, wait_for};

/// An OTLP/HTTP receiver on loopback: every span of every export, decoded.
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Collector {
    fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let keep = spans.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let keep = keep.clone();
                std::thread::spawn(move || serve(conn, &keep));
            }
        });
        Collector { url, spans }
    }

    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }
}

/// Answers each request of a keep-alive connection with 200, keeping its spans.
fn serve(conn: TcpStream, keep: &Mutex<Vec<Span>>) {
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut conn = conn;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end().to_ascii_lowercase();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request = ExportTraceServiceRequest::decode(&body[..]).expect("an OTLP export");
        let spans = request
            .resource_spans
            .into_iter()
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans);
        keep.lock().unwrap().extend(spans);
        let ok =
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if conn.write_all(ok).is_err() {
            return;
        }
    }
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn string_attr(span: &Span, key: &str) -> String {
    match attr(span, key) {
        Some(Value::StringValue(s)) => s.clone(),
        other => panic!("{key}: {other:?} in {span:?}"),
    }
}

fn int(span: &Span, key: &str) -> i64 {
    match attr(span, key) {
        Some(Value::IntValue(i)) => *i,
        other => panic!("{key}: {other:?} in {span:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const DATASET: &str = r#"
dataset "d" {
    synthetic {
        input-tokens 24
        output-tokens 6
    }
}
"#;

/// A client span's GenAI attributes and ours, and nothing secret.
fn check_client_span(s: &Span) {
    assert_eq!(s.name, "chat infermeter-sim");
    assert_eq!(string_attr(s, "gen_ai.operation.name"), "chat");
    assert_eq!(string_attr(s, "gen_ai.request.model"), "infermeter-sim");
    assert_eq!(string_attr(s, "server.address"), "127.0.0.1");
    assert!(int(s, "gen_ai.usage.input_tokens") > 0);
    assert_eq!(int(s, "gen_ai.usage.output_tokens"), 6);
    assert!(matches!(attr(s, "infermeter.ttft_ms"), Some(Value::DoubleValue(v)) if *v > 0.0));
    assert_eq!(string_attr(s, "infermeter.stage"), "s");
    assert!(s.parent_span_id.is_empty(), "the client's span is the root");
    assert!(s.end_time_unix_nano >= s.start_time_unix_nano);
    let shown = format!("{s:?}");
    assert!(
        !shown.contains("sk-otlp-secret"),
        "no secret in a span: {shown}"
    );
    assert!(!shown.to_ascii_lowercase().contains("authorization"));
}

#[test]
fn each_request_span_reaches_a_real_receiver_under_the_trace_id_the_server_saw() {
    let collector = Collector::start();
    let sim = SimProcess::start(&[
        "--decode-base",
        "2ms",
        "--otlp-traces-endpoint",
        &collector.url,
    ]);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"scenario "otlp-export" {{ seed 1; }}
target "{url}" {{ model "infermeter-sim"; api-key env="OTLP_TEST_KEY"; }}
{DATASET}
telemetry {{ otlp "{collector}"; }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 12
}}
"#,
        url = sim.base_url,
        collector = collector.url,
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = crate::support::command()
        .env("OTLP_TEST_KEY", "sk-otlp-secret-0123456789")
        .args([
            "run",
            "--quiet",
            "--no-plots",
            "--untrusted",
            "judge",
            "--requests-jsonl",
        ])
        .arg("--out")
        .arg(&out)
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    // The client's spans are exported by the run's end; the simulator's in its next batch.
    wait_for(30, "12 client and 12 server spans", || {
        let spans = collector.spans();
        spans.iter().filter(|s| s.name == "llm_request").count() >= 12
            && spans.iter().filter(|s| s.name != "llm_request").count() >= 12
    });
    let spans = collector.spans();
    let (server, client): (Vec<&Span>, Vec<&Span>) =
        spans.iter().partition(|s| s.name == "llm_request");
    assert_eq!(client.len(), 12, "one span per request");
    for s in &client {
        check_client_span(s);
    }
    // Each server span is the child of a client span: the simulator read the same trace id
    // and parent id from the request's traceparent.
    let by_trace: HashMap<String, &Span> = client.iter().map(|s| (hex(&s.trace_id), *s)).collect();
    assert_eq!(by_trace.len(), 12, "trace ids are unique per request");
    for s in &server {
        let c = by_trace
            .get(&hex(&s.trace_id))
            .expect("the server's trace is a request's");
        assert_eq!(s.parent_span_id, c.span_id);
    }
    // requests.jsonl names the same trace ids.
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let ids: HashSet<String> = rows
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["trace_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids, by_trace.keys().cloned().collect());
}

/// A port nothing listens on now (the receiver binds it next).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn the_servers_spans_are_joined_per_request_into_where_the_time_went() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let text = format!(
        r#"scenario "otlp-join" {{ seed 2; }}
target "sim" {{
    decode-base "3ms"
    max-running 2
    otlp-traces-endpoint "http://127.0.0.1:{port}"
}}
{DATASET}
telemetry {{ otlp-receive "127.0.0.1:{port}" wait="30s"; }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=6
    requests 24
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots"]);
    assert!(o.status.success(), "{}", describe(&o));
    let r = results(&out);
    let s = crate::support::stage(&r, "s");
    let a = &s["attribution"];
    assert_eq!(a["source"], "spans", "{a}");
    assert_eq!(a["server_requests"], 24, "{a}");
    for part in [
        "queue_ms",
        "prefill_ms",
        "decode_ms",
        "server_ttft_ms",
        "outside_ms",
    ] {
        assert_eq!(a[part]["count"], 24, "{part}: {a}");
        for p in ["p50", "p90", "p99"] {
            assert!(a[part][p].is_number(), "{part}.{p}: {a}");
        }
    }
    // Six clients on two running slots: requests wait in the simulator's queue.
    assert!(a["queue_ms"]["p99"].as_f64().unwrap() > 0.0, "{a}");
    // The joined client times are the stage's own (every request joined), in ms.
    let (joined, own) = (
        a["client_ttft_ms"]["mean"].as_f64().unwrap(),
        s["latency"]["ttft_ms"]["mean"].as_f64().unwrap(),
    );
    assert!((joined / own - 1.0).abs() < 0.01, "{joined} vs {own}");
    // Five decode steps of at least 3 ms each, by the simulator's model. Its tokens are due
    // on deadlines from admission, so a prefill a loaded machine made late shortens the
    // decode that follows (tokens already due come at once): the bound is on prefill and
    // decode together, whose mean is the sum of their means (a median of decode alone was
    // 14.3 ms under load).
    let busy = a["prefill_ms"]["mean"].as_f64().unwrap() + a["decode_ms"]["mean"].as_f64().unwrap();
    assert!(busy >= 15.0, "{a}");
    let notes = s["notes"].to_string();
    assert!(
        notes.contains("24 of 24 successful requests joined"),
        "{notes}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("server spans") || report.contains("own span of each request"));
}

/// Sends `head` (a request's head, no body) to `port` and returns the status line of the
/// answer: `None` when none came within a minute (a bound against a hang, not a timing claim).
fn status_after_head(port: u16, head: &str) -> Option<String> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    conn.write_all(head.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(conn).read_line(&mut line).ok()?;
    (!line.is_empty()).then(|| line.trim_end().to_string())
}

#[test]
#[cfg(unix)]
fn the_receiver_refuses_an_announced_body_past_its_bound_at_the_headers() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let text = format!(
        r#"target "sim" {{ decode-base "5ms"; }}
{DATASET}
telemetry {{ otlp-receive "127.0.0.1:{port}" wait="1s"; }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=1; duration "10m"; }}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let child = crate::support::spawn_run(&path, &out, &[]);
    // The answers are gathered first and judged once the run is stopped, so that a failure
    // leaves no run behind.
    let mut statuses = Vec::new();
    let listening = (0..3000).any(|_| {
        let up = TcpStream::connect(("127.0.0.1", port)).is_ok();
        if !up {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        up
    });
    if listening {
        // 10 GiB announced, not a byte of it sent: the answer comes from the headers alone.
        for length in [10u64 << 30, (4 << 20) + 1] {
            let head = format!(
                "POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1\r\n\
                 content-type: application/x-protobuf\r\ncontent-length: {length}\r\n\r\n"
            );
            statuses.push(status_after_head(port, &head));
        }
        // A body within the bound is still read (and refused as no OTLP export).
        let head = "POST /v1/traces HTTP/1.1\r\nhost: 127.0.0.1\r\n\
                    content-type: application/x-protobuf\r\ncontent-length: 3\r\n\r\n\x7f\x7f\x7f";
        statuses.push(status_after_head(port, head));
    }
    crate::support::signal(&child, libc::SIGINT);
    let o = crate::support::wait_bounded(child, 60, "the run after SIGINT");
    assert!(listening, "the receiver never listened: {}", describe(&o));
    let too_large = Some("HTTP/1.1 413 Payload Too Large".to_string());
    let garbage = Some("HTTP/1.1 400 Bad Request".to_string());
    assert_eq!(statuses, [too_large.clone(), too_large, garbage]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
}

#[test]
fn a_dead_collector_warns_once_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let text = format!(
        r#"scenario "otlp-dead" {{ seed 3; }}
target "sim" {{ decode-base "2ms"; }}
{DATASET}
telemetry {{ otlp "{dead}"; }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 10
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots"]);
    assert!(o.status.success(), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["passed"], true);
    assert_eq!(crate::support::stage(&r, "s")["requests"]["ok"], 10);
    let warnings: Vec<&str> = r["telemetry"]["warnings"]
        .as_array()
        .expect("telemetry warnings")
        .iter()
        .filter_map(|w| w.as_str())
        .filter(|w| w.contains("OTLP export"))
        .collect();
    assert_eq!(warnings.len(), 1, "{r}");
}

#[test]
fn trace_context_can_be_switched_off() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"scenario "no-trace" {{ seed 4; }}
target "sim" {{ decode-base "2ms"; }}
{DATASET}
telemetry {{ trace-context #false; }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 4
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots", "--requests-jsonl"]);
    assert!(o.status.success(), "{}", describe(&o));
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    assert_eq!(rows.lines().count(), 4);
    assert!(!rows.contains("trace_id"), "{rows}");
}

/// A client span names the URL its request went to (a target of two URLs, round robin over
/// two simulators) and the model its label chose (a stage split between a model and an
/// adapter).
#[test]
fn each_span_names_the_url_its_request_went_to() {
    let collector = Collector::start();
    let (a, b) = (
        SimProcess::start(&["--decode-base", "1ms"]),
        SimProcess::start(&["--decode-base", "1ms"]),
    );
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"scenario "otlp-urls" {{ seed 1; }}
target {{ url "{a}"; url "{b}"; route "round-robin"; model "infermeter-sim"; }}
{DATASET}
telemetry {{ otlp "{collector}"; }}
stage "s" {{ dataset "d"; arrival "concurrency" clients=2; requests 8; }}
"#,
        a = a.base_url,
        b = b.base_url,
        collector = collector.url,
    );
    let path = scenario(dir.path(), "urls.kdl", &text);
    let o = run(&path, &dir.path().join("urls"), &["--no-plots"]);
    assert!(o.status.success(), "{}", describe(&o));
    wait_for(30, "8 client spans", || collector.spans().len() >= 8);
    let port = |url: &str| -> i64 {
        url.rsplit(':')
            .next()
            .unwrap()
            .trim_end_matches("/v1")
            .parse()
            .unwrap()
    };
    let mut ports: Vec<i64> = collector
        .spans()
        .iter()
        .map(|s| int(s, "server.port"))
        .collect();
    ports.sort_unstable();
    let mut want = vec![port(&a.base_url); 4];
    want.extend([port(&b.base_url); 4]);
    want.sort_unstable();
    assert_eq!(ports, want, "round robin: four requests to each URL");
}

#[test]
fn each_span_names_the_model_its_label_chose() {
    let models = Collector::start();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"scenario "otlp-models" {{ seed 2; }}
target "sim" {{ model "base"; adapters {{ lora-sql 1.5; }}; decode-base "1ms"; }}
{DATASET}
telemetry {{ otlp "{collector}"; }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 16
    model "base" weight=1
    model "lora-sql" weight=1
}}
"#,
        collector = models.url,
    );
    let path = scenario(dir.path(), "models.kdl", &text);
    let out = dir.path().join("models");
    let o = run(&path, &out, &["--no-plots", "--requests-jsonl"]);
    assert!(o.status.success(), "{}", describe(&o));
    wait_for(30, "16 client spans", || models.spans().len() >= 16);
    // Each span's model is its row's, by trace id.
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let model_of: HashMap<String, String> = rows
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|r| {
            (
                r["trace_id"].as_str().unwrap().to_string(),
                r["model"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let spans = models.spans();
    let named: HashSet<String> = spans
        .iter()
        .map(|s| string_attr(s, "gen_ai.request.model"))
        .collect();
    assert_eq!(
        named,
        HashSet::from(["base".to_string(), "lora-sql".to_string()])
    );
    for s in &spans {
        let model = &model_of[&hex(&s.trace_id)];
        assert_eq!(&string_attr(s, "gen_ai.request.model"), model);
        assert_eq!(s.name, format!("chat {model}"));
    }
}
