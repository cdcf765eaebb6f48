//! Several target URLs end to end: the real binary against two simulators in their own
//! processes, each with its own prefix cache and reading the session-affinity header. A
//! by-session route keeps each session on one simulator (so each turn finds its history
//! cached there) and a round-robin one moves it from simulator to simulator; results,
//! requests.jsonl, the reports and the simulators' own counters all say where requests went.
//! A dead URL is named (masked) before anything is measured, and no URL's credentials reach
//! any file or line.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::support::{SimProcess, closed_port_url, describe, results, run, scenario};

const SESSIONS: u64 = 8;
const TURNS: u64 = 4;

fn two_sims() -> (SimProcess, SimProcess) {
    let args = [
        "--prefix-cache",
        "--session-header",
        "x-session-id",
        "--decode-base",
        "1ms",
        "--jitter",
        "0",
    ];
    (SimProcess::start(&args), SimProcess::start(&args))
}

fn target(a: &str, b: &str, route: &str) -> String {
    format!(
        "target {{\n    url \"{a}\"\n    url \"{b}\"\n    route \"{route}\"\n    \
         affinity-header \"x-session-id\"\n    timeout \"30s\"\n}}\n"
    )
}

const WORKLOAD: &str = r#"
dataset "chat" {
    synthetic { input-tokens 160; output-tokens 16 }
    session turns=4
}
stage "s" { dataset "chat"; arrival "concurrency" clients=2; requests 8 }
"#;

/// `GET /metrics` of a simulator: its affinity counters by name.
fn metrics(base_url: &str) -> BTreeMap<String, f64> {
    crate::support::scrape::metrics(base_url, "infermeter_sim_affinity")
}

fn rows(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One run of the workload over two fresh simulators: (results, rows, the simulators'
/// counters, stdout).
fn routed(route: &str) -> (Value, Vec<Value>, [BTreeMap<String, f64>; 2], String) {
    let (a, b) = two_sims();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "scenario \"routers\" {{ seed 5 }}\n{}{WORKLOAD}",
        target(&a.base_url, &b.base_url, route)
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl", "--untrusted", "judge"]);
    assert!(o.status.success(), "{}", describe(&o));
    let counters = [metrics(&a.base_url), metrics(&b.base_url)];
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let csv = std::fs::read_to_string(out.join("urls.csv")).unwrap();
    assert!(csv.starts_with("stage,url_index,url,sent,"), "{csv}");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    for sim in [&a, &b] {
        assert!(report.contains(&format!("`{}`", sim.base_url)), "{report}");
        assert!(csv.contains(&format!(",{},", sim.base_url)), "{csv}");
    }
    (results(&out), rows(&out), counters, stdout)
}

fn cached_share(r: &Value) -> f64 {
    r["stages"][0]["tokens"]["cached_share"].as_f64().unwrap()
}

/// Every per-URL entry adds up to the stage, and each simulator counted the requests it got.
fn check_split(r: &Value, counters: &[BTreeMap<String, f64>; 2]) {
    let stage = &r["stages"][0];
    let sent = stage["requests"]["sent"].as_u64().unwrap();
    assert_eq!(sent, SESSIONS * TURNS);
    let per_url = stage["per_url"].as_array().unwrap();
    assert_eq!(per_url.len(), 2, "{stage}");
    for (k, u) in per_url.iter().enumerate() {
        assert_eq!(u["url"].as_u64(), Some(k as u64));
        assert_eq!(u["failed"].as_u64(), Some(0));
        assert!(u["sent"].as_u64().unwrap() > 0, "{u}");
        assert_eq!(u["ttft_ms"]["count"], u["ok"]);
        // What the simulator behind URL k counted is what the client says it sent there.
        let carried = counters[k]["infermeter_sim_affinity_requests_total"];
        assert_eq!(carried as u64, u["sent"].as_u64().unwrap(), "{counters:?}");
    }
    let total: u64 = per_url.iter().map(|u| u["sent"].as_u64().unwrap()).sum();
    assert_eq!(total, sent);
    assert_eq!(r["target"]["affinity_header"], "x-session-id");
    assert_eq!(r["target"]["routes"]["urls"].as_array().unwrap().len(), 2);
}

/// The URL each session's turns went to, in turn order.
fn urls_by_session(rows: &[Value]) -> BTreeMap<u64, Vec<(u64, u64)>> {
    let mut by: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for r in rows {
        let turn = r["turn"].as_u64().unwrap();
        by.entry(r["index"].as_u64().unwrap())
            .or_default()
            .push((turn, r["url"].as_u64().unwrap()));
    }
    for v in by.values_mut() {
        v.sort();
    }
    by
}

#[test]
fn by_session_routing_keeps_each_session_cached_on_its_replica_and_round_robin_does_not() {
    let (sticky, sticky_rows, sticky_counts, stdout) = routed("by-session");
    check_split(&sticky, &sticky_counts);
    assert!(stdout.contains("    → http://127.0.0.1:"), "{stdout}");
    for (s, turns) in urls_by_session(&sticky_rows) {
        assert_eq!(turns.len() as u64, TURNS, "session {s}");
        assert!(
            turns.iter().all(|t| t.1 == turns[0].1),
            "session {s}: {turns:?}"
        );
    }
    // Each session was seen at one simulator only.
    let seen: f64 = sticky_counts
        .iter()
        .map(|c| c["infermeter_sim_affinity_sessions"])
        .sum();
    assert_eq!(seen as u64, SESSIONS, "{sticky_counts:?}");

    let (spread, spread_rows, spread_counts, _) = routed("round-robin");
    check_split(&spread, &spread_counts);
    for (s, turns) in urls_by_session(&spread_rows) {
        for (turn, url) in turns {
            assert_eq!(url, (s + turn) % 2, "session {s} turn {turn}");
        }
    }
    // Each session's turns alternate: both simulators saw every session.
    for c in &spread_counts {
        assert_eq!(c["infermeter_sim_affinity_sessions"] as u64, SESSIONS);
    }
    // The history of a session's last turn is cached only where it went: one simulator per
    // session keeps all of it, alternating keeps only what came two turns back.
    let (kept, lost) = (cached_share(&sticky), cached_share(&spread));
    assert!(kept > lost + 0.1, "by-session {kept}, round-robin {lost}");
}

#[test]
fn a_dead_url_is_named_masked_before_the_run_starts() {
    let (a, _b) = two_sims();
    let dead = closed_port_url();
    let port = dead.rsplit(':').next().unwrap().trim_end_matches("/v1");
    let secret = format!("http://ops:hunter2@127.0.0.1:{port}/v1?api_key=sekrit123456");
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "target {{\n    url \"{}\"\n    url \"{secret}\"\n}}\n{WORKLOAD}",
        a.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert!(!o.status.success(), "{}", describe(&o));
    let all = describe(&o);
    assert!(all.contains(&format!("127.0.0.1:{port}")), "{all}");
    assert!(
        all.contains("URL 1 of the target's 2 is not ready"),
        "{all}"
    );
    assert!(
        !all.contains("hunter2") && !all.contains("sekrit123456"),
        "{all}"
    );
    assert_no_secret_in(&out);
}

#[test]
fn credentials_in_a_url_reach_no_file_and_no_line() {
    let (a, b) = two_sims();
    let with_secret = b.base_url.replacen("http://", "http://ops:hunter2@", 1);
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "target {{\n    url \"{}\"\n    url \"{with_secret}?api_key=sekrit123456\" \
         weight=2\n    route \"by-weight\"\n}}\n{WORKLOAD}",
        a.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let plan = crate::support::infermeter(&["plan", path.to_str().unwrap()]);
    assert!(plan.status.success(), "{}", describe(&plan));
    let shown = describe(&plan);
    assert!(shown.contains("(weight 2)"), "{shown}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("sekrit123456"),
        "{shown}"
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--requests-jsonl", "--untrusted", "judge"]);
    assert!(o.status.success(), "{}", describe(&o));
    let all = describe(&o);
    assert!(
        !all.contains("hunter2") && !all.contains("sekrit123456"),
        "{all}"
    );
    assert_no_secret_in(&out);
    let r = results(&out);
    let per_url = r["stages"][0]["per_url"].as_array().unwrap();
    assert_eq!(per_url.len(), 2, "{r}");
    // Requests went through the URL with credentials too (reqwest's path, which sends them).
    assert!(per_url[1]["ok"].as_u64().unwrap() > 0, "{r}");
}

/// No file of `out` holds the password or the query secret.
fn assert_no_secret_in(out: &Path) {
    let Ok(entries) = std::fs::read_dir(out) else {
        return;
    };
    for e in entries {
        let path = e.unwrap().path();
        let bytes = std::fs::read(&path).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("hunter2") && !text.contains("sekrit123456"),
            "{} holds a secret",
            path.display()
        );
    }
}

#[test]
fn wait_takes_every_url_of_a_target_and_names_the_one_not_ready() {
    let (a, b) = two_sims();
    let ok = crate::support::infermeter(&["wait", &a.base_url, &b.base_url, "--timeout", "60s"]);
    assert!(ok.status.success(), "{}", describe(&ok));
    let stdout = String::from_utf8_lossy(&ok.stdout);
    for sim in [&a, &b] {
        assert!(
            stdout.contains(&format!("ready: {}", sim.base_url)),
            "{stdout}"
        );
    }
    let dead = closed_port_url().replacen("http://", "http://ops:hunter2@", 1);
    let o = crate::support::infermeter(&[
        "wait",
        &a.base_url,
        &dead,
        "--timeout",
        "2s",
        "--interval",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let all = describe(&o);
    let port = dead.rsplit(':').next().unwrap();
    assert!(all.contains(&format!("127.0.0.1:{port}")), "{all}");
    assert!(!all.contains("hunter2"), "{all}");
}

#[test]
fn a_sessions_turns_share_one_connection_and_carry_one_id() {
    use crate::support::raw_server::{After, Post, RawServer, ok_response};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = RawServer::start(true, move |p: &mut Post<'_>| {
        let id = p.header("x-session-id").unwrap_or_default();
        log.lock().unwrap().push((id, p.connection));
        p.read_body();
        if p.write(&ok_response("the answer", 4)) {
            After::KeepAlive
        } else {
            After::Close
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "target \"{}\" {{ model \"m\"; affinity-header \"x-session-id\"; timeout \"30s\" }}\n\
         dataset \"chat\" {{\n    synthetic {{ input-tokens 20; output-tokens 4 }}\n    \
         session turns=3 think-time=\"30ms\"\n}}\n\
         stage \"s\" {{ dataset \"chat\"; arrival \"concurrency\" clients=4; requests 8 }}\n",
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--untrusted", "judge"]);
    assert!(o.status.success(), "{}", describe(&o));
    // One URL: no per-URL file.
    assert!(!out.join("urls.csv").exists());
    let mut by: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (id, connection) in seen.lock().unwrap().iter() {
        by.entry(id.clone()).or_default().push(*connection);
    }
    assert_eq!(by.len(), 8, "{by:?}");
    for (id, connections) in &by {
        assert_eq!(id.len(), 16, "{id}");
        assert_eq!(connections.len(), 3, "{id}: {connections:?}");
        assert!(
            connections.iter().all(|c| *c == connections[0]),
            "session {id} moved between connections: {connections:?}"
        );
    }
}
