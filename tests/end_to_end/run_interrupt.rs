//! Ctrl-C (SIGINT to the child) stops sending, keeps what was measured, writes a result marked
//! interrupted, and exits 3.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::*;

#[test]
#[cfg(unix)]
fn sigint_yields_an_interrupted_result_that_parses() {
    let dir = tempfile::tempdir().unwrap();
    let text = r#"
target "sim" { decode-base "2ms"; prefill-per-token "0ms"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 8; } }
stage "long" {
    dataset "d"
    arrival "constant" rate=20
    duration "60s"
}
stage "never" {
    dataset "d"
    arrival "concurrency" clients=1
    requests 5
}
"#;
    let path = scenario(dir.path(), "s.kdl", text);
    let out = dir.path().join("out");
    let mut child = Command::new(bin())
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .arg("--progress-lines")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once stage `long` has run for its first progress line (5 s in), not after a
    // fixed 2 s: on a loaded machine the preflight alone may take that long.
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let started = Instant::now();
    loop {
        let left = Duration::from_secs(120).saturating_sub(started.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) if line.starts_with("[long] ") => break,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                panic!("no progress line of stage `long` within 120 s: {e}");
            }
        }
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the run did not stop within 30 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(3));
    let r = results(&out);
    assert_eq!(r["interrupted"], true);
    assert_eq!(r["passed"], false);
    let stages = r["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1, "the second stage never started");
    let req = &stages[0]["requests"];
    let sent = req["sent"].as_u64().unwrap();
    assert!(sent > 5 && sent < 1200, "sent {sent}");
    assert_eq!(
        sent,
        req["ok"].as_u64().unwrap() + req["failed"].as_u64().unwrap()
    );
}
