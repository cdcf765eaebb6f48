//! MLPerf presets through the real binary against the embedded simulator: the preset's bounds
//! are ordinary SLA verdicts (a simulator slowed past the interactive TTFT bound fails, exit
//! 1), a short run says it does not qualify and why without changing the exit code, unless
//! `require=#true`, and a preset the table does not know is an invalid scenario (exit 2) that
//! points at its line.

use crate::support::{describe, infermeter, results, run, scenario, text};

/// A quick simulator and a stage of 320 requests: enough for every p99 verdict to be decided
/// at 95 % (299), far too short to qualify.
fn short_run(mlperf: &str, sim: &str) -> String {
    format!(
        r#"
target "sim" {{
    timeout "20s"
    decode-base "1ms"
    decode-per-seq "0ms"
    {sim}
}}
dataset "d" {{
    synthetic {{
        input-tokens 32 64
        output-tokens 4 8
    }}
}}
stage "main" {{
    dataset "d"
    arrival "concurrency" clients=16
    requests 320
}}
{mlperf}
"#
    )
}

#[test]
fn a_smoke_run_passes_its_bounds_and_says_it_does_not_qualify() {
    let dir = tempfile::tempdir().unwrap();
    let src = short_run(
        r#"mlperf "llama3.1-8b" scenario="server" smoke=#true"#,
        r#"prefill-per-token "1us""#,
    );
    let path = scenario(dir.path(), "s.kdl", &src);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    let exprs: Vec<&str> = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["expr"].as_str().unwrap())
        .collect();
    assert!(exprs.contains(&"ttft.p99 < 2000ms"), "{exprs:?}");
    assert!(exprs.contains(&"tpot.p99 < 100ms"), "{exprs:?}");
    let m = &r["mlperf"];
    assert_eq!(m["benchmark"], "llama3.1-8b", "{m}");
    assert_eq!(m["scenario"], "server", "{m}");
    assert_eq!(m["qualifies"], false, "{m}");
    assert_eq!(m["smoke"], true, "{m}");
    assert_eq!(m["bounds"]["min_duration_s"], 600.0, "{m}");
    assert_eq!(m["measured"]["queries"], 320, "{m}");
    let reasons = m["reasons"].to_string();
    assert!(reasons.contains("s < 600 s"), "{reasons}");
    assert!(r["passed"] == true, "qualifying is not required: {r}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report
            .contains("MLPerf llama3.1-8b server: does not qualify (smoke run), because: duration"),
        "{report}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("does not qualify (smoke run)"),
        "the HTML report says it too"
    );
    let pr = std::fs::read_to_string(out.join("report.pr.md")).unwrap();
    assert!(pr.contains("does not qualify (smoke run)"), "{pr}");
    let (stdout, stderr) = text(&o);
    assert!(
        format!("{stdout}{stderr}")
            .contains("MLPerf llama3.1-8b server: does not qualify (smoke run), because:"),
        "the terminal summary: {stdout}{stderr}"
    );
}

#[test]
fn require_makes_a_run_that_does_not_qualify_fail() {
    let dir = tempfile::tempdir().unwrap();
    let src = short_run(
        r#"mlperf "llama3.1-8b" require=#true"#,
        r#"prefill-per-token "1us""#,
    );
    let path = scenario(dir.path(), "s.kdl", &src);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["passed"], false, "{r}");
    assert_eq!(r["mlperf"]["required"], true, "{}", r["mlperf"]);
    // Every SLA held: only qualification failed the run.
    assert_eq!(r["outcome"], "pass", "{r}");
    let (_, err) = text(&o);
    assert!(
        err.contains("MLPerf llama3.1-8b server: does not qualify, because: duration"),
        "{err}"
    );
}

#[test]
fn a_slow_first_token_fails_the_interactive_bound() {
    let dir = tempfile::tempdir().unwrap();
    // 32..64 prompt tokens at 20 ms each: every TTFT is over 600 ms, past the 500 ms bound of
    // llama3.1-8b interactive (and well under the 2 s of its Server scenario).
    let src = short_run(
        r#"mlperf "llama3.1-8b" scenario="interactive" smoke=#true"#,
        r#"prefill-per-token "20ms""#,
    )
    .replace("requests 320", "requests 40");
    let path = scenario(dir.path(), "s.kdl", &src);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let r = results(&out);
    let ttft = r["sla"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["expr"] == "ttft.p99 < 500ms")
        .unwrap_or_else(|| panic!("the interactive TTFT bound: {}", r["sla"]));
    assert_eq!(ttft["outcome"], "fail", "{ttft}");
    let m = &r["mlperf"];
    assert_eq!(m["scenario"], "interactive", "{m}");
    assert_eq!(m["bounds"]["ttft_p99_ms"], 500.0, "{m}");
    assert_eq!(m["qualifies"], false, "{m}");
}

#[test]
fn an_unknown_preset_is_invalid_and_names_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let src = short_run(r#"mlperf "llama3-8b""#, "");
    let path = scenario(dir.path(), "bad.kdl", &src);
    let line = src.lines().position(|l| l.starts_with("mlperf")).unwrap() + 1;
    let o = infermeter(&["run", path.to_str().unwrap(), "--out", "/dev/null/x"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, err) = text(&o);
    assert!(
        err.contains("unknown MLPerf benchmark `llama3-8b`"),
        "{err}"
    );
    assert!(
        err.contains(&format!("bad.kdl:{line}:")),
        "line {line}: {err}"
    );
    assert!(
        err.contains("\"llama3.1-8b\"") && err.contains("\"gpt-oss-120b\""),
        "{err}"
    );
}

#[test]
fn an_assertion_looser_than_the_preset_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let src = short_run(
        r#"mlperf "deepseek-r1" scenario="interactive"
sla { assert "ttft.p99 < 3s"; assert "tpot.p99 < 10ms"; }"#,
        "",
    );
    let path = scenario(dir.path(), "loose.kdl", &src);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    let said = format!("{out}{err}");
    assert!(
        said.contains("`ttft.p99 < 3s` is looser than MLPerf deepseek-r1 interactive's bound"),
        "{said}"
    );
    // A stricter one is the user's choice, and stands in for the preset's.
    assert!(!said.contains("tpot.p99 < 10ms` is looser"), "{said}");
}

#[test]
fn validate_says_what_the_preset_needs_and_warns_of_a_stage_too_short() {
    let dir = tempfile::tempdir().unwrap();
    let src = short_run(r#"mlperf "gpt-oss-120b" scenario="interactive""#, "")
        .replace("requests 320", "duration \"30s\"");
    let path = scenario(dir.path(), "short.kdl", &src);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(
        out.contains(
            "mlperf  gpt-oss-120b interactive on stage `main`: ttft.p99 < 2000ms, tpot.p99 < 15ms"
        ),
        "{out}"
    );
    assert!(
        err.contains("stage `main` runs at most 30 s, so the run cannot qualify"),
        "{err}"
    );
    // A smoke run is not meant to qualify: no warning.
    let smoke = scenario(
        dir.path(),
        "smoke.kdl",
        &src.replace(
            "scenario=\"interactive\"",
            "scenario=\"interactive\" smoke=#true",
        ),
    );
    let o = infermeter(&["validate", smoke.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert!(!err.contains("cannot qualify"), "{err}");
}

#[test]
fn a_sweep_cannot_be_the_mlperf_run() {
    let dir = tempfile::tempdir().unwrap();
    let src = short_run(r#"mlperf "llama2-70b""#, "").replace(
        "arrival \"concurrency\" clients=16\n    requests 320",
        "arrival \"poisson\" rate=5\n    sweep { rates 5 10; }\n    duration \"5s\"",
    );
    assert!(src.contains("sweep"), "{src}");
    let path = scenario(dir.path(), "sweep.kdl", &src);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, err) = text(&o);
    assert!(
        err.contains("`mlperf` judges one run at one load, and stage `main` is a sweep"),
        "{err}"
    );
}

/// Shards run uncoordinated each judge their own share; `merge` judges the whole run again,
/// and with `require=#true` exits 1 when the whole does not qualify.
#[test]
fn a_merged_run_is_judged_on_all_its_shards() {
    let sim = crate::support::SimProcess::start(&["--jitter", "0"]);
    let dir = tempfile::tempdir().unwrap();
    let src = format!(
        r#"
scenario "shards" {{ seed 3; }}
target "{}" {{ timeout "30s"; }}
dataset "d" {{ synthetic {{ input-tokens 32 64; output-tokens 4; }} }}
stage "main" {{ dataset "d"; arrival "concurrency" clients=8; requests 200; }}
mlperf "llama3.1-8b" require=#true
"#,
        sim.base_url
    );
    let path = scenario(dir.path(), "shards.kdl", &src);
    let mut files = Vec::new();
    for i in 0..2 {
        let out = dir.path().join(format!("shard-{i}"));
        let o = run(&path, &out, &["--shard", &format!("{i}/2")]);
        assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
        assert_eq!(results(&out)["mlperf"]["measured"]["queries"], 100);
        files.push(out.join("results.json").display().to_string());
    }
    let merged = dir.path().join("merged");
    let o = infermeter(&[
        "merge",
        &files[0],
        &files[1],
        "--out",
        merged.to_str().unwrap(),
        "--no-plots",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
    let m = results(&merged);
    assert_eq!(m["mlperf"]["measured"]["queries"], 200, "{}", m["mlperf"]);
    assert_eq!(m["passed"], false);
    let (_, err) = text(&o);
    assert!(err.contains("does not qualify, because: duration"), "{err}");
}
