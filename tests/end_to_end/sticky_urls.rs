//! Sticky connections per URL: a round-robin route moves each session from URL to URL, turn
//! by turn, and the session keeps a connection of its own to each, so all of a session's turns
//! at one server come on one connection (two servers written for the test log which
//! connection each turn came on, by its session-affinity id).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::support::raw_server::{After, Post, RawServer, ok_response};
use crate::support::{describe, run, scenario};

type Log = Arc<Mutex<Vec<(String, usize)>>>;

fn server(log: &Log) -> RawServer {
    let log = log.clone();
    RawServer::start(true, move |p: &mut Post<'_>| {
        let id = p.header("x-session-id").unwrap_or_default();
        log.lock().unwrap().push((id, p.connection));
        p.read_body();
        if p.write(&ok_response("the answer", 4)) {
            After::KeepAlive
        } else {
            After::Close
        }
    })
}

#[test]
fn a_session_moved_between_urls_keeps_a_connection_to_each() {
    let (la, lb): (Log, Log) = Default::default();
    let (a, b) = (server(&la), server(&lb));
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "target {{\n    url \"{}\"\n    url \"{}\"\n    route \"round-robin\"\n    \
         model \"m\"\n    affinity-header \"x-session-id\"\n    timeout \"30s\"\n}}\n\
         dataset \"chat\" {{\n    synthetic {{ input-tokens 20; output-tokens 4 }}\n    \
         session turns=4 think-time=\"20ms\"\n}}\n\
         stage \"s\" {{ dataset \"chat\"; arrival \"concurrency\" clients=4; requests 8 }}\n",
        a.base_url, b.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--untrusted", "judge"]);
    assert!(o.status.success(), "{}", describe(&o));
    for log in [&la, &lb] {
        let mut by: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (id, connection) in log.lock().unwrap().iter() {
            by.entry(id.clone()).or_default().push(*connection);
        }
        assert_eq!(by.len(), 8, "every session reached both servers: {by:?}");
        for (id, connections) in &by {
            assert_eq!(connections.len(), 2, "{id}: {connections:?}");
            assert_eq!(
                connections[0], connections[1],
                "session {id} moved between connections: {connections:?}"
            );
        }
    }
}
