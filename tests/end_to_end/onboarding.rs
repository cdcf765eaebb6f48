//! The commands a new user starts with, through the real binary: `new` and `import vllm`
//! write scenarios that validate and plan as the flags said; `run` and `plan` take `--url`,
//! `--model` and `-` (stdin); `wait` waits for a server that binds late, gives up on a dead
//! port and stops on Ctrl-C; `schema results` prints the checked-in schema; `sim --help`
//! shows the defaults.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use crate::support::{SimProcess, bin, command, describe, infermeter, text};

fn plan_json(path: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let o = command()
        .arg("plan")
        .arg(path)
        .args(["--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["plan"].clone()
}

#[test]
fn new_writes_a_valid_commented_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gate.kdl");
    let o = infermeter(&[
        "new",
        "--url",
        "http://127.0.0.1:8000/v1",
        "--model",
        "Qwen/Qwen2.5-7B-Instruct",
        "--rate",
        "20",
        "--requests",
        "200",
        "--input-tokens",
        "128..512",
        "--output-tokens",
        "64",
        "--sla",
        "ttft.p95 < 200ms",
        "--sla",
        "itl.p99 < 40ms",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let kdl = std::fs::read_to_string(&file).unwrap();
    assert!(kdl.contains("scenario \"gate\""), "{kdl}");
    assert!(kdl.contains("assert \"itl.p99 < 40ms\""), "{kdl}");
    assert!(kdl.contains("// Written by: infermeter new --url"), "{kdl}");
    let v = infermeter(&["validate", file.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
    let plan = plan_json(&file, &[]);
    let stage = &plan["stages"][0];
    assert_eq!(stage["name"], "main");
    assert_eq!(plan["warmup"]["max_requests"], 10);
    // 200 requests cannot show `itl.p99 < 40ms` (a p99 needs 299): written until-decided.
    assert_eq!(stage["max_requests"], 1200);
    assert_eq!(stage["until_decided"]["min_requests"], 200);
    assert!(kdl.contains("requests 200 until-decided max=1200"), "{kdl}");
    assert!(!text(&v).1.contains("warning"), "{}", describe(&v));
    assert_eq!(stage["load"]["arrival"]["kind"], "poisson");
    assert_eq!(plan["target"]["model"], "Qwen/Qwen2.5-7B-Instruct");
    let input = &plan["datasets"][0]["source"];
    assert!(input.to_string().contains("\"min\":128"), "{input}");

    // It refuses to overwrite, and says how; to stdout it needs no file.
    let again = infermeter(&["new", "-o", file.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again).1.contains("--force"));
    let out = infermeter(&["new", "--concurrency", "4", "--duration", "30s"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(text(&out).0.contains("arrival \"concurrency\" clients=4"));
    assert!(text(&out).0.contains("target \"sim\""));
}

#[test]
fn new_rejects_bad_flags_with_exit_2() {
    for (args, needle) in [
        (vec!["new", "--sla", "ttft.p95 <"], "--sla"),
        (vec!["new", "--url", "localhost:8000"], "http(s) URL"),
        (
            vec!["new", "--rate", "5", "--concurrency", "2"],
            "cannot be used",
        ),
        (vec!["new", "--dataset", "csv:x.csv"], "not a data set kind"),
        (vec!["new", "--input-tokens", "9..3"], "minimum is above"),
    ] {
        let o = infermeter(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
        assert!(text(&o).1.contains(needle), "{args:?}: {}", text(&o).1);
    }
}

#[test]
fn import_vllm_round_trips_the_common_flags() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.kdl");
    let o = infermeter(&[
        "import",
        "vllm",
        "-o",
        file.to_str().unwrap(),
        "--",
        "vllm",
        "bench",
        "serve",
        "--backend",
        "openai-chat",
        "--base-url",
        "http://10.0.0.5:8000",
        "--endpoint",
        "/v1/chat/completions",
        "--model",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--dataset-name",
        "random",
        "--random-input-len",
        "512",
        "--random-output-len",
        "128",
        "--request-rate",
        "10",
        "--burstiness",
        "0.5",
        "--num-prompts",
        "200",
        "--seed",
        "3",
        "--ignore-eos",
        "--percentile-metrics",
        "ttft,tpot",
        "--mystery-flag",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (_, err) = text(&o);
    assert!(err.contains("unknown flag `--mystery-flag`"), "{err}");
    assert!(err.contains("--percentile-metrics"), "{err}");
    let kdl = std::fs::read_to_string(&file).unwrap();
    assert!(
        kdl.contains("unknown flag `--mystery-flag`"),
        "noted in the file: {kdl}"
    );
    let v = infermeter(&["validate", file.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));

    let plan = plan_json(&file, &[]);
    assert_eq!(plan["seed"], 3);
    assert_eq!(plan["target"]["endpoint"]["url"], "http://10.0.0.5:8000/v1");
    assert_eq!(plan["target"]["api"], "chat");
    assert_eq!(plan["target"]["ignore_eos"], true);
    assert_eq!(plan["target"]["extra_body"]["temperature"], 0.0);
    let stage = &plan["stages"][0];
    // 200 requests cannot show the default `error_rate < 1%` (381 needed): until-decided.
    assert_eq!(stage["max_requests"], 1600);
    assert_eq!(stage["until_decided"]["min_requests"], 200);
    assert_eq!(stage["load"]["arrival"]["kind"], "gamma");
    assert_eq!(stage["load"]["arrival"]["rate"], 10.0);
    assert_eq!(stage["load"]["arrival"]["burstiness"], 0.5);
    let source = plan["datasets"][0]["source"].to_string();
    assert!(source.contains("\"value\":512"), "{source}");
    assert!(source.contains("\"value\":128"), "{source}");

    // The text plan says the same in words.
    let o = command().arg("plan").arg(&file).output().unwrap();
    let (out, _) = text(&o);
    assert!(out.contains("gamma"), "{out}");
    assert!(
        out.contains("requests  200, then until every assertion is decided, at most 1600"),
        "{out}"
    );
    assert!(out.contains("input 512, output 128"), "{out}");
}

#[test]
fn import_vllm_refuses_numbers_that_are_not_finite_or_out_of_range() {
    // Every numeric flag of the importer: not a number, not finite, or outside what vLLM
    // takes is exit 2 naming the flag and what it expects, and no scenario is written.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.kdl");
    for bad in [
        "--request-rate nan",
        "--request-rate -inf",
        "--request-rate NaN",
        "--request-rate 0",
        "--request-rate -2",
        "--burstiness inf",
        "--burstiness 0",
        "--max-concurrency 0",
        "--max-concurrency -1",
        "--num-prompts 0",
        "--num-prompts nan",
        "--port 0",
        "--port 70000",
        "--random-input-len 0",
        "--random-output-len inf",
        "--random-range-ratio nan",
        "--random-range-ratio 1",
        "--random-prefix-len -1",
        "--seed -1",
        "--num-warmups 1.5",
        "--temperature nan",
        "--temperature -0.5",
        "--top-p 0",
        "--top-p 1.5",
        "--top-k 2.5",
        "--top-k -2",
        "--min-p inf",
        "--frequency-penalty 3",
        "--presence-penalty -inf",
        "--repetition-penalty 0",
        "--goodput ttft:nan",
        "--goodput e2el:-5",
        "--goodput tpot:inf",
        "--dataset-name sharegpt --sharegpt-output-len 0",
        "--dataset-name custom --dataset-path p.jsonl --custom-output-len nan",
    ] {
        let words: Vec<&str> = bad.split(' ').collect();
        let flag = words[words.len() - 2];
        let mut args = vec!["import", "vllm", "-o", file.to_str().unwrap(), "--"];
        args.extend(["--model", "m"]);
        args.extend(&words);
        let o = infermeter(&args);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", describe(&o));
        let (_, err) = text(&o);
        assert!(err.contains(flag), "{bad}: {err}");
        assert!(err.contains("expected"), "{bad}: the hint: {err}");
        assert!(!file.exists(), "{bad}: nothing written");
    }
    // `inf` is vLLM's default: every request at once, as many clients as requests.
    let o = infermeter(&["import", "vllm", "--", "--request-rate", "inf"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o).0.contains("clients=1000"), "{}", text(&o).0);
}

#[test]
fn import_vllm_and_validate_refuse_headers_with_line_breaks() {
    // A CR or LF in a header would be a second header on the wire: refused, naming the
    // header and the character, never echoing the value (it may be a key).
    for value in [
        "Bearer sk-secret\r\nX-Evil: 1",
        "a\nb",
        "a\u{7}b",
        "caf\u{e9}",
    ] {
        let header = format!("Authorization={value}");
        let o = infermeter(&["import", "vllm", "--", "--header", &header]);
        assert_eq!(o.status.code(), Some(2), "{value:?}: {}", describe(&o));
        let (out, err) = text(&o);
        assert!(out.is_empty(), "{value:?}: no scenario: {out}");
        assert!(err.contains("--header Authorization"), "{err}");
        assert!(err.contains("one line of printable ASCII"), "{err}");
        assert!(!err.contains("sk-secret"), "the value is not echoed: {err}");
    }
    let o = infermeter(&["import", "vllm", "--", "--header", "X Team=perf"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));

    // A scenario written by hand is held to the same rule by `validate`.
    let dir = tempfile::tempdir().unwrap();
    let path = crate::support::scenario(
        dir.path(),
        "h.kdl",
        r#"
target "http://127.0.0.1:9/v1" { model "m"; header "X-A" "b\r\nX-Evil: 1"; }
dataset "d" { synthetic { input-tokens 8; output-tokens 2; } }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 1; }
"#,
    );
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("carriage return"), "{}", text(&o).1);
}

#[test]
fn import_vllm_sharegpt_names_the_hub_file_and_closed_loop() {
    let o = infermeter(&[
        "import",
        "vllm",
        "--",
        "--model",
        "m",
        "--dataset-name",
        "sharegpt",
        "--max-concurrency",
        "16",
        "--num-prompts",
        "50",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (kdl, err) = text(&o);
    assert!(
        kdl.contains("sharegpt \"hf://datasets/anon8231489123/ShareGPT_Vicuna_unfiltered/ShareGPT_V3_unfiltered_cleaned_split.json\" count=1600"),
        "{kdl}"
    );
    assert!(kdl.contains("arrival \"concurrency\" clients=16"), "{kdl}");
    assert!(kdl.contains("requests 50 until-decided max=1600"), "{kdl}");
    assert!(
        kdl.contains("ignore-eos #false"),
        "vLLM's ShareGPT default: {kdl}"
    );
    assert!(err.contains("infermeter dataset fetch sharegpt"), "{err}");
    let bad = infermeter(&["import", "vllm", "--", "--dataset-name", "sonnet"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad).1.contains("random, sharegpt, custom"));
}

#[test]
fn run_takes_url_model_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let sim = SimProcess::start(&["--model", "served-name", "--decode-base", "1ms"]);
    // Named: a scenario without a name is named after its file, and the name is hashed.
    let scenario = r#"
scenario "override"
target "http://127.0.0.1:9/v1" { model "wrong"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 6; }
sla { assert "ttft.p50 < 60s"; untrusted "judge"; }
"#;
    let out = dir.path().join("out");
    let mut child = command()
        .args([
            "run",
            "-",
            "--quiet",
            "--url",
            &sim.base_url,
            "--model",
            "served-name",
        ])
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(scenario.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = crate::support::results(&out);
    assert_eq!(r["target"]["model"], "served-name");
    assert_eq!(r["target"]["endpoint"], sim.base_url);

    // The hash: --url leaves it alone, --model changes it (as a `model` line would).
    let file = crate::support::scenario(dir.path(), "s.kdl", scenario);
    let hash = |extra: &[&str]| {
        plan_json(&file, extra)["hash"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let plain = hash(&[]);
    assert_eq!(hash(&["--url", "http://other:8000/v1"]), plain);
    assert_ne!(hash(&["--model", "served-name"]), plain);
    let written = crate::support::scenario(
        dir.path(),
        "t.kdl",
        &scenario.replace("model \"wrong\"", "model \"served-name\""),
    );
    assert_eq!(
        plan_json(&written, &[])["hash"],
        plan_json(&file, &["--model", "served-name"])["hash"]
    );
    let bad = command()
        .args(["plan"])
        .arg(&file)
        .args(["--url", "ftp://x"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn schema_results_prints_the_checked_in_schema() {
    let o = infermeter(&["schema", "results"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let stored = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schemas/results.schema.json"
    ))
    .unwrap();
    assert_eq!(text(&o).0, stored);
}

#[test]
fn sim_help_shows_the_defaults() {
    let o = infermeter(&["sim", "--help"]);
    let (out, _) = text(&o);
    for needle in [
        "[default: 8ms]",
        "[default: infermeter-sim]",
        "[default: 127.0.0.1:8000]",
        "[default: 0]",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
}

/// A port nothing listens on (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn wait_for_a_server_that_starts_late() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut waiter = command()
        .args(["wait", &url, "--timeout", "2m", "--interval", "200ms"])
        .args(["--model", "infermeter-sim"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Start the server only once the waiter has reported a refused attempt.
    let stderr = waiter.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("not reachable"), "{first}");
    let mut sim = Command::new(bin())
        .args(["sim", "--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let o = waiter.wait_with_output().unwrap();
    let _ = sim.kill();
    let _ = sim.wait();
    assert_eq!(o.status.code(), Some(0), "{first}\n{rest:?}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("ready: "), "{out}");
    assert!(out.contains("infermeter-sim"), "{out}");
}

#[test]
fn wait_gives_up_on_a_dead_port_and_a_missing_model() {
    let url = format!("http://127.0.0.1:{}/v1", free_port());
    let o = infermeter(&["wait", &url, "--timeout", "1s", "--interval", "300ms"]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, err) = text(&o);
    assert!(err.contains("was not ready after"), "{err}");
    assert!(err.contains("not reachable"), "{err}");

    let sim = SimProcess::start(&[]);
    let o = infermeter(&[
        "wait",
        &sim.base_url,
        "--model",
        "other-model",
        "--timeout",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    assert!(
        text(&o)
            .1
            .contains("model `other-model` is not listed (listed: infermeter-sim)")
    );
    let bad = infermeter(&["wait", "127.0.0.1:8000"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn wait_ends_at_its_timeout_whatever_the_interval() {
    // A server that accepts connections (the kernel completes the handshake) and never
    // answers: each attempt would last its own 10 s timeout, and the pause 10 minutes.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", silent.local_addr().unwrap());
    let child = command()
        .args(["wait", &url, "--timeout", "1s", "--interval", "10m"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = crate::support::wait_bounded(child, 120, "wait against a silent server");
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (_, err) = text(&o);
    // The time it reports waiting: its 1 s timeout, not an attempt's 10 s.
    let waited: u64 = err
        .split("was not ready after ")
        .nth(1)
        .and_then(|r| r.split('s').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(waited < 10, "waited {waited}s for a 1s timeout: {err}");
    assert!(err.contains("no attempt was answered"), "{err}");
    drop(silent);
}

#[test]
#[cfg(unix)]
fn wait_stops_on_ctrl_c_with_exit_3() {
    let url = format!("http://127.0.0.1:{}/v1", free_port());
    let mut child = command()
        .args(["wait", &url, "--timeout", "10m", "--interval", "200ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    // The first progress line: it is waiting, and its signal handler is installed.
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("not reachable"), "{first}");
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the child we spawned and still hold.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{rest:?}");
    assert!(
        rest.join("\n").contains("interrupted while waiting"),
        "{rest:?}"
    );
}

#[test]
fn new_for_a_pooling_api_writes_no_output_length() {
    let dir = tempfile::tempdir().unwrap();
    for api in ["embeddings", "rerank", "score"] {
        let file = dir.path().join(format!("{api}.kdl"));
        let o = infermeter(&["new", "--api", api, "-o", file.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let kdl = std::fs::read_to_string(&file).unwrap();
        assert!(kdl.contains(&format!("api {api} ")), "{kdl}");
        assert!(kdl.contains("input-tokens"), "{kdl}");
        assert!(!kdl.contains("output-tokens"), "a no-op line: {kdl}");
        let v = infermeter(&["validate", file.to_str().unwrap()]);
        assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
    }
    // A generation API keeps it.
    let o = infermeter(&["new", "--api", "responses"]);
    assert!(text(&o).0.contains("output-tokens"), "{}", describe(&o));
}
