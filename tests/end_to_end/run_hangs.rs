//! No hang, whatever the server: a server that accepts and never answers, one that stops
//! answering after the model lookup, and a report template that loops forever all end the
//! run by themselves (within the target's timeout plus a margin, asserted here only as "it
//! ended at all", with a bound generous enough for a busy machine).

use crate::support::bad_server::{BadServer, Misbehaviour};
use crate::support::*;

fn stage_against(url: &str, model: Option<&str>, timeout: &str, stage: &str) -> String {
    let model = model.map_or(String::new(), |m| format!("model \"{m}\";"));
    format!(
        r#"
target "{url}" {{ {model} timeout "{timeout}"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 8; }} }}
stage "s" {{
    dataset "d"
    {stage}
}}
"#
    )
}

#[test]
fn a_server_that_never_answers_fails_the_model_lookup_after_the_timeout() {
    let server = BadServer::start(Misbehaviour::Silent);
    let dir = tempfile::tempdir().unwrap();
    let kdl = stage_against(
        &server.base_url,
        None,
        "2s",
        "arrival \"constant\" rate=5\nrequests 5",
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = wait_bounded(
        spawn_run(&path, &out, &[]),
        60,
        "run against a silent server",
    );
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("did not answer"), "{stderr}");
    assert!(stderr.contains("2s"), "{stderr}");
    // The directory says the run did not finish, and why.
    let r = results(&out);
    assert_eq!(r["complete"], false);
    assert_eq!(r["passed"], false);
    assert!(
        r["error"].as_str().unwrap().contains("did not answer"),
        "{r}"
    );
    assert!(server.connections() >= 1);
}

#[test]
fn a_server_that_stalls_the_pool_warm_up_does_not_stall_the_run() {
    // The model lookup is answered; the warm-up's connections are not, nor is chat.
    let server = BadServer::start(Misbehaviour::ModelsOnce);
    let dir = tempfile::tempdir().unwrap();
    let kdl = stage_against(
        &server.base_url,
        None,
        "2s",
        "arrival \"constant\" rate=5\nrequests 2",
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = wait_bounded(
        spawn_run(&path, &out, &[]),
        60,
        "run with a stalled warm-up",
    );
    let r = results(&out);
    assert_eq!(r["complete"], true, "{}", describe(&o));
    let s = stage(&r, "s");
    // Every request timed out: the run ended, and nothing counts as a success.
    assert_eq!(s["requests"]["sent"], 2, "{s}");
    assert_eq!(s["requests"]["ok"], 0, "{s}");
    assert!(server.model_requests() >= 2, "the warm-up asked");
}

#[test]
fn headers_then_nothing_ends_each_request_at_the_timeout() {
    let server = BadServer::start(Misbehaviour::HeadersThenNothing);
    let dir = tempfile::tempdir().unwrap();
    let kdl = stage_against(
        &server.base_url,
        Some("m"),
        "2s",
        "arrival \"concurrency\" clients=2\nrequests 2",
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let out = dir.path().join("out");
    let o = wait_bounded(
        spawn_run(&path, &out, &[]),
        60,
        "run against a stalled stream",
    );
    let r = results(&out);
    assert_eq!(r["complete"], true, "{}", describe(&o));
    assert_eq!(stage(&r, "s")["requests"]["ok"], 0);
    assert!(server.chat_requests() >= 2);
}

#[test]
fn a_report_template_that_loops_forever_is_stopped_before_the_run() {
    let server = BadServer::start(Misbehaviour::StallChat);
    let dir = tempfile::tempdir().unwrap();
    let kdl = stage_against(
        &server.base_url,
        Some("m"),
        "2s",
        "arrival \"constant\" rate=5\nrequests 1",
    );
    let path = scenario(dir.path(), "s.kdl", &kdl);
    let template = dir.path().join("loop.md.j2");
    std::fs::write(
        &template,
        "{% for a in range(100000) %}{% for b in range(100000) %}.{% endfor %}{% endfor %}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let t = template.to_str().unwrap();
    let o = wait_bounded(
        spawn_run(&path, &out, &["--template", t]),
        120,
        "looping template",
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("fuel"), "{stderr}");
    assert!(stderr.contains("loop.md.j2"), "{stderr}");
    assert_eq!(
        server.connections(),
        0,
        "no request before the template is known good"
    );
}
