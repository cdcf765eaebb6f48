//! A scenario's `server { … }` block through the real binary (docs/server.md): infermeter
//! starts the server (here `infermeter sim` itself, or a small `sh` script around it), waits
//! for it, runs, and stops it; and each way a server goes wrong ends the run with exit 3 and
//! the server's own last lines, with no process of it left behind. No timing is asserted: the
//! bounds below are generous hangs, not claims.

use std::path::Path;

use crate::support::{bin, describe, run, scenario, text};

/// A port nothing listens on now (the way `closed_port_url` picks one).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("address").port()
}

/// The simulator's command line on `port`, as one shell word list.
fn sim_line(port: u16) -> String {
    format!("{} sim --listen 127.0.0.1:{port} --model sim-model", bin())
}

/// A scenario whose target is `port` and whose `server` block is `server` (its children).
fn with_server(dir: &Path, port: u16, server: &str, stage: &str) -> std::path::PathBuf {
    scenario(
        dir,
        "scenario.kdl",
        &format!(
            "target \"http://127.0.0.1:{port}/v1\" {{ model \"sim-model\"; }}\n\
             server {{\n{server}\n}}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"poisson\" rate=20; {stage} }}\n"
        ),
    )
}

/// Whether a process `pid` exists (`kill -0`).
fn alive(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 sends nothing; it only asks whether the pid exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// The server's pid as results.json records it.
fn server_pid(out: &Path) -> i32 {
    let r = crate::support::results(out);
    r["provenance"]["started_server"]["pid"]
        .as_i64()
        .unwrap_or_else(|| panic!("no started_server.pid in {r}")) as i32
}

/// `pid` is gone within a while (it may be a zombie being reaped by init for a moment).
fn gone(pid: i32, what: &str) {
    crate::support::wait_for(10, what, || !alive(pid));
}

#[test]
fn server_started_by_the_run_is_ready_runs_and_is_gone_after() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let command = format!(
        "command \"infermeter\" \"sim\" \"--listen\" \"127.0.0.1:{port}\" \"--model\" \"sim-model\"\ntimeout \"60s\""
    );
    let path = with_server(dir.path(), port, &command, "requests 20;");
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = crate::support::results(&out);
    let started = &r["provenance"]["started_server"];
    assert_eq!(started["command"][0], "infermeter", "{started}");
    assert!(started["startup_ms"].as_f64().unwrap() > 0.0, "{started}");
    assert_eq!(started["stopped"], "stopped", "{started}");
    assert_eq!(crate::support::stage(&r, "s")["requests"]["ok"], 20);
    gone(server_pid(&out), "the server is stopped after the run");
    let log = std::fs::read_to_string(out.join("server.log")).unwrap();
    assert!(log.contains("infermeter sim listening"), "{log}");
    let (stdout, _) = text(&o);
    assert!(stdout.contains("server:  infermeter sim"), "{stdout}");
    // The report says what was started and how long it took to be ready, as the terminal does.
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| started server |"))
        .unwrap_or_else(|| panic!("no started-server row in report.md:\n{md}"));
    assert!(
        row.contains("`infermeter sim --listen")
            && row.contains("ready in")
            && row.contains("stopped"),
        "{row}"
    );
}

#[test]
fn server_that_crashes_at_start_ends_the_run_with_its_own_words() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = "command \"sh\" \"-c\" \"echo boom >&2; exit 1\"";
    let path = with_server(dir.path(), port, server, "requests 5;");
    let o = run(&path, &dir.path().join("out"), &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains("exited (exit code 1) before it was ready"),
        "{stderr}"
    );
    assert!(stderr.contains("boom"), "{stderr}");
}

#[test]
fn server_never_ready_times_out_and_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let pid_file = dir.path().join("pid");
    let server = format!(
        "command \"sh\" \"-c\" \"echo $$ > {}; exec sleep 600\"\ntimeout \"1s\"\nstop grace=\"1s\"",
        pid_file.display()
    );
    let path = with_server(dir.path(), port, &server, "requests 5;");
    let o = run(&path, &dir.path().join("out"), &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("was not ready after"), "{stderr}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    gone(pid, "the `sleep` that never got ready is gone");
}

#[test]
fn server_dying_mid_run_fails_it_with_its_last_lines_and_keeps_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // The simulator serves until its trace shows a finished request (the run is under way,
    // however slow the machine), then the wrapper kills it and exits as a crashed engine.
    let trace = dir.path().join("trace.jsonl");
    let server = format!(
        "command \"sh\" \"-c\" \"{} --trace {t} & while [ ! -s {t} ]; do sleep 0.1; done; \
         echo 'engine crashed: CUDA error' >&2; kill -9 $!; exit 9\"\ntimeout \"60s\"",
        sim_line(port),
        t = trace.display()
    );
    let path = with_server(dir.path(), port, &server, "duration \"10m\";");
    let out = dir.path().join("out");
    let child = crate::support::spawn_run(&path, &out, &["--no-plots"]);
    let o = crate::support::wait_bounded(child, 120, "a run whose server died");
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains("the server exited (exit code 9) during the run"),
        "{stderr}"
    );
    assert!(stderr.contains("engine crashed: CUDA error"), "{stderr}");
    let r = crate::support::results(&out);
    assert_eq!(r["passed"], false, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("engine crashed"),
        "{}",
        r["error"]
    );
    assert_eq!(r["provenance"]["started_server"]["stopped"], "exited");
    assert!(
        crate::support::stage(&r, "s")["requests"]["sent"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn server_ignoring_its_stop_signal_is_killed_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // An ignored signal stays ignored across exec: the simulator itself ignores SIGTERM.
    let server = format!(
        "command \"sh\" \"-c\" \"trap '' TERM; exec {}\"\nstop signal=\"SIGTERM\" grace=\"1s\"",
        sim_line(port)
    );
    let path = with_server(dir.path(), port, &server, "requests 5;");
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = crate::support::results(&out);
    assert_eq!(
        r["provenance"]["started_server"]["stopped"], "killed",
        "{r}"
    );
    gone(
        server_pid(&out),
        "the server that ignored SIGTERM is killed",
    );
    let log = std::fs::read_to_string(out.join("server.log")).unwrap();
    assert!(log.contains("killing it"), "{log}");
}

#[test]
fn server_program_that_does_not_exist_is_invalid_at_validate() {
    let dir = tempfile::tempdir().unwrap();
    let path = with_server(
        dir.path(),
        free_port(),
        "command \"no-such-server-program\" \"serve\"",
        "requests 5;",
    );
    let o = crate::support::infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    let said = format!("{stdout}{stderr}");
    assert!(
        said.contains("`no-such-server-program` is not found"),
        "{said}"
    );
    assert!(said.contains("scenario.kdl:3:"), "{said}");
    let o = run(&path, &dir.path().join("out"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
}

#[test]
fn server_port_already_in_use_is_refused_before_starting() {
    let dir = tempfile::tempdir().unwrap();
    let other = crate::support::SimProcess::start(&[]);
    let port: u16 = other
        .base_url
        .trim_end_matches("/v1")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let server = format!("command \"sh\" \"-c\" \"exec {}\"", sim_line(port));
    let path = with_server(dir.path(), port, &server, "requests 5;");
    let o = run(&path, &dir.path().join("out"), &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("already answers at 127.0.0.1:"), "{stderr}");
}

#[test]
fn server_secret_passed_by_reference_is_masked_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let secret = "srv-ref-9f8e7d6c5b4a3210";
    // The server prints what it was given, and is told it on its command line's environment.
    let server = format!(
        "command \"sh\" \"-c\" \"echo token=$HF_TOKEN; echo token=$HF_TOKEN >&2; exec {}\"\nenv \"HF_TOKEN\" env=\"IM_SRV_REF\"\nenv \"PLAIN\" \"visible\"",
        sim_line(port)
    );
    let path = with_server(dir.path(), port, &server, "requests 5;");
    let out = dir.path().join("out");
    let o = crate::support::command()
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--no-plots", "--untrusted", "judge"])
        .env("IM_SRV_REF", secret)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let log = std::fs::read_to_string(out.join("server.log")).unwrap();
    assert!(log.contains("token="), "{log}");
    for entry in std::fs::read_dir(&out).unwrap() {
        let p = entry.unwrap().path();
        let t = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(!t.contains(secret), "{} shows the secret", p.display());
    }
    let (stdout, stderr) = text(&o);
    assert!(!stdout.contains(secret) && !stderr.contains(secret));
}

/// The pid `server.log`'s first line gives (`[infermeter: started pid N, …]`), once written.
fn logged_pid(out: &Path) -> Option<i32> {
    let log = std::fs::read_to_string(out.join("server.log")).ok()?;
    let rest = log
        .lines()
        .next()?
        .strip_prefix("[infermeter: started pid ")?;
    rest.split(',').next()?.parse().ok()
}

#[test]
fn server_is_stopped_when_the_run_is_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    // Ready when its own banner is logged; its trace shows the stage's requests arriving.
    let trace = dir.path().join("trace.jsonl");
    let server = format!(
        "command \"sh\" \"-c\" \"exec {} --trace {}\"\nready log=\"listening on\"\nstop grace=\"5s\"",
        sim_line(port),
        trace.display()
    );
    let path = with_server(dir.path(), port, &server, "duration \"10m\";");
    let out = dir.path().join("out");
    let child = crate::support::spawn_run(&path, &out, &["--no-plots"]);
    crate::support::wait_for(60, "the server is ready and the stage runs", || {
        std::fs::metadata(&trace).is_ok_and(|m| m.len() > 0)
    });
    let pid = logged_pid(&out).expect("server.log names the pid");
    assert!(alive(pid));
    crate::support::signal(&child, libc::SIGTERM);
    let o = crate::support::wait_bounded(child, 60, "an interrupted run with a server");
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    gone(pid, "the server is stopped when the run is interrupted");
    let r = crate::support::results(&out);
    assert_eq!(r["interrupted"], true, "{r}");
    assert_eq!(
        r["provenance"]["started_server"]["stopped"], "stopped",
        "{r}"
    );
}

#[test]
fn server_ready_on_a_health_path() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = format!(
        "command \"infermeter\" \"sim\" \"--listen\" \"127.0.0.1:{port}\" \"--model\" \"sim-model\"\nready path=\"/health\""
    );
    let path = with_server(dir.path(), port, &server, "requests 5;");
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    gone(server_pid(&out), "the server is stopped after the run");
}

#[test]
fn server_startup_is_decided_on_a_stage_the_client_made_untrusted() {
    // The start-up is measured before the first request: a client that then sends late (held
    // 30 ms per request here) cannot have moved it, so its verdict stands on its numbers.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = format!("command {}\ntimeout \"60s\"", quoted(&sim_line(port)));
    let path = with_server(dir.path(), port, &server, "requests 20;");
    let text = std::fs::read_to_string(&path).unwrap()
        + "sla { assert \"server_startup < 60s\"; assert \"ttft.p50 < 20ms\"; }\n";
    std::fs::write(&path, text).unwrap();
    let out = dir.path().join("out");
    let o = crate::support::command()
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["--no-plots", "--quiet", "--untrusted", "inconclusive"])
        .env("INFERMETER_TEST_SEND_LAG_MS", "30")
        .output()
        .unwrap();
    let r = crate::support::results(&out);
    let flags = &r["stages"][0]["validity"]["flags"];
    assert!(flags.to_string().contains("send_lag"), "{flags}");
    let startup = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| {
            v["expr"]
                .as_str()
                .unwrap_or("")
                .starts_with("server_startup")
        })
        .unwrap_or_else(|| panic!("no server_startup verdict in {}", r["sla"]));
    assert_eq!(startup["outcome"], "pass", "{startup}\n{}", describe(&o));
}

/// `line`'s words as KDL strings.
fn quoted(line: &str) -> String {
    line.split(' ')
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A scenario against the simulator at `base` (already running) whose `server` block is
/// `server` (its children): a `restart` block's shape.
fn with_remote(dir: &Path, base: &str, server: &str) -> std::path::PathBuf {
    let url = if base.ends_with("/v1") {
        base.to_string()
    } else {
        format!("{base}/v1")
    };
    scenario(
        dir,
        "remote.kdl",
        &format!(
            "target \"{url}\" {{ model \"sim-model\"; }}\n\
             server {{\n{server}\n}}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=2; requests 10; }}\n"
        ),
    )
}

#[test]
fn server_restarted_elsewhere_is_waited_for_and_left_running() {
    // The server runs already (as a Kubernetes deployment would); `restart` only runs a
    // program that restarts it and exits, and the run leaves the server as it found it.
    let sim = crate::support::SimProcess::start(&["--model", "sim-model"]);
    let dir = tempfile::tempdir().unwrap();
    let server =
        "restart \"sh\" \"-c\" \"echo rollout restarted\"\nready \"models\"\ntimeout \"60s\"";
    let path = with_remote(dir.path(), &sim.base_url, server);
    let o = crate::support::infermeter(&["validate", path.to_str().unwrap()]);
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("server  restarted elsewhere by the run's program: sh -c"),
        "{stdout}"
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = crate::support::results(&out);
    let started = &r["provenance"]["started_server"];
    assert_eq!(started["stopped"], "left running", "{started}");
    assert_eq!(started["command"][0], "sh", "{started}");
    assert_eq!(crate::support::stage(&r, "s")["requests"]["ok"], 10);
    let log = std::fs::read_to_string(out.join("server.log")).unwrap();
    assert!(log.contains("rollout restarted"), "{log}");
    assert!(
        alive(sim.child.id() as i32),
        "the server elsewhere is left running"
    );
}

#[test]
fn server_restart_program_that_fails_ends_the_run_with_its_words() {
    let sim = crate::support::SimProcess::start(&["--model", "sim-model"]);
    let dir = tempfile::tempdir().unwrap();
    let server = "restart \"sh\" \"-c\" \"echo 'deployment not found' >&2; exit 7\"";
    let path = with_remote(dir.path(), &sim.base_url, server);
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots"]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains("restart program failed (exit code 7)")
            && stderr.contains("deployment not found"),
        "{stderr}"
    );
}

#[test]
fn server_restart_with_command_or_stop_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    for (server, said) in [
        (
            "restart \"sh\" \"-c\" \"true\"\ncommand \"sh\" \"-c\" \"true\"",
            "`restart` and `command` both given",
        ),
        (
            "restart \"sh\" \"-c\" \"true\"\nstop signal=\"SIGINT\"",
            "`stop` does not apply to `restart`",
        ),
    ] {
        let path = with_remote(dir.path(), "http://127.0.0.1:9", server);
        let o = crate::support::infermeter(&["validate", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        let (_, stderr) = text(&o);
        assert!(
            stderr.contains(said) && stderr.contains("remote.kdl"),
            "{stderr}"
        );
    }
}
