//! Verdicts on an untrusted stage through the real binary: a flag no longer erases an answer
//! it could not have changed. A late client cannot make a latency pass or a server fail
//! requests; a failure is decided once what the client may have added is taken off; a
//! flattering prompt cache keeps passes undecided and leaves failures decided.
//!
//! The client is made late on any machine by `INFERMETER_TEST_SEND_LAG_MS` (debug builds
//! only), which holds every open-loop request that long before sending it, as a starved client
//! would. No assertion here is on a timing: the thresholds are orders of magnitude from the
//! values.

use std::path::Path;
use std::process::Output;

use crate::support::{SimProcess, command, describe, results, scenario};

/// Held this long before it is sent, each request's send lag is far over the 1 ms floor.
const LAG_MS: &str = "10";

fn text(target: &str, slas: &[&str]) -> String {
    let slas: String = slas
        .iter()
        .map(|a| format!("    assert \"{a}\"\n"))
        .collect();
    format!(
        r#"
scenario "trust" {{ seed 4; }}
{target}
dataset "d" {{ synthetic {{ input-tokens 64; output-tokens 4; }} }}
stage "s" {{
    dataset "d"
    arrival "constant" rate=20
    requests 40
}}
sla {{
{slas}}}
"#
    )
}

/// The simulator in-process: TTFT about `prefill` × 64 plus a decode step.
fn sim(prefill: &str, extra: &str) -> String {
    format!(
        r#"target "sim" {{
    decode-base "2ms"
    decode-per-seq "0ms"
    prefill-per-token "{prefill}"
    {extra}
}}"#
    )
}

/// `infermeter run` with the client held `lag_ms` per request, untrusted stages weighed (not
/// judged as they are), and `flags`; (exit code, results.json).
fn gate(dir: &Path, text: &str, lag_ms: &str, flags: &[&str]) -> (i32, serde_json::Value, Output) {
    let path = scenario(dir, "t.kdl", text);
    let out = dir.join(format!("out-{}", flags.join("").replace(['-', ' '], "")));
    let mut c = command();
    c.arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--no-plots"])
        .args(flags)
        .env("INFERMETER_TEST_SEND_LAG_MS", lag_ms);
    if !flags.contains(&"--untrusted") {
        c.args(["--untrusted", "inconclusive"]);
    }
    let o = c.output().expect("run the binary");
    let code = o.status.code().expect("exited");
    assert!(out.join("results.json").is_file(), "{}", describe(&o));
    (code, results(&out), o)
}

fn flag_names(r: &serde_json::Value) -> Vec<String> {
    r["stages"][0]["validity"]["flags"]
        .as_array()
        .map(|f| {
            f.iter()
                .map(|f| f["flag"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_late_client_cannot_make_a_latency_pass_so_the_pass_stands() {
    let dir = tempfile::tempdir().unwrap();
    let t = text(&sim("10us", ""), &["ttft.p50 < 10s", "e2e.p90 < 30s"]);
    let (code, r, o) = gate(dir.path(), &t, LAG_MS, &[]);
    let stage = &r["stages"][0];
    assert_eq!(stage["validity"]["trusted"], false, "{stage}");
    assert!(
        flag_names(&r).contains(&"send_lag".into()),
        "{:?}",
        flag_names(&r)
    );
    let lag = stage["client"]["send_lag_ms"]["p50"].as_f64().unwrap();
    assert!(lag >= 10.0, "the injected lag is recorded: {lag}");
    assert_eq!(code, 0, "{}", describe(&o));
    for v in r["sla"].as_array().unwrap() {
        assert_eq!(v["outcome"], "pass", "{v}");
        assert_eq!(v["basis"]["rule"], "unmoved", "{v}");
        assert_eq!(v["basis"]["by"][0], "client_delay", "{v}");
        let note = v["note"].as_str().unwrap();
        assert!(
            note.contains("passes even if the client added nothing"),
            "{note}"
        );
    }
    // The stage stays flagged; the loop's own delay is measured beside it.
    assert!(
        stage["client"]["loop_delay_ms"]["samples"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        stage["client_net"]["latency"]["ttft_ms"]["count"]
            .as_u64()
            .unwrap()
            > 0
    );
    // A pass decided this way is decided: `inconclusive "fail"` has nothing to fail.
    let (code, _, o) = gate(dir.path(), &t, LAG_MS, &["--inconclusive", "fail"]);
    assert_eq!(code, 0, "{}", describe(&o));
}

#[test]
fn a_failure_that_holds_net_of_the_client_is_decided_whatever_undecided_counts_as() {
    let dir = tempfile::tempdir().unwrap();
    // TTFT about 34 ms from the server, 10 more from the client: far over 5 ms even with
    // every millisecond the client added removed, while the 10 ms lag stays over 5 % of the
    // TTFT (a lag that small a share of a long TTFT would not flag the stage).
    let t = text(&sim("500us", ""), &["ttft.p50 < 5ms", "ttft.p50 < 0.001ms"]);
    for inconclusive in ["pass", "inconclusive", "fail"] {
        let (code, r, o) = gate(dir.path(), &t, LAG_MS, &["--inconclusive", inconclusive]);
        assert_eq!(code, 1, "--inconclusive {inconclusive}: {}", describe(&o));
        assert_eq!(r["outcome"], "fail");
        for v in r["sla"].as_array().unwrap() {
            assert_eq!(v["outcome"], "fail", "{v}");
            assert_eq!(v["basis"]["rule"], "net_of_client", "{v}");
            let added = v["basis"]["added_ms"].as_f64().unwrap();
            assert!(added >= 10.0, "the send lag is taken off: {v}");
            let note = v["note"].as_str().unwrap();
            assert!(note.contains("fails even after removing up to"), "{note}");
        }
    }
    // Judged as they are, the numbers say the same, without the rule.
    let (code, r, _) = gate(dir.path(), &t, LAG_MS, &["--untrusted", "judge"]);
    assert_eq!(code, 1);
    assert_eq!(r["sla"][0]["basis"]["rule"], "judged");
}

#[test]
fn a_late_client_does_not_make_the_server_fail_requests() {
    let dir = tempfile::tempdir().unwrap();
    // Every second request answered 503: the server's failures, not a client's.
    let t = text(
        &sim("10us", "fault-http-503 0.5\n    seed 3"),
        &["error_rate < 1%"],
    );
    let (code, r, o) = gate(dir.path(), &t, LAG_MS, &["--inconclusive", "pass"]);
    assert!(
        flag_names(&r).contains(&"send_lag".into()),
        "{:?}",
        flag_names(&r)
    );
    assert_eq!(code, 1, "{}", describe(&o));
    let v = &r["sla"][0];
    assert_eq!(v["outcome"], "fail", "{v}");
    assert_eq!(v["basis"]["rule"], "without_client_failures", "{v}");
    assert_eq!(v["basis"]["removed"], 0, "{v}");
}

#[test]
fn steal_without_a_measured_effect_is_a_note_and_erases_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Every second request answered 503; the hypervisor said to steal 5 % of the client's
    // CPUs, and the client sent on time: a cause with no effect, so the stage is trusted and
    // every verdict is its numbers'. Open loop and closed loop alike.
    let open = text(
        &sim("10us", "fault-http-503 0.5\n    seed 3"),
        &["error_rate < 1%", "error_rate < 99%", "ttft.p50 < 10s"],
    );
    let closed = open.replace(
        "arrival \"constant\" rate=20",
        "arrival \"concurrency\" clients=4",
    );
    for (name, t) in [("open", open), ("closed", closed)] {
        let path = scenario(dir.path(), &format!("{name}.kdl"), &t);
        let out = dir.path().join(format!("out-{name}"));
        let o = command()
            .arg("run")
            .arg(&path)
            .arg("--out")
            .arg(&out)
            .args(["--quiet", "--no-plots", "--untrusted", "inconclusive"])
            .env("INFERMETER_TEST_STEAL_PERCENT", "5")
            .output()
            .expect("run the binary");
        let r = results(&out);
        let stage = &r["stages"][0];
        assert!(
            !flag_names(&r).contains(&"steal".into()),
            "{name}: {:?}",
            flag_names(&r)
        );
        // Said as a note unless an effect of the client's was measured (a loaded machine may
        // delay sends): then that effect is the flag, with its cause.
        let effects = ["send_lag", "rate_shortfall", "idle_clients"];
        if !flag_names(&r).iter().any(|f| effects.contains(&f.as_str())) {
            let notes = stage["notes"].to_string();
            assert!(
                notes.contains("stole 5.0% of its CPU time, with no measured effect"),
                "{name}: {notes}"
            );
        }
        assert_eq!(o.status.code(), Some(1), "{name}: {}", describe(&o));
        let (fail, pass, ttft) = (&r["sla"][0], &r["sla"][1], &r["sla"][2]);
        assert_eq!(fail["outcome"], "fail", "{name}: {fail}");
        for v in [pass, ttft] {
            // A busy machine may hold the closed loop's clients idle between a fast 503 and
            // the next send: a measured effect, which may leave a pass undecided. The steal
            // never does.
            let by_effect = v["outcome"] == "inconclusive"
                && effects.contains(&v["basis"]["flag"].as_str().unwrap_or_default());
            assert!(v["outcome"] == "pass" || by_effect, "{name}: {v}");
        }
        if stage["validity"]["trusted"] == true {
            for v in [fail, pass, ttft] {
                assert_eq!(v["basis"]["rule"], "numbers", "{name}: {v}");
            }
        }
    }
}

/// A closed loop of 4 clients against the in-process simulator, each client held `lag_ms`
/// between reading an answer and sending its next request (`INFERMETER_TEST_SEND_LAG_MS`).
fn closed_gate(dir: &Path, name: &str, lag_ms: &str, slas: &[&str]) -> (i32, serde_json::Value) {
    // 120 requests: enough for `error_rate < 5%` to be decided on no error.
    let t = text(&sim("10us", ""), slas)
        .replace(
            "arrival \"constant\" rate=20",
            "arrival \"concurrency\" clients=4",
        )
        .replace("requests 40", "requests 120");
    let path = scenario(dir, &format!("{name}.kdl"), &t);
    let out = dir.join(format!("out-{name}"));
    let o = command()
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .args(["--quiet", "--no-plots", "--untrusted", "inconclusive"])
        .env("INFERMETER_TEST_SEND_LAG_MS", lag_ms)
        .output()
        .expect("run the binary");
    assert!(out.join("results.json").is_file(), "{}", describe(&o));
    (o.status.code().expect("exited"), results(&out))
}

#[test]
fn a_stalled_closed_loop_is_caught_by_its_measured_idle_clients() {
    let dir = tempfile::tempdir().unwrap();
    // Each request takes a few ms; a client held 20 ms between requests leaves the server
    // without its load most of the time: measured, flagged, and a pass the missing load could
    // have made stays undecided.
    let slas = ["error_rate < 5%", "ttft.p50 < 30s"];
    let (code, r) = closed_gate(dir.path(), "stalled", "20", &slas);
    let stage = &r["stages"][0];
    let idle = stage["client"]["closed_loop_idle_percent"]
        .as_f64()
        .unwrap();
    assert!(idle > 1.0, "idle {idle}%");
    assert!(
        flag_names(&r).contains(&"idle_clients".into()),
        "{:?}",
        flag_names(&r)
    );
    assert_eq!(code, 4, "{r}");
    let (errors, ttft) = (&r["sla"][0], &r["sla"][1]);
    assert_eq!(errors["outcome"], "inconclusive", "{errors}");
    assert_eq!(errors["basis"]["rule"], "flagged", "{errors}");
    assert_eq!(errors["basis"]["flag"], "idle_clients", "{errors}");
    assert_eq!(errors["basis"]["distortion"], "load_shortfall", "{errors}");
    // A latency with a margin the missing load cannot close passes at the planned load too.
    assert_eq!(ttft["outcome"], "pass", "{ttft}");
    assert_eq!(ttft["basis"]["rule"], "load_bounded", "{ttft}");
    let share = ttft["basis"]["idle_share"].as_f64().unwrap();
    assert!((share * 100.0 - idle).abs() < 1e-6, "{ttft}");
    let note = errors["note"].as_str().unwrap();
    assert!(
        note.starts_with("stage untrusted (idle_clients):"),
        "{note}"
    );
}

#[test]
fn a_closed_loop_is_flagged_exactly_when_its_measured_idle_share_is_over_one_percent() {
    let dir = tempfile::tempdir().unwrap();
    let slas = ["error_rate < 5%", "ttft.p50 < 30s"];
    let (code, r) = closed_gate(dir.path(), "busy", "0", &slas);
    let stage = &r["stages"][0];
    // Measured for every closed loop, whatever the machine's load.
    let idle = stage["client"]["closed_loop_idle_percent"]
        .as_f64()
        .expect("a closed loop's idle share is measured");
    assert!((0.0..100.0).contains(&idle), "idle {idle}%");
    let flagged = flag_names(&r).contains(&"idle_clients".into());
    assert_eq!(flagged, idle > 1.0, "idle {idle}%: {:?}", flag_names(&r));
    if stage["validity"]["trusted"] == true {
        assert_eq!(code, 0, "{r}");
        assert_eq!(r["sla"][0]["basis"]["rule"], "numbers");
    }
}

#[test]
fn a_flattering_cache_keeps_a_pass_undecided_and_a_failure_decided() {
    // A simulator process with a prefix cache outlives a run: the second run of the same
    // prompts is served from it, which the plan did not intend.
    let sim = SimProcess::start(&[
        "--prefix-cache",
        "--prefill-per-token",
        "20us",
        "--decode-base",
        "20ms",
    ]);
    let target = format!(
        "target \"{}\" {{ model \"infermeter-sim\"; }}",
        sim.base_url
    );
    let dir = tempfile::tempdir().unwrap();
    let t = text(&target, &["ttft.p50 < 10s", "ttft.p50 < 0.001ms"]);
    let (_, first, _) = gate(dir.path(), &t, "0", &[]);
    assert!(
        !flag_names(&first).contains(&"unintended_cache".into()),
        "{:?}",
        flag_names(&first)
    );
    let (code, r, o) = gate(dir.path(), &t, "0", &["--inconclusive", "inconclusive"]);
    assert!(
        flag_names(&r).contains(&"unintended_cache".into()),
        "{:?}",
        flag_names(&r)
    );
    assert_eq!(code, 1, "{}", describe(&o));
    let (pass, fail) = (&r["sla"][0], &r["sla"][1]);
    // The cache could have made it pass: undecided, saying why.
    assert_eq!(pass["outcome"], "inconclusive", "{pass}");
    assert_eq!(pass["basis"]["rule"], "flagged", "{pass}");
    assert_eq!(pass["basis"]["distortion"], "flattering", "{pass}");
    assert_eq!(pass["basis"]["would"], "pass", "{pass}");
    // It could not have made it fail: decided.
    assert_eq!(fail["outcome"], "fail", "{fail}");
}

#[test]
fn a_rate_failure_is_decided_once_the_server_is_credited_with_what_the_client_withheld() {
    let dir = tempfile::tempdir().unwrap();
    // 40 requests at 20/s: whatever the client did, no punctual client could have finished
    // them sooner than their 1.95 s schedule, so the server gets at most about 20.5 req/s.
    let t = text(
        &sim("10us", ""),
        &[
            "request_throughput > 1000 req/s",
            "request_throughput > 1 req/s",
        ],
    );
    for inconclusive in ["pass", "fail"] {
        let (code, r, o) = gate(dir.path(), &t, LAG_MS, &["--inconclusive", inconclusive]);
        assert_eq!(r["stages"][0]["validity"]["trusted"], false);
        assert_eq!(code, 1, "--inconclusive {inconclusive}: {}", describe(&o));
        let (fail, pass) = (&r["sla"][0], &r["sla"][1]);
        assert_eq!(fail["outcome"], "fail", "{fail}");
        assert_eq!(fail["basis"]["rule"], "credited_server", "{fail}");
        let credited = fail["basis"]["credited"].as_f64().unwrap();
        assert!((15.0..=21.0).contains(&credited), "{fail}");
        let note = fail["note"].as_str().unwrap();
        assert!(
            note.contains("fails even after crediting the server with"),
            "{note}"
        );
        assert!(note.contains("the client withheld"), "{note}");
        // A late client only lowers a rate: the pass stands.
        assert_eq!(pass["outcome"], "pass", "{pass}");
        assert_eq!(pass["basis"]["rule"], "unmoved", "{pass}");
        let served = r["stages"][0]["client_net"]["served_s"].as_f64().unwrap();
        assert!(served >= 1.95, "the schedule bounds it: {served}");
    }
}

#[test]
fn a_rate_the_clients_lateness_could_explain_stays_undecided() {
    let dir = tempfile::tempdir().unwrap();
    // Every request held 2 s: the stage takes about 4 s, 10 req/s, against a schedule of 20.
    // Credited with the 2 s the client withheld, the server could have done 20: over 12.
    let t = text(&sim("10us", ""), &["request_throughput > 12 req/s"]);
    let (code, r, o) = gate(dir.path(), &t, "2000", &["--inconclusive", "inconclusive"]);
    assert_eq!(code, 4, "{}", describe(&o));
    let v = &r["sla"][0];
    assert!(v["observed"].as_f64().unwrap() < 12.0, "{v}");
    assert_eq!(v["outcome"], "inconclusive", "{v}");
    assert_eq!(v["basis"]["rule"], "client_may_have_withheld", "{v}");
    assert!(v["basis"]["withheld_ms"].as_f64().unwrap() >= 1000.0, "{v}");
    assert!(v["basis"]["credited"].as_f64().unwrap() >= 12.0, "{v}");
    let note = v["note"].as_str().unwrap();
    assert!(note.contains("the client withheld"), "{note}");
}

#[test]
fn inter_token_gaps_fail_net_of_how_late_the_client_read_and_never_pass_on_its_word() {
    let dir = tempfile::tempdir().unwrap();
    // Decode steps of 200 ms: gaps far over 1 ms whatever the client's reads added, while a
    // pass of ITL or TPOT could be the client's (a late read shortens the gap after it).
    let target = r#"target "sim" {
    decode-base "200ms"
    decode-per-seq "0ms"
    prefill-per-token "10us"
}"#;
    let t = text(
        target,
        &["itl.p50 < 1ms", "tpot.p50 < 1ms", "itl.p50 < 100s"],
    );
    let (code, r, o) = gate(dir.path(), &t, "100", &["--inconclusive", "pass"]);
    assert_eq!(r["stages"][0]["validity"]["trusted"], false);
    assert_eq!(code, 1, "{}", describe(&o));
    for v in &r["sla"].as_array().unwrap()[..2] {
        assert_eq!(v["outcome"], "fail", "{v}");
        assert_eq!(v["basis"]["rule"], "net_of_client", "{v}");
    }
    let net = &r["stages"][0]["client_net"]["latency"];
    assert!(net["itl_ms"]["count"].as_u64().unwrap() > 0, "{net}");
    assert!(net["tpot_ms"]["count"].as_u64().unwrap() > 0, "{net}");
    let pass = &r["sla"][2];
    assert_eq!(pass["outcome"], "inconclusive", "{pass}");
    assert_eq!(pass["basis"]["rule"], "flagged", "{pass}");
    assert_eq!(pass["basis"]["would"], "pass", "{pass}");
}
