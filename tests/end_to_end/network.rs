//! `network { … }` in a target, through the real binary and the in-process simulator: the
//! shaping proxy's delay shows in TTFT as its round trip, its bandwidth cap bounds a long
//! answer, its draws follow the seed, a server's broken stream reaches the client as the same
//! error, and settings it cannot honour are refused before anything runs. Every timing bound
//! is one the emulated link guarantees (a lower bound), never how fast the machine is.

use crate::support::*;

/// A small, fast simulator target with `network` in it (or not, for `""`).
fn text(network: &str, seed: u64, extra_sim: &str, output_tokens: u32) -> String {
    format!(
        r#"
scenario "net" {{ seed {seed}; }}
target "sim" {{
    timeout "20s"
    decode-base "1ms"
    decode-per-seq "0ms"
    prefill-per-token "0us"
    {extra_sim}
    {network}
}}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens {output_tokens}; }} }}
stage "s" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 12
}}
"#
    )
}

/// Runs `text` with no SLA (exit 0 whatever the figures) and returns its results.
fn run_ok(text: &str) -> serde_json::Value {
    run_code(text, 0)
}

/// Runs `text`, expecting exit `code`, and returns its results.
fn run_code(text: &str, code: i32) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "net.kdl", text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(code), "{}", describe(&o));
    results(&out)
}

fn ttft_p50(r: &serde_json::Value) -> f64 {
    stage(r, "s")["latency"]["ttft_ms"]["p50"].as_f64().unwrap()
}

#[test]
fn a_one_way_delay_lifts_ttft_by_at_least_its_round_trip() {
    let plain = run_ok(&text("", 1, "", 8));
    let shaped = run_ok(&text("network { delay \"50ms\"; }", 1, "", 8));
    assert!(plain["target"].get("network").is_none());
    let n = &shaped["target"]["network"];
    // The request goes up and its first token comes down: 50 ms each way at the least.
    let (with, without) = (ttft_p50(&shaped), ttft_p50(&plain));
    assert!(with >= 100.0, "TTFT p50 {with} ms through a 50 ms link");
    assert!(
        without < with,
        "{without} ms without the link, {with} ms with it"
    );
    assert_eq!(n["shape"]["delay"], "50ms");
    assert!(n["planned_delay_mean_ms"].as_f64().unwrap() >= 50.0, "{n}");
    // Every request and answer went through it.
    let s = stage(&shaped, "s");
    assert_eq!(s["requests"]["ok"], 12);
    assert!(n["segments_up"].as_u64().unwrap() >= 12, "{n}");
    assert!(n["segments_down"].as_u64().unwrap() >= 12, "{n}");
    assert!(n["bytes_down"].as_u64().unwrap() > n["bytes_up"].as_u64().unwrap() / 10);
    assert!(
        n["overshoot_ms"]["max"].as_f64().unwrap() >= n["overshoot_ms"]["p50"].as_f64().unwrap()
    );
}

#[test]
fn a_bandwidth_cap_bounds_a_long_answer() {
    // 40 kbit/s is 5 000 bytes a second each way. Each streamed token is an SSE event of
    // far more than 50 bytes (`data: {"id":…,"choices":[{"delta":…}]}`), so 100 of them are
    // over 5 000 bytes: a second at the least, whatever the machine.
    let r = run_ok(&text("network bandwidth=\"40kbit\"", 2, "", 100));
    let s = stage(&r, "s");
    assert_eq!(s["requests"]["ok"], 12);
    let e2e_min = s["latency"]["e2e_ms"]["min"].as_f64().unwrap();
    assert!(
        e2e_min >= 1000.0,
        "E2E min {e2e_min} ms through a 40 kbit/s link"
    );
    let n = &r["target"]["network"];
    assert_eq!(n["shape"]["bandwidth"], "40kbit");
    assert!(n["bytes_down"].as_u64().unwrap() >= 12 * 5_000, "{n}");
}

#[test]
fn the_same_seed_draws_the_same_schedule() {
    let net = "network { delay \"5ms\" jitter=\"5ms\" loss=\"1%\" }";
    let a = run_ok(&text(net, 7, "", 4));
    let b = run_ok(&text(net, 7, "", 4));
    let c = run_ok(&text(net, 8, "", 4));
    let schedule = |r: &serde_json::Value| r["target"]["network"]["schedule"].clone();
    // Drawn by the lanes that ran, both ways: 32 hex digits, no way missing (`-`).
    assert!(schedule(&a).as_str().is_some_and(|s| s.len() == 32), "{a}");
    assert_eq!(schedule(&a), schedule(&b));
    assert_ne!(schedule(&a), schedule(&c));
    // The draws stay within what was asked: 5 ms and up to 5 ms more, a loss 200 ms more.
    let mean = a["target"]["network"]["planned_delay_mean_ms"]
        .as_f64()
        .unwrap();
    assert!(mean >= 5.0, "{mean}");
}

#[test]
fn a_broken_stream_fails_the_same_through_the_proxy() {
    let cut = "fault-stream-cut 1.0\n    seed 5";
    let errors = |network: &str| {
        // Every request failed: the stage measured nothing, which fails the run.
        let r = run_code(&text(network, 3, cut, 16), 1);
        let s = stage(&r, "s");
        assert_eq!(s["requests"]["failed"], 12, "{}", s["requests"]);
        s["requests"]["errors"].clone()
    };
    let plain = errors("");
    let shaped = errors("network delay=\"10ms\"");
    assert_eq!(plain, shaped);
    assert!(plain.get("stream_broken").is_some(), "{plain}");
}

#[test]
fn a_stalled_server_times_out_the_same_through_the_proxy() {
    // The server stalls every answer far past the request's timeout: the client gives up and
    // closes, and the proxy must let go of both sides rather than hold the run.
    let stall = "fault-stall 1.0\n    stall-duration \"30s\"\n    seed 5";
    let errors = |network: &str| {
        let body = text(network, 3, stall, 8)
            .replace("timeout \"20s\"", "timeout \"1s\"")
            .replace("requests 12", "requests 4");
        let r = run_code(&body, 1);
        let s = stage(&r, "s");
        assert_eq!(s["requests"]["failed"], 4, "{}", s["requests"]);
        s["requests"]["errors"].clone()
    };
    let plain = errors("");
    let shaped = errors("network delay=\"10ms\"");
    assert_eq!(plain, shaped);
    assert!(plain.get("timeout").is_some(), "{plain}");
}

#[test]
fn settings_the_proxy_cannot_honour_are_refused_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("network delay=\"90s\"", "`delay` too long"),
        ("network loss=\"60%\"", "`loss` too high"),
        ("network bandwidth=\"0Mbit\"", "invalid `bandwidth`"),
        (
            "network { jitter \"fast\"; }",
            "invalid duration for `jitter`",
        ),
        ("network { }", "`network` sets nothing"),
    ];
    for (i, (network, message)) in cases.into_iter().enumerate() {
        let path = scenario(dir.path(), &format!("bad{i}.kdl"), &text(network, 1, "", 4));
        let o = infermeter(&["validate", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{network}: {}", describe(&o));
        let (_, err) = support_text(&o);
        assert!(err.contains(message), "{network}: {err}");
        // The file and the line of the setting (line 9 of `text`).
        assert!(err.contains(&format!("bad{i}.kdl:9:")), "{network}: {err}");
    }
    let https = text("network delay=\"5ms\"", 1, "", 4)
        .replace("target \"sim\"", "target \"https://example.com/v1\"");
    let https = https.replace(
        "decode-base \"1ms\"\n    decode-per-seq \"0ms\"\n    prefill-per-token \"0us\"",
        "",
    );
    let path = scenario(dir.path(), "https.kdl", &https);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        support_text(&o)
            .1
            .contains("network shaping needs an http target")
    );
    // The command line's --url cannot bring https in either.
    let path = scenario(
        dir.path(),
        "ok.kdl",
        &text("network delay=\"5ms\"", 1, "", 4),
    );
    let o = infermeter(&[
        "run",
        path.to_str().unwrap(),
        "--url",
        "https://example.com/v1",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        support_text(&o)
            .1
            .contains("network shaping needs an http target")
    );
}

#[test]
fn an_unreachable_server_behind_the_proxy_stops_the_run_naming_its_url() {
    let dir = tempfile::tempdir().unwrap();
    let url = closed_port_url();
    let body = text("network delay=\"5ms\"", 1, "", 4)
        .replace("target \"sim\"", &format!("target \"{url}\""))
        .replace(
            "decode-base \"1ms\"\n    decode-per-seq \"0ms\"\n    prefill-per-token \"0us\"",
            "",
        );
    let path = scenario(dir.path(), "gone.kdl", &body);
    let o = run(&path, &dir.path().join("out"), &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    // The error names the server the user wrote, not the proxy's loopback port.
    let err = support_text(&o).1;
    assert!(err.contains(&url), "{err}");
}

/// SIGTERM while every request is held by a server that never answers, through the proxy:
/// the run still ends soon with an interrupted result that accounts for the proxy.
#[cfg(unix)]
#[test]
fn sigterm_through_the_proxy_ends_the_run_with_its_result() {
    use crate::support::bad_server::{BadServer, Misbehaviour};
    let server = BadServer::start(Misbehaviour::HeadersThenNothing);
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        r#"
target "{}" {{
    model "m"
    timeout "60s"
    network delay="5ms"
}}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 8; }} }}
stage "s" {{ dataset "d"; arrival "constant" rate=10; duration "60s"; }}
"#,
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &body);
    let out = dir.path().join("out");
    let child = spawn_run(&path, &out, &[]);
    wait_for(30, "the stage", || server.chat_requests() >= 2);
    signal(&child, libc::SIGTERM);
    let o = wait_bounded(child, 30, "SIGTERM through the proxy");
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["interrupted"], true, "{r}");
    assert_eq!(stage(&r, "s")["requests"]["ok"], 0);
    let n = &r["target"]["network"];
    assert!(n["connections"].as_u64().unwrap() >= 2, "{n}");
    // The server's URL, not the proxy's, is the endpoint shown.
    assert_eq!(r["target"]["endpoint"], server.base_url.as_str());
}

/// stdout and stderr as text.
fn support_text(o: &std::process::Output) -> (String, String) {
    crate::support::text(o)
}
