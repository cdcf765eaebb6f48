//! The steady-state window through the real binary against the embedded simulator: a stage
//! whose rate ramps up then holds gets a window that leaves the ramp out, with both the
//! whole stage's p99 and the window's shown (results.json, the summary, report.md); an
//! assertion on the window is judged on it; `compare --window steady` compares windows.

use crate::support::{describe, infermeter, results, run, scenario, stage, text};

/// Requests take ~330 ms (32 decode steps of 10 ms) whatever the load, so the requests in
/// flight follow the rate: 2/s rising to 30/s over 6 s (under 4 in flight at first, ~10 at
/// the top), then 30/s for 8 s. `untrusted "judge"`: a loaded test machine may make the
/// client lag, and these tests are about the window, not the validity rules.
const SRC: &str = r#"
target "sim" {
    timeout "20s"
    max-running 256
    decode-base "10ms"
    decode-per-seq "0ms"
    prefill-per-token "0us"
}
dataset "d" {
    synthetic {
        input-tokens 32
        output-tokens 32
    }
}
stage "ramp-then-hold" {
    dataset "d"
    arrival "ramp" from=2 to=30 over="6s"
    duration "14s"
}
sla {
    untrusted "judge"
    assert "error_rate[window=steady] < 5%"
}
sla {
    window "steady"
    assert "e2e.p50 < 20s"
}
"#;

#[test]
fn a_ramp_is_left_out_of_the_window_and_both_p99s_are_shown() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", SRC);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let s = stage(&r, "ramp-then-hold");
    let w = &s["steady"];
    let (from, to) = (w["from_s"].as_f64().unwrap(), w["to_s"].as_f64().unwrap());
    let wall = s["wall_time_s"].as_f64().unwrap();
    // The first seconds of the ramp (under a third of the top rate) are out; the window
    // holds the plateau and ends by the stage's end.
    assert!((2.0..=7.0).contains(&from), "window {from}–{to}: {w}");
    assert!(
        to - from >= 5.0 && to <= wall,
        "window {from}–{to} of {wall}: {w}"
    );
    assert_eq!(w["ratio"], 0.8, "{w}");
    let sent = s["requests"]["sent"].as_u64().unwrap();
    let in_window = w["requests"]["sent"].as_u64().unwrap();
    assert!(in_window > 50 && in_window < sent, "{in_window} of {sent}");
    // The ramp and the drain thin the whole stage's rate; the window's is the plateau's.
    let whole_rate = s["throughput"]["requests_per_s"].as_f64().unwrap();
    let window_rate = w["throughput"]["requests_per_s"].as_f64().unwrap();
    assert!(window_rate > whole_rate, "{window_rate} vs {whole_rate}");
    // Both p99s, each with its interval: the window's by batches.
    let whole_p99 = s["latency"]["ttft_ms"]["p99"].as_f64().unwrap();
    let window_p99 = w["latency"]["ttft_ms"]["p99"].as_f64().unwrap();
    assert!(whole_p99 > 0.0 && window_p99 > 0.0, "{s}");
    assert_eq!(
        w["latency"]["ttft_ms"]["intervals"]["method"], "batches",
        "{w}"
    );
    assert_eq!(w["latency"]["itl_ms"]["count"], 0, "{w}");
    // The timeline says what the window was found from.
    let peak = s["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["in_flight"].as_f64())
        .fold(0.0, f64::max);
    assert!(peak >= w["peak_in_flight"].as_f64().unwrap(), "{s}");
    // The verdicts were judged on the window, and say so.
    let exprs: Vec<&str> = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["expr"].as_str().unwrap())
        .collect();
    assert_eq!(
        exprs,
        [
            "error_rate[window=steady] < 5%",
            "e2e.p50[window=steady] < 20s"
        ]
    );
    for v in r["sla"].as_array().unwrap() {
        assert_eq!(v["outcome"], "pass", "{v}");
        assert!(v["note"].as_str().unwrap().contains("window"), "{v}");
    }
    // The summary and the Markdown report show the window beside the whole stage.
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("steady ") && stdout.contains("whole stage: TTFT p99"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("**Steady state**") && md.contains("steady latency (ms)"),
        "{md}"
    );
    assert!(md.contains("ramp ") && md.contains("drain "), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("<strong>Steady state</strong>"),
        "report.html"
    );
    // Two runs' windows compare (here a run with itself: nothing moved).
    let file = out.join("results.json");
    let file = file.to_str().unwrap();
    let o = infermeter(&[
        "compare", file, file, "--window", "steady", "--format", "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, _) = text(&o);
    assert!(stdout.contains("ramp-then-hold"), "{stdout}");
}

#[test]
fn a_stage_without_a_window_fails_an_assertion_on_it_and_compare_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    // Ten requests over about a second: no three seconds of steady load.
    let src = SRC
        .replace(
            "arrival \"ramp\" from=2 to=30 over=\"6s\"",
            "arrival \"constant\" rate=10",
        )
        .replace("duration \"14s\"", "requests 10");
    let path = scenario(dir.path(), "s.kdl", &src);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    assert!(stage(&r, "ramp-then-hold").get("steady").is_none(), "{r}");
    let v = &r["sla"][0];
    assert_eq!(v["outcome"], "fail", "{v}");
    assert!(
        v["note"]
            .as_str()
            .unwrap()
            .contains("no steady-state window"),
        "{v}"
    );
    let file = out.join("results.json");
    let file = file.to_str().unwrap();
    let o = infermeter(&["compare", file, file, "--window", "steady"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("has no steady-state window"), "{stderr}");
    // Whole stages compare as before.
    let o = infermeter(&["compare", file, file]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}
