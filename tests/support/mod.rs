//! Helpers every test binary shares: running the real `infermeter` binary (scenario files in
//! a temp dir, a simulator in its own process, results parsing) and, in [`sim`], an
//! in-process simulator with a plain HTTP client.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

pub mod bad_server;
pub mod hostile_server;
pub mod peer;
pub mod raw_server;
pub mod scrape;
pub mod sim;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_infermeter")
}

/// The binary as every test runs it: from the repository root, without colour, and without
/// GitHub's step summary (a CI run of the tests must not append reports to it).
pub fn command() -> Command {
    let mut c = Command::new(bin());
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_STEP_SUMMARY");
    c
}

/// `infermeter ARGS…`, waited for.
pub fn infermeter(args: &[&str]) -> Output {
    command().args(args).output().expect("the binary runs")
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Writes `text` as `name` in `dir` and returns its path.
pub fn scenario(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write scenario");
    path
}

/// The shipped scenario `example` (a path from the repository's root) with each `from`
/// replaced by its `to`, written into `dir` under its own file name.
pub fn example_variant(dir: &Path, example: &str, edits: &[(&str, &str)]) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(example);
    let mut text = std::fs::read_to_string(&path).expect("read the example");
    for (from, to) in edits {
        assert!(text.contains(from), "{example} has no `{from}`");
        text = text.replace(from, to);
    }
    let name = path.file_name().expect("a file name").to_string_lossy();
    scenario(dir, &name, &text)
}

/// `infermeter run SCENARIO --out DIR --quiet` plus `extra`.
///
/// Untrusted stages are judged on their numbers (`--untrusted judge`) unless `extra` says
/// otherwise: a loaded test machine flags the client's send lag, which is not what most tests
/// are about, and must not turn their verdicts inconclusive.
pub fn run(scenario: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut c = command();
    c.arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .args(extra);
    if !extra.contains(&"--untrusted") {
        c.args(["--untrusted", "judge"]);
    }
    c.output().expect("run the binary")
}

pub fn results(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("results.json")).expect("results.json exists");
    serde_json::from_str(&text).expect("results.json parses")
}

pub fn stage<'a>(results: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    results["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("stage {name} in results"))
}

pub fn describe(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A simulator in its own process; killed when dropped.
pub struct SimProcess {
    pub child: Child,
    pub base_url: String,
}

impl SimProcess {
    pub fn start(args: &[&str]) -> SimProcess {
        let mut child = Command::new(bin())
            .args(["sim", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start infermeter sim");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("sim prints its address");
        let start = line.find("http://").expect("address in start line");
        let base_url = line[start..]
            .split_whitespace()
            .next()
            .expect("url")
            .to_string();
        SimProcess { child, base_url }
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `infermeter run SCENARIO --out DIR --quiet` plus `extra`, started and not waited for.
pub fn spawn_run(scenario: &Path, out: &Path, extra: &[&str]) -> Child {
    command()
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start infermeter run")
}

/// Waits for `child` to exit, at most `secs` (a generous bound against a busy machine, not a
/// timing claim): killed and reported as a hang past it. Returns its output.
pub fn wait_bounded(mut child: Child, secs: u64, what: &str) -> Output {
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().expect("wait for the child").is_some() {
            return child.wait_with_output().expect("collect the output");
        }
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            let _ = child.kill();
            let o = child.wait_with_output().expect("collect the output");
            panic!("{what}: still running after {secs} s\n{}", describe(&o));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Polls `cond` until it holds, at most `secs`; panics naming `what` past that.
pub fn wait_for(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(secs),
            "{what}: not within {secs} s"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Sends `signal` (`libc::SIGTERM`, …) to `child`.
#[cfg(unix)]
pub fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped yet.
    let rc = unsafe { libc::kill(child.id() as i32, signal) };
    assert_eq!(rc, 0, "kill({}, {signal})", child.id());
}

/// `results.json` of `out`, when it exists and parses (a run may be writing it).
pub fn try_results(out: &Path) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(out.join("results.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// A URL on 127.0.0.1 where nothing listens.
pub fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("address").port();
    drop(l);
    format!("http://127.0.0.1:{port}/v1")
}
