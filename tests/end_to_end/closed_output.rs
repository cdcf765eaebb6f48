//! The real binary writing into a pipe whose reader has gone (`infermeter … | head -c1`): no
//! panic, and the exit code is the command's own. The read end is closed before the binary
//! starts, so every write it makes meets a broken pipe, whatever the timing.

use std::process::{Output, Stdio};

use crate::support::command;

/// Which of the binary's streams is a pipe with no reader.
#[derive(Clone, Copy)]
enum Closed {
    Stdout,
    Stderr,
    Both,
}

fn with_closed(closed: Closed, args: &[&str]) -> Output {
    let closed_pipe = || {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        Stdio::from(writer)
    };
    let mut c = command();
    c.args(args).stdin(Stdio::null());
    match closed {
        Closed::Stdout => c.stdout(closed_pipe()).stderr(Stdio::piped()),
        Closed::Stderr => c.stdout(Stdio::piped()).stderr(closed_pipe()),
        Closed::Both => c.stdout(closed_pipe()).stderr(closed_pipe()),
    };
    c.output().expect("the binary runs")
}

fn describe(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn printing_into_a_closed_pipe_exits_with_the_commands_own_code() {
    let schema = with_closed(Closed::Stdout, &["schema", "results"]);
    assert_eq!(schema.status.code(), Some(0), "{}", describe(&schema));
    assert!(
        !String::from_utf8_lossy(&schema.stderr).contains("panicked"),
        "{}",
        describe(&schema)
    );
    let plan = with_closed(Closed::Both, &["plan", "scenarios/quickstart.kdl"]);
    assert_eq!(plan.status.code(), Some(0), "{}", describe(&plan));
    let help = with_closed(Closed::Stdout, &["--help"]);
    assert_eq!(help.status.code(), Some(0), "{}", describe(&help));
}

#[test]
fn a_closed_stderr_keeps_the_invalid_scenarios_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let bad = crate::support::scenario(dir.path(), "bad.kdl", "stage \"s\" { nonsense 1 }\n");
    let bad = bad.to_str().unwrap();
    let validate = with_closed(Closed::Stderr, &["validate", bad]);
    assert_eq!(validate.status.code(), Some(2), "{}", describe(&validate));
    let both = with_closed(Closed::Both, &["validate", bad]);
    assert_eq!(both.status.code(), Some(2), "{}", describe(&both));
}

#[test]
fn a_run_piped_into_a_closed_reader_exits_with_its_gate() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = crate::support::scenario(
        dir.path(),
        "s.kdl",
        r#"scenario "closed-pipe"
target "sim" { decode-base "1ms" }
dataset "d" { synthetic { input-tokens 8; output-tokens 4; } }
stage "s" {
    dataset "d"
    arrival "concurrency" clients=2
    requests 20
    sla { assert "ttft.p50 < 0.001ms" }
}
"#,
    );
    let out = dir.path().join("out");
    let run = with_closed(
        Closed::Both,
        &[
            "run",
            scenario.to_str().unwrap(),
            "--untrusted",
            "judge",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    // Far under any real TTFT: the gate fails, and says so by its code alone.
    assert_eq!(run.status.code(), Some(1), "{}", describe(&run));
    assert!(out.join("results.json").is_file());
}
