//! Server configurations as an axis (docs/server.md, "Server settings as an axis") through the
//! real binary, the server being `infermeter sim` itself: every stage runs on each
//! configuration, the server restarts only where the configuration changes, each stage
//! records the command it ran on; and the loose ends of the `server` block: refused with
//! `--shard`, and `infermeter sim` stopping gracefully on SIGTERM. No timing is asserted
//! beyond a generous ratio the simulator's deterministic latency model holds on any machine.

use std::path::Path;

use crate::support::{describe, results, run, scenario, stage, text};

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("address").port()
}

/// A scenario on `port` whose server is the simulator with configurations `mr1` and `mr16`
/// (`--max-running` 1 and 16), each tracing its requests into `dir` (`mr1.jsonl`,
/// `mr16.jsonl`), the second also getting a secret param on its command line and a secret by
/// reference in its environment; a warm-up of 4 and two closed-loop stages of 8 clients.
fn two_configs(dir: &Path, port: u16) -> std::path::PathBuf {
    scenario(
        dir,
        "sweep.kdl",
        &format!(
            "param \"header\" \"x-default\" secret=#true\n\
             target \"http://127.0.0.1:{port}/v1\" {{ model \"sim-model\"; timeout \"60s\"; }}\n\
             server {{\n\
               command \"infermeter\" \"sim\" \"--listen\" \"127.0.0.1:{port}\" \"--model\" \
               \"sim-model\" \"--decode-base\" \"5ms\" \"--max-running\" \"64\"\n\
               timeout \"60s\"\n\
               config \"mr1\" {{ args \"--max-running\" \"1\" \"--trace\" \"{trace}/mr1.jsonl\"; }}\n\
               config \"mr16\" {{ args \"--max-running\" \"16\" \"--session-header\" (param)\"header\" \
               \"--trace\" \"{trace}/mr16.jsonl\"; env \"HF_TOKEN\" env=\"IM_SWEEP_TOKEN\"; }}\n\
             }}\n\
             warmup requests=4 clients=2\n\
             dataset \"d\" {{ synthetic {{ input-tokens 32; output-tokens 16; }} }}\n\
             stage \"a\" {{ dataset \"d\"; arrival \"concurrency\" clients=8; requests 24; }}\n\
             stage \"b\" {{ dataset \"d\"; arrival \"concurrency\" clients=8; requests 16; }}\n\
             sla {{ assert \"e2e.p50 < 60s\" stage=\"b\"; }}\n",
            trace = dir.display()
        ),
    )
}

fn alive(pid: i64) -> bool {
    // SAFETY: kill(2) with signal 0 sends nothing; it only asks whether the pid exists.
    unsafe { libc::kill(pid as i32, 0) == 0 }
}

#[test]
fn server_configs_restart_only_where_the_configuration_changes() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let path = two_configs(dir.path(), port);
    let out = dir.path().join("out");
    let (secret, token) = ("hdr-secret-5a4b3c2d1e", "tok-secret-0f9e8d7c6b");
    let o = crate::support::command()
        .args([
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args([
            "--no-plots",
            "--untrusted",
            "judge",
            "--param",
            &format!("header={secret}"),
        ])
        .env("IM_SWEEP_TOKEN", token)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let names: Vec<&str> = r["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a@mr1", "b@mr1", "a@mr16", "b@mr16"], "{r}");
    let server = |name: &str| stage(&r, name)["server"].clone();
    let restarted: Vec<bool> = names
        .iter()
        .map(|n| server(n)["restarted"].as_bool().unwrap())
        .collect();
    assert_eq!(restarted, [true, false, true, false], "{r}");
    // Started twice, not once per stage: each configuration's stages share a server.
    let pid = |n: &str| server(n)["pid"].as_i64().unwrap();
    assert_eq!(pid("a@mr1"), pid("b@mr1"));
    assert_eq!(pid("a@mr16"), pid("b@mr16"));
    assert_ne!(pid("a@mr1"), pid("a@mr16"));
    assert_eq!(server("b@mr16")["config"], "mr16");
    assert!(server("a@mr16")["startup_ms"].as_f64().unwrap() > 0.0);
    commands_are_each_configuration_s(&server, secret);
    // One server at a time, one queue: under 8 clients a request waits for the 7 before it.
    let e2e = |n: &str| stage(&r, n)["latency"]["e2e_ms"]["p50"].as_f64().unwrap();
    assert!(
        e2e("a@mr1") > 3.0 * e2e("a@mr16"),
        "max-running 1 is not slower: {} vs {} ms",
        e2e("a@mr1"),
        e2e("a@mr16")
    );
    for n in &names {
        let what = format!("server {} of {n} is gone after the run", pid(n));
        crate::support::wait_for(10, &what, || !alive(pid(n)));
    }
    let log = std::fs::read_to_string(out.join("server.log")).unwrap();
    assert_eq!(log.matches("[infermeter: started pid").count(), 2, "{log}");
    // Each server got the warm-up (4) and its two stages (24 + 16), none failed by a restart.
    for (config, stage_name) in [("mr1", "a@mr1"), ("mr16", "a@mr16")] {
        let trace = std::fs::read_to_string(dir.path().join(format!("{config}.jsonl"))).unwrap();
        assert_eq!(trace.lines().count(), 44, "{config}: {trace}");
        assert_eq!(stage(&r, stage_name)["requests"]["failed"], 0, "{r}");
    }
    no_secret_anywhere(&out, &o, &[secret, token]);
}

/// Each stage's command is its configuration's: the base's `--max-running` replaced (not
/// repeated), the secret param masked.
fn commands_are_each_configuration_s(server: &dyn Fn(&str) -> serde_json::Value, secret: &str) {
    let command =
        |n: &str| -> Vec<String> { serde_json::from_value(server(n)["command"].clone()).unwrap() };
    let mr1 = command("a@mr1");
    let flags = mr1.iter().filter(|w| *w == "--max-running").count();
    assert_eq!(flags, 1, "{mr1:?}");
    // In the base's place (after `--decode-base 5ms`), its value replaced; `--trace` appended.
    assert_eq!(mr1[8..10], ["--max-running", "1"], "{mr1:?}");
    assert_eq!(mr1[10], "--trace", "{mr1:?}");
    let mr16 = command("a@mr16");
    let at = mr16.iter().position(|w| w == "--max-running").unwrap();
    assert_eq!(mr16[at + 1], "16", "{mr16:?}");
    let header = mr16.iter().position(|w| w == "--session-header").unwrap();
    assert_ne!(mr16[header + 1], secret, "the secret is masked: {mr16:?}");
}

/// No file of `out` and nothing printed shows any of `secrets`.
fn no_secret_anywhere(out: &Path, o: &std::process::Output, secrets: &[&str]) {
    let (stdout, stderr) = text(o);
    for entry in std::fs::read_dir(out).unwrap() {
        let p = entry.unwrap().path();
        let t = std::fs::read_to_string(&p).unwrap_or_default();
        for s in secrets {
            assert!(!t.contains(s), "{} shows a secret", p.display());
            assert!(
                !stdout.contains(s) && !stderr.contains(s),
                "printed a secret"
            );
        }
    }
}

#[test]
fn server_configs_show_in_the_plan_with_their_cache_hygiene() {
    let dir = tempfile::tempdir().unwrap();
    let path = two_configs(dir.path(), free_port());
    let o = crate::support::infermeter(&["plan", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("server     config mr1: infermeter sim"),
        "{stdout}"
    );
    assert!(stdout.contains("stage `b@mr16`"), "{stdout}");
    assert_eq!(stdout.matches("fresh start").count(), 2, "{stdout}");
    assert_eq!(
        stdout.matches("  server    config mr1: warm").count(),
        1,
        "{stdout}"
    );
    let o = crate::support::infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, _) = text(&o);
    assert!(stdout.contains("config mr16: infermeter sim"), "{stdout}");
    // The base command never runs on its own when configurations replace its arguments.
    assert!(
        stdout.contains("started by the run, once per configuration (2):")
            && !stdout.contains("--max-running 64"),
        "{stdout}"
    );
}

#[test]
fn server_block_with_a_shard_or_k8s_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = two_configs(dir.path(), free_port());
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--shard", "0/2"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains("--shard: the scenario has a `server` block"),
        "{stderr}"
    );
    let manifests = dir.path().join("k8s");
    let (p, m) = (path.to_str().unwrap(), manifests.to_str().unwrap());
    let o = crate::support::infermeter(&["k8s", "--shards", "2", "--image", "i", p, "--out", m]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o)
            .1
            .contains("k8s: the scenario has a `server` block")
    );
    assert!(!manifests.exists(), "no manifests written");
}

#[test]
fn server_sim_stops_gracefully_on_sigterm() {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut child = std::process::Command::new(crate::support::bin())
        .args(["sim", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start infermeter sim");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("sim prints its address");
    assert!(line.contains("listening on"), "{line}");
    crate::support::signal(&child, libc::SIGTERM);
    let o = crate::support::wait_bounded(child, 30, "sim after SIGTERM");
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("shutting down on SIGTERM"), "{stderr}");
}

#[test]
fn server_config_that_cannot_start_ends_the_run_keeping_the_stages_before() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let path = scenario(
        dir.path(),
        "broken.kdl",
        &format!(
            "target \"http://127.0.0.1:{port}/v1\" {{ model \"sim-model\"; }}\n\
             server {{\n\
               command \"infermeter\" \"sim\" \"--listen\" \"127.0.0.1:{port}\" \"--model\" \"sim-model\"\n\
               timeout \"60s\"\n\
               config \"good\"\n\
               config \"bad\" {{ args \"--max-running\" \"0\"; }}\n\
             }}\n\
             dataset \"d\" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=2; requests 6; }}\n"
        ),
    );
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--no-plots"]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains("must be at least 1"),
        "the server's own words: {stderr}"
    );
    let r = results(&out);
    assert_eq!(r["passed"], false, "{r}");
    assert!(r["error"].as_str().is_some(), "{r}");
    assert_eq!(stage(&r, "s@good")["requests"]["ok"], 6, "{r}");
    let first = stage(&r, "s@good")["server"]["pid"].as_i64().unwrap();
    crate::support::wait_for(10, "the first server is gone", || !alive(first));
}
