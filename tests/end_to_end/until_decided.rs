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
    let file = infermeter::results::read_results(&out.join("results.json")).unwrap();
    let again = recomputed(&file, "error_rate < 5%");
    assert_eq!(serde_json::to_value(&again).unwrap(), *verdict);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("the first {m} requests in send order")),
        "{report}"
    );
}

/// The verdict of `expr` on stage `main`, judged again from a results file alone.
fn recomputed(r: &infermeter::results::Results, expr: &str) -> infermeter::sla::SlaVerdict {
    use infermeter::sla::{Context, Policy, ScopedAssertion, judge, parse};
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
