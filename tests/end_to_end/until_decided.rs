//! `until-decided` stages through the real binary against the embedded simulator: a stage
//! whose assertion is plainly met stops long before its maximum, with its verdict decided on
//! the stage's confidence sequence; one whose assertion no count within its maximum can
//! decide sends exactly its maximum and ends inconclusive; and the plan shows the rule.

use crate::support::{describe, infermeter, results, run, scenario, stage, text};

/// A quick simulator. `untrusted "judge"`: on a loaded test machine the client may lag, and
/// these tests are about when a stage stops, not about the validity rules.
const SIM: &str = r#"
target "sim" {
    timeout "10s"
    decode-base "2ms"
    decode-per-seq "0ms"
    prefill-per-token "5us"
}
dataset "d" {
    synthetic {
        input-tokens 32 64
        output-tokens 8 16
    }
}
sla { untrusted "judge"; }
"#;

#[test]
fn a_plainly_met_assertion_stops_the_stage_early() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        r#"{SIM}
stage "main" {{
    dataset "d"
    arrival "concurrency" clients=4
    requests 30 until-decided max=20000
    sla {{ assert "ttft.p50 < 30s"; }}
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &src);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let s = stage(&r, "main");
    let until = &s["until_decided"];
    assert_eq!(until["stopped"], "decided", "{until}");
    let sent = s["requests"]["sent"].as_u64().unwrap();
    assert!((30..20_000).contains(&sent), "sent {sent}: {until}");
    let at = until["stopped_at_requests"].as_u64().unwrap();
    assert!(at >= 30 && at <= sent, "{until}");
    assert!(until["looks"].as_u64().unwrap() >= 1, "{until}");
    assert_eq!(until["max_requests"], 20_000);
    let v = &r["sla"][0];
    assert_eq!(v["outcome"], "pass", "{v}");
    assert_eq!(v["interval"]["sequential"], true, "{v}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("until-decided"), "{report}");
}

#[test]
fn an_undecidable_assertion_sends_the_maximum_and_ends_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    // No error among 60 requests cannot show a rate under 0.1 %: that takes thousands.
    let src = format!(
        r#"{SIM}
stage "main" {{
    dataset "d"
    arrival "constant" rate=200
    requests 20 until-decided max=60
    sla {{ assert "error_rate < 0.1%"; }}
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &src);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
    let r = results(&out);
    let s = stage(&r, "main");
    assert_eq!(s["until_decided"]["stopped"], "max_reached", "{s}");
    assert_eq!(s["requests"]["sent"], 60);
    let v = &r["sla"][0];
    assert_eq!(v["outcome"], "inconclusive", "{v}");
    assert_eq!(v["interval"]["sequential"], true, "{v}");
    let (outp, err) = text(&o);
    let both = format!("{outp}{err}");
    assert!(both.contains("confidence sequence"), "{both}");
}

#[test]
fn the_plan_carries_the_rule_and_validate_says_what_each_assertion_needs() {
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        r#"{SIM}
stage "short" {{
    dataset "d"
    arrival "constant" rate=50
    requests 200
    sla {{ assert "error_rate < 1%"; }}
}}
stage "long" {{
    dataset "d"
    arrival "constant" rate=50
    requests 200 until-decided max=2000
    sla {{ assert "error_rate < 1%"; }}
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &src);
    let p = path.to_str().unwrap();
    let v = infermeter(&["validate", p]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
    let (out, err) = text(&v);
    assert!(out.contains("381") && out.contains("TOO FEW"), "{out}");
    assert!(
        err.contains("stage `short`") && err.contains("never pass"),
        "{err}"
    );
    assert!(!err.contains("stage `long`"), "{err}");
    let plan = infermeter(&["plan", p, "--format", "json"]);
    assert_eq!(plan.status.code(), Some(0), "{}", describe(&plan));
    let json: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let json = &json["plan"];
    let long = &json["stages"][1];
    assert_eq!(long["until_decided"]["min_requests"], 200, "{long}");
    assert_eq!(long["max_requests"], 2000, "{long}");
    assert!(json["stages"][0].get("until_decided").is_none());

    // Where it cannot apply, the file says so at the word.
    let bad = scenario(
        dir.path(),
        "bad.kdl",
        &format!(
            r#"{SIM}
stage "main" {{
    dataset "d"
    arrival "constant" rate=50
    requests 200 until-decided max=100
    sla {{ assert "error_rate < 1%"; }}
}}
"#
        ),
    );
    let o = infermeter(&["validate", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o).1.contains("below the stage's minimum"),
        "{}",
        describe(&o)
    );
}

/// Requests that take about a second (8 to 16 tokens at 100 ms each) sent at 100/s: some
/// 100 to 160 are always in flight. Counted as unknown, they hold `error_rate < 5%` open
/// until they are under 5 % of the requests begun, thousands past this stage's maximum; the
/// first requests in send order, all completed and none failed, decide it after a few
/// hundred.
const SLOW: &str = r#"
target "sim" {
    timeout "10s"
    decode-base "100ms"
    decode-per-seq "0ms"
    prefill-per-token "5us"
}
dataset "d" {
    synthetic {
        input-tokens 32 64
        output-tokens 8 16
    }
}
sla { untrusted "judge"; }
stage "main" {
    dataset "d"
    arrival "constant" rate=100
    requests 100 until-decided max=1500
    sla { assert "error_rate < 5%"; }
}
"#;

#[test]
fn the_complete_prefix_decides_where_the_requests_in_flight_hold_the_stage_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", SLOW);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let s = stage(&r, "main");
    let until = &s["until_decided"];
    assert_eq!(until["stopped"], "decided", "{until}");
    assert_eq!(until["decided_by"], "prefix", "{until}");
    let sent = s["requests"]["sent"].as_u64().unwrap();
    assert!(sent < 1500, "sent {sent}: {until}");
    // The prefix at the stop: the first m requests, all completed, fewer than were
    // completed at that look (those behind a slower one were held back), every one ok.
    let prefix = &until["prefix"];
    let m = prefix["requests"].as_u64().unwrap();
    let at = until["stopped_at_requests"].as_u64().unwrap();
    assert!(m >= 1 && m <= at && at <= sent, "{until}");
    let v = &prefix["verdicts"][0];
    assert_eq!(v["expr"], "error_rate < 5%", "{prefix}");
    assert_eq!(v["outcome"], "pass", "{prefix}");
    assert!(v["high"].as_f64().unwrap() < 5.0, "{prefix}");
    // What the in-flight look saw at the stop could not decide it: the requests in flight
    // then, all failed, would be more than 5 % of those begun.
    assert!(sent - at > sent / 20, "{until}, sent {sent}");
    let verdict = &r["sla"][0];
    assert_eq!(verdict["outcome"], "pass", "{verdict}");
    assert_eq!(verdict["interval"]["sequential"], true, "{verdict}");

    // The file alone gives the same verdict: read and validated as `report` reads it, the
    // assertion judged again on its stages under its policy.
    let file = infermeter_core::results::read_results(&out.join("results.json")).unwrap();
    let again = recomputed(&file, "error_rate < 5%");
    assert_eq!(serde_json::to_value(&again).unwrap(), *verdict);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("the first {m} requests in send order")),
        "{report}"
    );
}

/// The verdict of `expr` on stage `main`, judged again from a results file alone.
fn recomputed(
    r: &infermeter_core::results::Results,
    expr: &str,
) -> infermeter_core::sla::SlaVerdict {
    use infermeter_core::sla::{Context, Policy, ScopedAssertion, judge, parse};
    let scoped = ScopedAssertion::on(parse(expr).unwrap(), "main");
    let cx = Context {
        policy: Policy {
            confidence: r.sla_policy.confidence,
            untrusted: r.sla_policy.untrusted,
            intervals: true,
        },
        ..Context::default()
    };
    judge(&[scoped], &r.stages, &cx).remove(0)
}

/// The prefix fallback through the binary: a server (written for the test) that makes the
/// whole stage undecided at its end while the complete prefix has decided. It keys every
/// answer on the request's index in the stage's plan (the low 32 bits of the `traceparent`'s
/// trace id, `crates/words/src/protocol/trace.rs`), so nothing depends on which request arrives first:
/// - indices below [`CLEAN`] succeed, all answered together once the first
///   `CLEAN + HUNG` requests have arrived (so no look can see the clean ones without the hung
///   ones begun);
/// - the next [`HUNG`] hang until no request has arrived for [`QUIET`] (the stage has stopped
///   sending), then fail with a `500`: in flight at every look, they hold the whole stage
///   open, and keep the complete prefix at the clean ones;
/// - every later index succeeds at once (behind the hung ones in send order, outside the
///   prefix).
///
/// So the prefix (the first `CLEAN` requests, none failed) passes `error_rate < 5%` at the
/// first look that sees it whole, and the whole stage ends with `HUNG` failures among a few
/// hundred requests: undecided on its confidence sequence (10 failures stay undecided from
/// 56 to 444 requests at this tuning; `STOP_BY` below is asserted from the library, not
/// assumed). The verdict is the prefix's, basis `prefix`.
mod fallback {
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::{Duration, Instant};

    use crate::support::raw_server::{After, Post, RawServer};

    /// Requests that succeed: more than the 122 with no failure that decide `error_rate < 5%`
    /// at this stage's tuning, so the prefix decides however the looks fall.
    pub const CLEAN: u64 = 150;
    /// Requests held in flight, then failed.
    pub const HUNG: u64 = 10;
    /// The most requests the stage may have sent when it stops for the test to hold: at 50
    /// a second, over five seconds after the clean ones are answered.
    pub const STOP_BY: u64 = 440;
    /// Silence after which the stage has stopped sending (it sends one every 20 ms).
    const QUIET: Duration = Duration::from_secs(3);
    /// No wait lasts longer, whatever the client does.
    const LIMIT: Duration = Duration::from_secs(90);

    #[derive(Default)]
    struct Seen {
        arrived: u64,
        last: Option<Instant>,
        /// Answers without a plan index: the test fails on any.
        unindexed: u64,
    }

    /// The request's index in its stage's plan, from its `traceparent`.
    fn plan_index(p: &Post<'_>) -> Option<u64> {
        let tp = p.header("traceparent")?;
        let trace_id = tp.split('-').nth(1)?;
        u64::from_str_radix(trace_id.get(24..32)?, 16).ok()
    }

    fn ok(p: &mut Post<'_>) -> After {
        let mut body = String::new();
        for _ in 0..8 {
            body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n");
        }
        body.push_str(
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":8}}\n\n\
             data: [DONE]\n\n",
        );
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        if p.write(head.as_bytes()) && p.write(body.as_bytes()) {
            After::KeepAlive
        } else {
            After::Close
        }
    }

    fn failed(p: &mut Post<'_>) -> After {
        let body = r#"{"error":{"message":"held, then failed"}}"#;
        let head = format!(
            "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = p.write(head.as_bytes()) && p.write(body.as_bytes());
        After::Close
    }

    /// The server, and a count of the requests it could not place in the plan.
    pub fn start() -> (RawServer, Arc<dyn Fn() -> u64 + Send + Sync>) {
        let state = Arc::new((Mutex::new(Seen::default()), Condvar::new()));
        let s = state.clone();
        let server = RawServer::start(true, move |p: &mut Post<'_>| {
            p.read_body();
            let (lock, cv) = &*s;
            let Some(index) = plan_index(p) else {
                lock.lock().unwrap().unindexed += 1;
                return ok(p);
            };
            let begun = Instant::now();
            let mut seen = lock.lock().unwrap();
            seen.arrived += 1;
            seen.last = Some(begun);
            cv.notify_all();
            if index < CLEAN {
                while seen.arrived < CLEAN + HUNG && begun.elapsed() < LIMIT {
                    seen = cv.wait_timeout(seen, Duration::from_millis(100)).unwrap().0;
                }
                drop(seen);
                ok(p)
            } else if index < CLEAN + HUNG {
                while seen.last.is_some_and(|l| l.elapsed() < QUIET) && begun.elapsed() < LIMIT {
                    seen = cv.wait_timeout(seen, Duration::from_millis(100)).unwrap().0;
                }
                drop(seen);
                failed(p)
            } else {
                drop(seen);
                ok(p)
            }
        });
        let unindexed = move || state.0.lock().unwrap().unindexed;
        (server, Arc::new(unindexed))
    }
}

#[test]
fn where_the_whole_stage_ends_undecided_the_verdict_is_the_complete_prefixs() {
    use fallback::{CLEAN, HUNG, STOP_BY};
    the_design_holds();
    let (server, unindexed) = fallback::start();
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        r#"
target "{}" {{ model "m"; timeout "60s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 8; }} }}
stage "main" {{
    dataset "d"
    arrival "constant" rate=50
    requests 100 until-decided max=2000
    sla {{ assert "error_rate < 5%"; }}
}}
"#,
        server.base_url
    );
    let path = scenario(dir.path(), "s.kdl", &src);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    let r = results(&out);
    let s = stage(&r, "main");
    assert_eq!(
        unindexed(),
        0,
        "requests without a plan index: {}",
        describe(&o)
    );
    let until = &s["until_decided"];
    assert_eq!(until["stopped"], "decided", "{until}\n{}", describe(&o));
    assert_eq!(until["decided_by"], "prefix", "{until}");
    let sent = s["requests"]["sent"].as_u64().unwrap();
    assert!(
        (CLEAN + HUNG..=STOP_BY).contains(&sent),
        "sent {sent}: {until}"
    );
    assert_eq!(s["requests"]["failed"], HUNG, "{s}");
    // The prefix at the stop: clean requests only (the first hung one ends it), enough of
    // them to decide.
    let prefix = &until["prefix"];
    let m = prefix["requests"].as_u64().unwrap();
    assert!((122..=CLEAN).contains(&m), "{prefix}");
    let look = &prefix["verdicts"][0];
    assert_eq!(look["expr"], "error_rate < 5%", "{prefix}");
    assert_eq!(look["outcome"], "pass", "{prefix}");

    let verdict = &r["sla"][0];
    let (stdout, stderr) = text(&o);
    let terminal = format!("{stdout}{stderr}");
    // Which branch ran, for `--nocapture`: a quiet machine takes the first.
    eprintln!(
        "trusted {}, sent {sent}, prefix {m}, looks {}: {}",
        s["validity"]["trusted"], until["looks"], verdict["note"]
    );
    if s["validity"]["trusted"] == true {
        // The whole stage (10 failed of `sent`) is undecided; the prefix's pass stands.
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        prefix_pass(verdict, m);
        let wording = format!("decided on the first {m} requests in send order");
        assert!(terminal.contains(&wording), "{terminal}");
        assert!(terminal.contains("over every request sent"), "{terminal}");
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(report.contains(&wording), "{report}");
    } else {
        // A loaded machine may flag the client: the prefix was judged before the stage's
        // end read its flags, so the whole stage's "undecided" stands (docs/sla.md).
        assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
        assert_eq!(verdict["outcome"], "inconclusive", "{verdict}");
        assert!(
            verdict.get("basis").is_none_or(|b| b["rule"] != "prefix"),
            "{verdict}"
        );
        assert!(!terminal.contains("decided on the first"), "{terminal}");
        assert!(
            terminal.contains("the stage's confidence sequence straddles the threshold"),
            "{terminal}"
        );
    }
    // Either way the file alone gives the same verdict.
    let file = infermeter_core::results::read_results(&out.join("results.json")).unwrap();
    let again = recomputed(&file, "error_rate < 5%");
    assert_eq!(serde_json::to_value(&again).unwrap(), *verdict);
}

/// The fallback test's design, from the sequences its stage uses: the clean requests decide
/// the prefix, and the hung failures leave every whole stage the test accepts undecided.
fn the_design_holds() {
    use fallback::{CLEAN, HUNG, STOP_BY};
    let tuned = infermeter_core::stats::sequence_tuning(Some(100), Some(2000));
    let bounds =
        |k, n| infermeter_core::stats::proportion_sequence(k, n, 0.05, 0.95, tuned).unwrap();
    assert!(bounds(0, 122).1 < 0.05 && bounds(0, 121).1 >= 0.05);
    for n in CLEAN + HUNG..=STOP_BY {
        let (low, high) = bounds(HUNG, n);
        assert!(low < 0.05 && high > 0.05, "{HUNG} of {n}: {low}–{high}");
    }
}

/// A verdict that is the complete prefix's pass on its first `m` requests.
fn prefix_pass(verdict: &serde_json::Value, m: u64) {
    assert_eq!(verdict["outcome"], "pass", "{verdict}");
    assert_eq!(verdict["basis"]["rule"], "prefix", "{verdict}");
    assert_eq!(verdict["basis"]["requests"], m, "{verdict}");
    assert_eq!(verdict["interval"]["sequential"], true, "{verdict}");
    let high = verdict["interval"]["high"].as_f64().unwrap();
    assert!(high < 5.0, "{verdict}");
}
