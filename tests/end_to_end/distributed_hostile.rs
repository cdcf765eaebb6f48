//! A distributed run under attack, through the real binary: a peer that lacks the token,
//! duplicates a shard, posts twice, posts results that are not its own or do not add up,
//! posts bodies that never end; and a coordinator written for the test that never answers,
//! names a start a day away, sends a start that does not parse and then "pass", or a verdict
//! of another run. Nobody but the run's shards feeds the coordinator, and a shard exits 0 only
//! on a verdict about the run it took part in.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::peer::{FakeCoordinator, call, call_declaring, call_endless};
use crate::support::{self, SimProcess};

const TOKEN_ENV: &str = "INFERMETER_COORDINATOR_TOKEN";

fn scenario(dir: &Path, url: &str) -> PathBuf {
    support::scenario(
        dir,
        "hostile.kdl",
        &format!(
            r#"
scenario "hostile" {{ seed 5; }}
target "{url}" {{ timeout "30s"; }}
dataset "chat" {{ synthetic {{ input-tokens 16; output-tokens 2; }} }}
stage "only" {{ dataset "chat"; arrival "constant" rate=20; requests 6; }}
"#
        ),
    )
}

/// A `coordinate` process, its address, token and what it said on stderr so far.
struct Coordinate {
    child: Child,
    addr: SocketAddr,
    token: String,
    token_file: PathBuf,
    stderr: Arc<Mutex<String>>,
}

impl Coordinate {
    fn start(dir: &Path, scenario: &Path, shards: u32) -> Coordinate {
        let token_file = dir.join("coordinator.token");
        let mut child = support::command()
            .arg("coordinate")
            .arg(scenario)
            .args(["--shards", &shards.to_string(), "--listen", "127.0.0.1:0"])
            .arg("--token-file")
            .arg(&token_file)
            .arg("--out")
            .arg(dir.join("merged"))
            .args(["--wait", "10s"])
            .env_remove(TOKEN_ENV)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start coordinate");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = String::new();
        let addr = loop {
            let line = lines
                .next()
                .expect("coordinate says where it listens")
                .unwrap();
            said.push_str(&line);
            said.push('\n');
            if let Some(rest) = line.strip_prefix("coordinating ") {
                break rest.rsplit(' ').next().unwrap().parse().unwrap();
            }
        };
        let stderr = Arc::new(Mutex::new(said));
        let keep = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut s = keep.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let token = std::fs::read_to_string(&token_file)
            .unwrap()
            .trim()
            .to_string();
        Coordinate {
            child,
            addr,
            token,
            token_file,
            stderr,
        }
    }

    fn status(&self) -> Value {
        let a = call(self.addr, "GET", "/v1/status", Some(&self.token), b"");
        assert_eq!(a.status, 200, "{}", a.body);
        serde_json::from_str(&a.body).unwrap()
    }
}

/// `run SCENARIO --shard I/N --coordinator URL`, the token from `token_file`.
fn shard(scenario: &Path, spec: &str, url: &str, token_file: &Path, out: &Path) -> Child {
    support::command()
        .arg("run")
        .arg(scenario)
        .args(["--shard", spec, "--coordinator", url])
        .arg("--coordinator-token-file")
        .arg(token_file)
        .arg("--out")
        .arg(out)
        .args(["--quiet", "--no-plots", "--untrusted", "judge"])
        .env_remove(TOKEN_ENV)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a shard")
}

#[test]
fn a_shard_given_twice_is_refused_at_join_and_the_merge_is_exact() {
    let sim = SimProcess::start(&["--jitter", "0"]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = scenario(dir, &sim.base_url);
    let co = Coordinate::start(dir, &s, 2);
    let mode = std::fs::metadata(&co.token_file).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600,
        "the token file is its owner's only"
    );
    let url = format!("http://{}", co.addr);
    let outs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("p{i}"))).collect();
    let procs: Vec<Child> = ["0/2", "1/2", "1/2"]
        .iter()
        .zip(&outs)
        .map(|(spec, out)| shard(&s, spec, &url, &co.token_file, out))
        .collect();
    let outputs: Vec<_> = procs
        .into_iter()
        .map(|c| support::wait_bounded(c, 120, "a shard"))
        .collect();
    let mut codes: Vec<i32> = outputs.iter().map(|o| o.status.code().unwrap()).collect();
    let refused: Vec<usize> = (0..3)
        .filter(|&i| String::from_utf8_lossy(&outputs[i].stderr).contains("already joined"))
        .collect();
    assert_eq!(refused.len(), 1, "one of the two `1/2`: {outputs:?}");
    assert!(refused[0] >= 1, "shard 0 was not refused");
    codes.sort();
    assert_eq!(codes, [0, 0, 3], "{outputs:?}");
    let co_out = support::wait_bounded(co.child, 60, "the coordinator");
    assert_eq!(
        co_out.status.code(),
        Some(0),
        "{}",
        support::describe(&co_out)
    );

    // Nobody sent more than the plan: the refused process sent nothing.
    let sent = |d: &Path| {
        support::try_results(d)
            .and_then(|r| r["stages"].as_array().cloned())
            .map_or(0, |st| {
                st.iter()
                    .map(|x| x["requests"]["sent"].as_u64().unwrap())
                    .sum()
            })
    };
    assert_eq!(sent(&outs[refused[0]]), 0);
    assert_eq!(outs.iter().map(|d| sent(d)).sum::<u64>(), 6);
    let m = support::results(&dir.join("merged"));
    assert_eq!(support::stage(&m, "only")["requests"]["sent"], 6);
    let merged: Vec<u64> = m["shards"]["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    assert_eq!(merged, [0, 1]);
}

#[test]
fn whoever_lacks_the_token_is_refused_before_any_body_is_read_and_never_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = scenario(dir, "http://127.0.0.1:9/v1");
    let co = Coordinate::start(dir, &s, 2);
    let wrong = "wrong-token-SECRETSECRETSECRET";
    for (token, path) in [
        (None, "/v1/status"),
        (Some(wrong), "/v1/status"),
        (None, "/v1/time"),
    ] {
        let a = call(co.addr, "GET", path, token, b"");
        assert_eq!(a.status, 401, "{path}: {}", a.body);
        assert!(!a.body.contains(wrong), "{}", a.body);
    }
    let a = call_declaring(
        co.addr,
        "POST",
        "/v1/results?shard=0&instance=aa",
        None,
        200 << 20,
    );
    assert_eq!(a.status, 401, "refused on its head: {}", a.body);
    let a = call(co.addr, "POST", "/v1/barrier", Some(wrong), b"{}");
    assert_eq!(a.status, 401, "{}", a.body);
    // A body that never ends is not read at all.
    let taken = call_endless(co.addr, "/v1/results?shard=0&instance=aa", None, 1 << 30);
    assert!(
        taken < 128 << 20,
        "{taken} bytes taken from a caller without the token"
    );
    let status = co.status();
    assert!(status["refused"].as_u64().unwrap() >= 6, "{status}");
    assert_eq!(status["joined"], json!([]));

    support::signal(&co.child, libc::SIGTERM);
    let stderr = co.stderr.clone();
    let out = support::wait_bounded(co.child, 60, "the coordinator");
    assert_eq!(out.status.code(), Some(3), "no shard: partial");
    let said = stderr.lock().unwrap().clone();
    assert!(
        said.contains("refused GET /v1/status from 127.0.0.1"),
        "{said}"
    );
    assert!(
        said.contains("(401): no token") && said.contains("a wrong token"),
        "{said}"
    );
    assert!(
        !said.contains("SECRETSECRET"),
        "the presented token is never logged: {said}"
    );
    assert!(!said.contains(&co.token), "nor the run's: {said}");
}

/// Results of two uncoordinated shards of `s`, as coordinated ones would have written them.
fn shard_results(dir: &Path, s: &Path) -> [Value; 2] {
    [0, 1].map(|i| {
        let out = dir.join(format!("solo-{i}"));
        let o = support::run(s, &out, &["--shard", &format!("{i}/2"), "--no-plots"]);
        assert!(
            o.status.code().is_some_and(|c| c != 2 && c != 3),
            "{}",
            support::describe(&o)
        );
        let mut r = support::results(&out);
        r["shards"]["shards"][0]["coordinated"] = json!(true);
        r
    })
}

fn arrive(co: &Coordinate, shard: u32, count: u32, instance: &str, plan: &str) -> (u16, String) {
    let body = json!({
        "shard": shard, "count": count, "instance": instance,
        "step": 0, "stage": "only", "plan_hash": plan,
    });
    let a = call(
        co.addr,
        "POST",
        "/v1/barrier",
        Some(&co.token),
        body.to_string().as_bytes(),
    );
    (a.status, a.body)
}

fn post(co: &Coordinate, shard: u32, instance: &str, body: &[u8]) -> (u16, String) {
    let path = format!("/v1/results?shard={shard}&instance={instance}");
    let a = call(co.addr, "POST", &path, Some(&co.token), body);
    (a.status, a.body)
}

/// Both shards join (the barrier holds each until the other has come); another process,
/// another shard count or another plan is refused.
fn both_join_and_no_other(co: &Coordinate, plan: &str) {
    let joins: Vec<_> = [(0, "aa"), (1, "bb")]
        .map(|(i, inst)| {
            let (co_addr, token, plan) = (co.addr, co.token.clone(), plan.to_string());
            std::thread::spawn(move || {
                let body = json!({"shard": i, "count": 2, "instance": inst, "step": 0,
                                  "stage": "only", "plan_hash": plan});
                call(
                    co_addr,
                    "POST",
                    "/v1/barrier",
                    Some(&token),
                    body.to_string().as_bytes(),
                )
            })
        })
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    for a in &joins {
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(a.body.contains("run_id"), "{}", a.body);
    }
    let (code, why) = arrive(co, 1, 2, "cc", plan);
    assert_eq!(code, 409, "{why}");
    assert!(why.contains("already joined"), "{why}");
    let (code, why) = arrive(co, 1, 3, "bb", plan);
    assert_eq!(code, 409, "{why}");
    assert!(why.contains("of a 2-shard run"), "{why}");
    let (code, why) = arrive(co, 1, 2, "bb", "0123456789abcdef");
    assert_eq!(code, 409, "{why}");
}

/// Not the process that joined shard 1; not shard 1's result; counts that do not add up; more
/// requests than shard 1's slice of the plan.
fn wrong_results_are_refused(co: &Coordinate, r0: &Value, r1: &Value) {
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    assert_eq!(post(co, 1, "cc", &bytes(r1)).0, 409);
    let (code, why) = post(co, 1, "bb", &bytes(r0));
    assert_eq!(code, 422, "{why}");
    assert!(why.contains("not shard 1's own result"), "{why}");
    let mut bad = r1.clone();
    bad["stages"][0]["requests"]["failed"] = json!(5);
    let (code, why) = post(co, 1, "bb", &bytes(&bad));
    assert_eq!(code, 422, "{why}");
    assert!(why.contains("stages[0].requests.failed = 5"), "{why}");
    // Consistent, but more requests than shard 1's slice of the plan.
    let mut more = r1.clone();
    let st = &mut more["stages"][0];
    st.as_object_mut().unwrap().remove("histograms");
    st["requests"]["sent"] = json!(st["requests"]["sent"].as_u64().unwrap() + 1);
    st["requests"]["failed"] = json!(st["requests"]["failed"].as_u64().unwrap() + 1);
    st["requests"]["errors"]["timeout"] = json!(1);
    let (code, why) = post(co, 1, "bb", &bytes(&more));
    assert_eq!(code, 422, "{why}");
    assert!(
        why.contains("sent 4 requests; shard 1 of 2 plans exactly 3"),
        "{why}"
    );
}

/// Bodies beyond the plan's cap: refused on the head, or as they stream.
fn bodies_past_the_cap_are_refused(co: &Coordinate) {
    let (c, why) = {
        let a = call_declaring(
            co.addr,
            "POST",
            "/v1/results?shard=0&instance=aa",
            Some(&co.token),
            200 << 20,
        );
        (a.status, a.body)
    };
    assert_eq!(c, 413, "{why}");
    let taken = call_endless(
        co.addr,
        "/v1/results?shard=0&instance=aa",
        Some(&co.token),
        1 << 30,
    );
    assert!(
        taken < 128 << 20,
        "{taken} bytes read of a body past the cap"
    );
}

#[test]
fn each_result_is_accepted_once_from_its_own_shard_checked_and_capped() {
    let sim = SimProcess::start(&["--jitter", "0"]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = scenario(dir, &sim.base_url);
    let [r0, r1] = shard_results(dir, &s);
    let plan = r0["plan_hash"].as_str().unwrap().to_string();
    let co = Coordinate::start(dir, &s, 2);

    both_join_and_no_other(&co, &plan);

    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    wrong_results_are_refused(&co, &r0, &r1);
    bodies_past_the_cap_are_refused(&co);

    // Shard 1's result once; a second, clean one replaces nothing.
    let first = bytes(&r1);
    assert_eq!(post(&co, 1, "bb", &first).0, 204);
    let mut clean = r1.clone();
    clean["description"] = json!("a clean one");
    let (code, why) = post(&co, 1, "bb", &bytes(&clean));
    assert_eq!(code, 409, "{why}");
    assert!(why.contains("already been received"), "{why}");
    assert_eq!(post(&co, 0, "aa", &bytes(&r0)).0, 204);

    let v = call(
        co.addr,
        "GET",
        "/v1/verdict?shard=1&instance=bb",
        Some(&co.token),
        b"",
    );
    assert_eq!(v.status, 200, "{}", v.body);
    let v: Value = serde_json::from_str(&v.body).unwrap();
    let digest: String = Sha256::digest(&first)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        v["your_result"],
        json!(digest),
        "the first result is the one merged"
    );
    assert_eq!(v["merged"], json!([0, 1]));
    let stderr = co.stderr.clone();
    let out = support::wait_bounded(co.child, 60, "the coordinator");
    let said = stderr.lock().unwrap().clone();
    assert!(
        said.contains("(413)") && said.contains("(422)") && said.contains("(409)"),
        "{said}"
    );
    assert!(out.status.code().is_some(), "{said}");
    let m = support::results(&dir.join("merged"));
    assert_eq!(support::stage(&m, "only")["requests"]["sent"], 6);
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// The answers of a well-behaved coordinator for a one-shard run, except where `release`
/// and `verdict` say otherwise; the result posted is kept in `posted`.
fn fake(
    release: impl Fn() -> Option<(u16, String)> + Send + Sync + 'static,
    verdict: impl Fn(&[u8]) -> Option<(u16, String)> + Send + Sync + 'static,
) -> (FakeCoordinator, Arc<Mutex<Vec<u8>>>) {
    let posted = Arc::new(Mutex::new(Vec::new()));
    let keep = posted.clone();
    let fc = FakeCoordinator::start(move |req| {
        let path = req.path.split('?').next().unwrap();
        match path {
            "/v1/time" => Some((200, json!({ "unix_ns": now_ns() }).to_string())),
            "/v1/barrier" => release(),
            "/v1/results" => {
                *keep.lock().unwrap() = req.body.clone();
                Some((204, String::new()))
            }
            "/v1/verdict" => verdict(&keep.lock().unwrap()),
            _ => Some((404, String::new())),
        }
    });
    (fc, posted)
}

/// A pass, bound to run `run_id` and to the result `posted` (as a coordinator would).
fn pass(run_id: &str, posted: &[u8]) -> (u16, String) {
    let r: Value = serde_json::from_slice(posted).unwrap_or_default();
    let digest: String = Sha256::digest(posted)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let v = json!({
        "outcome": "pass", "missing": [], "interrupted": false, "error": null,
        "failed": 0, "undecided": 0, "untrusted": 0, "results": null,
        "run_id": run_id, "plan_hash": r["plan_hash"], "merged": [0], "your_result": digest,
    });
    (200, v.to_string())
}

fn release(run_id: &str, ahead_ns: i64) -> Option<(u16, String)> {
    let r = json!({"start_unix_ns": now_ns() + ahead_ns, "missing": [], "run_id": run_id});
    Some((200, r.to_string()))
}

/// Runs shard 0/1 of `s` against the coordinator at `url`, the token from the environment.
fn run_shard(s: &Path, url: &str, out: &Path) -> Child {
    support::command()
        .arg("run")
        .arg(s)
        .args(["--shard", "0/1", "--coordinator", url])
        .arg("--out")
        .arg(out)
        .args(["--quiet", "--no-plots", "--untrusted", "judge"])
        .env(TOKEN_ENV, "fake-coordinator-token-0123")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_shard_exits_0_only_on_a_verdict_about_the_run_it_took_part_in() {
    let sim = SimProcess::start(&["--jitter", "0"]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = scenario(dir, &sim.base_url);
    let case = |name: &str, fc: &FakeCoordinator| {
        let out = dir.join(name);
        let o = support::wait_bounded(run_shard(&s, &fc.url(), &out), 120, name);
        (o, support::try_results(&out))
    };

    // The control: a coordinator that binds its verdict to the run.
    let (fc, _) = fake(|| release("r1", 100_000_000), |p| Some(pass("r1", p)));
    let (o, _) = case("bound", &fc);
    assert_eq!(o.status.code(), Some(0), "{}", support::describe(&o));
    let auth = fc.requests()[0].authorization.clone().unwrap();
    assert_eq!(auth, "Bearer fake-coordinator-token-0123");

    // A verdict of another run.
    let (fc, _) = fake(|| release("r1", 100_000_000), |p| Some(pass("r2", p)));
    let (o, _) = case("other-run", &fc);
    assert_eq!(o.status.code(), Some(3), "{}", support::describe(&o));
    assert!(
        support::text(&o)
            .1
            .contains("not the run this shard joined")
    );

    // A pass that does not name the result this shard sent.
    let (fc, _) = fake(|| release("r1", 100_000_000), |_| Some(pass("r1", b"{}")));
    let (o, _) = case("other-result", &fc);
    assert_eq!(o.status.code(), Some(3), "{}", support::describe(&o));

    // A start that does not parse, then "pass": the shard sent nothing and does not pass.
    let (fc, _) = fake(|| Some((200, "garbage".into())), |p| Some(pass("r1", p)));
    let (o, r) = case("garbage-start", &fc);
    assert_eq!(o.status.code(), Some(3), "{}", support::describe(&o));
    assert!(
        support::text(&o).1.contains("malformed release"),
        "{}",
        support::describe(&o)
    );
    let stages = r.unwrap()["stages"].as_array().unwrap().len();
    assert_eq!(stages, 0, "no stage ran");

    // A start a day away is refused at once.
    let (fc, _) = fake(
        || release("r1", 86_400_000_000_000),
        |p| Some(pass("r1", p)),
    );
    let (o, _) = case("a-day-away", &fc);
    assert_eq!(o.status.code(), Some(3), "{}", support::describe(&o));
    assert!(
        support::text(&o).1.contains("named a start 86400 s away"),
        "{}",
        support::describe(&o)
    );
}

#[test]
fn a_shard_waiting_for_a_coordinator_ends_on_a_signal() {
    let sim = SimProcess::start(&["--jitter", "0"]);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let s = scenario(dir, &sim.base_url);

    // A coordinator that is down: retried for ten minutes, unless a signal says stop.
    let down = support::closed_port_url();
    let down = down.trim_end_matches("/v1");
    let out = dir.join("down");
    let child = run_shard(&s, down, &out);
    support::wait_for(60, "the shard's placeholder", || {
        out.join("results.json").exists()
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    support::signal(&child, libc::SIGINT);
    let o = support::wait_bounded(child, 30, "a shard whose coordinator is down, after SIGINT");
    assert_eq!(o.status.code(), Some(3), "{}", support::describe(&o));

    // A coordinator that takes the arrival and never answers.
    let (fc, _) = fake(|| None, |_| None);
    let out = dir.join("silent");
    let child = run_shard(&s, &fc.url(), &out);
    support::wait_for(60, "the shard at the barrier", || {
        fc.requests().iter().any(|r| r.path == "/v1/barrier")
    });
    support::signal(&child, libc::SIGTERM);
    let o = support::wait_bounded(child, 30, "a shard held at the barrier, after SIGTERM");
    assert_eq!(o.status.code(), Some(3), "{}", support::describe(&o));
}

#[test]
fn a_coordinated_run_needs_its_token_and_never_takes_it_as_an_argument() {
    let tmp = tempfile::tempdir().unwrap();
    let s = scenario(tmp.path(), "http://127.0.0.1:9/v1");
    let s = s.to_str().unwrap();
    let refused = |args: &[&str], said: &str| {
        let o = support::command()
            .args(args)
            .env_remove(TOKEN_ENV)
            .output()
            .unwrap();
        let err = support::text(&o).1;
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
    };
    refused(&["coordinate", s, "--shards", "2"], "--token-file FILE");
    refused(
        &[
            "run",
            s,
            "--shard",
            "0/2",
            "--coordinator",
            "http://127.0.0.1:9",
        ],
        TOKEN_ENV,
    );
    let short = tmp.path().join("short.token");
    std::fs::write(&short, "abc\n").unwrap();
    refused(
        &[
            "coordinate",
            s,
            "--shards",
            "2",
            "--token-file",
            short.to_str().unwrap(),
        ],
        "16 at least",
    );
    // There is no flag that takes the token itself.
    let o = support::infermeter(&["coordinate", s, "--shards", "2", "--token", "x"]);
    assert_eq!(o.status.code(), Some(2));
    // A start further ahead than shards accept is refused before the run.
    let o = support::command()
        .args(["coordinate", s, "--shards", "2", "--lead", "2m"])
        .env(TOKEN_ENV, "a-token-long-enough-0123")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", support::describe(&o));
    assert!(support::text(&o).1.contains("--lead"));
}
