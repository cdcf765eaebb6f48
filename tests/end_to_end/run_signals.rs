//! SIGTERM (CI cancelling a job) in every phase of a run — model lookup, pool warm-up, stage,
//! drain, report — gives a valid, interrupted `results.json` and exit 3, soon after the signal
//! (asserted with a generous bound, never a tight one). And a run never leaves a previous
//! run's pass behind as if it were its own: not when it is killed, not when it cannot reach
//! its target.

#![cfg(unix)]

use std::path::Path;
use std::process::Child;

use crate::support::bad_server::{BadServer, Misbehaviour};
use crate::support::*;

fn against(url: &str, model: bool, stage: &str) -> String {
    let model = if model { "model \"m\";" } else { "" };
    format!(
        r#"
target "{url}" {{ {model} timeout "60s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 8; }} }}
stage "s" {{
    dataset "d"
    {stage}
}}
"#
    )
}

/// A run of the scenario [`against`] `server`, started and not waited for, writing `out` in
/// a temporary directory (`start_in`: the given directory and `out`).
struct Started {
    child: Child,
    out: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn start(server: &BadServer, model: bool, stage: &str) -> Started {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    start_in(dir, out, server, model, stage)
}

fn start_in(
    dir: tempfile::TempDir,
    out: std::path::PathBuf,
    server: &BadServer,
    model: bool,
    stage: &str,
) -> Started {
    let path = scenario(
        dir.path(),
        "s.kdl",
        &against(&server.base_url, model, stage),
    );
    Started {
        // `--force`: `out` may hold an earlier run's results, which the test means to replace.
        child: spawn_run(&path, &out, &["--force"]),
        out,
        _dir: dir,
    }
}

/// Sends `sig` and checks the run ends with exit 3 and an interrupted, finished result.
fn interrupt(child: Child, sig: i32, out: &Path, phase: &str) -> serde_json::Value {
    signal(&child, sig);
    let o = wait_bounded(child, 30, &format!("SIGTERM in the {phase}"));
    assert_eq!(o.status.code(), Some(3), "{phase}: {}", describe(&o));
    let r = results(out);
    assert_eq!(r["interrupted"], true, "{phase}: {r}");
    assert_eq!(r["passed"], false, "{phase}");
    assert_eq!(
        r["complete"], true,
        "{phase}: the interrupted result is final"
    );
    r
}

#[test]
fn sigterm_in_the_model_lookup() {
    let server = BadServer::start(Misbehaviour::Silent);
    let Started { child, out, _dir } =
        start(&server, false, "arrival \"constant\" rate=5\nrequests 5");
    wait_for(30, "the model lookup", || server.connections() >= 1);
    let r = interrupt(child, libc::SIGTERM, &out, "model lookup");
    assert_eq!(r["stages"].as_array().unwrap().len(), 0);
}

#[test]
fn sigterm_in_the_pool_warm_up() {
    let server = BadServer::start(Misbehaviour::ModelsOnce);
    let Started { child, out, _dir } =
        start(&server, false, "arrival \"constant\" rate=5\nrequests 5");
    wait_for(30, "the pool warm-up", || server.model_requests() >= 2);
    interrupt(child, libc::SIGTERM, &out, "pool warm-up");
    assert_eq!(
        server.chat_requests(),
        0,
        "no request was sent after the signal"
    );
}

#[test]
fn sigterm_in_a_stage() {
    let server = BadServer::start(Misbehaviour::StallChat);
    let Started { child, out, _dir } = start(
        &server,
        true,
        "arrival \"constant\" rate=10\nduration \"60s\"",
    );
    wait_for(30, "the stage", || server.chat_requests() >= 2);
    let r = interrupt(child, libc::SIGTERM, &out, "stage");
    let req = &stage(&r, "s")["requests"];
    assert_eq!(req["ok"], 0, "a stalled request is never a success: {req}");
    assert_eq!(req["sent"], req["failed"]);
}

#[test]
fn sigterm_in_the_drain() {
    let server = BadServer::start(Misbehaviour::HeadersThenNothing);
    let Started { child, out, _dir } = start(
        &server,
        true,
        "arrival \"constant\" rate=10\nrequests 1\ndrain-timeout \"60s\"",
    );
    // One request, sent at once: the stage is draining from then on.
    wait_for(30, "the drain", || server.chat_requests() >= 1);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let r = interrupt(child, libc::SIGTERM, &out, "drain");
    assert_eq!(stage(&r, "s")["requests"]["ok"], 0);
}

#[test]
fn sighup_in_a_stage() {
    let server = BadServer::start(Misbehaviour::StallChat);
    let Started { child, out, _dir } = start(
        &server,
        true,
        "arrival \"constant\" rate=10\nduration \"60s\"",
    );
    wait_for(30, "the stage", || server.chat_requests() >= 1);
    interrupt(child, libc::SIGHUP, &out, "stage (SIGHUP)");
}

#[test]
fn sigterm_while_writing_the_report() {
    // The step summary is a pipe nobody reads: appending to it blocks, as a hung file system
    // would.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("summary.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid, NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let path = scenario(
        dir.path(),
        "s.kdl",
        r#"
target "sim" { decode-base "1ms"; prefill-per-token "0ms"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 10; }
"#,
    );
    let out = dir.path().join("out");
    let child = command()
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .arg("--quiet")
        .env("GITHUB_STEP_SUMMARY", &fifo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The final results.json is written before the reports.
    wait_for(60, "the report phase", || {
        try_results(&out).is_some_and(|r| r["complete"] == true)
    });
    let r = interrupt(child, libc::SIGTERM, &out, "report");
    assert_eq!(
        stage(&r, "s")["requests"]["sent"],
        10,
        "what was measured is kept"
    );
    assert!(r["error"].as_str().unwrap().contains("report"), "{r}");
}

const PASSING: &str = r#"
target "sim" { decode-base "1ms"; prefill-per-token "0ms"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 6; }
"#;

/// A directory holding a passing run's outputs.
fn passed_before(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("out");
    let path = scenario(dir, "pass.kdl", PASSING);
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(results(&out)["passed"], true);
    assert!(out.join("report.md").is_file());
    out
}

#[test]
fn an_unreachable_target_leaves_no_stale_pass() {
    let dir = tempfile::tempdir().unwrap();
    let out = passed_before(dir.path());
    let path = scenario(
        dir.path(),
        "s.kdl",
        &against(
            &closed_port_url(),
            true,
            "arrival \"constant\" rate=5\nrequests 5",
        ),
    );
    // Over the passing run, as asked (without --force the directory would be refused).
    let o = run(&path, &out, &["--force"]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["passed"], false, "{r}");
    assert_eq!(r["complete"], false, "{r}");
    assert!(r["error"].as_str().unwrap().contains("cannot reach"), "{r}");
    assert!(!out.join("report.md").exists(), "the old report is gone");
    assert!(
        !out.join("junit.xml").exists(),
        "the old JUnit file is gone"
    );
    // Nor can it be taken for a baseline.
    let json = out.join("results.json");
    let o = infermeter(&["compare", json.to_str().unwrap(), json.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("did not finish"), "{}", describe(&o));
}

#[test]
fn a_killed_run_leaves_no_stale_pass() {
    let server = BadServer::start(Misbehaviour::StallChat);
    let dir = tempfile::tempdir().unwrap();
    let out = passed_before(dir.path());
    let Started { child, out, _dir } = start_in(
        dir,
        out,
        &server,
        true,
        "arrival \"constant\" rate=10\nduration \"60s\"",
    );
    wait_for(30, "the stage", || server.chat_requests() >= 1);
    signal(&child, libc::SIGKILL);
    let o = wait_bounded(child, 30, "SIGKILL");
    assert_eq!(o.status.code(), None, "killed");
    let r = results(&out);
    assert_eq!(r["passed"], false, "{r}");
    assert_eq!(r["complete"], false, "{r}");
    assert!(!out.join("report.md").exists());
}
