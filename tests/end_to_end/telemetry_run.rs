//! The real binary with telemetry against the in-process simulator: an optional NVML source
//! that is missing warns and the run goes on; a required one stops the run with exit 3; the
//! simulator's /metrics gives server series, per-stage summaries and telemetry SLAs.
//!
//! The NVML cases assume no NVIDIA driver on the test machine (the development and CI
//! machines have none); with one, they check the other outcome's invariants instead.

use std::path::Path;

use serde_json::Value;

fn scenario(telemetry: &str, sla: &str) -> String {
    format!(
        r#"
scenario "telemetry-test" {{ seed 3; }}
target "sim" {{
    decode-base "5ms"
    max-running 2
}}
dataset "d" {{
    synthetic {{
        input-tokens 32
        output-tokens 8
    }}
}}
telemetry {{
    interval "100ms"
    {telemetry}
}}
warmup requests=2 clients=2
stage "busy" {{
    dataset "d"
    arrival "concurrency" clients=8
    requests 40
}}
sla {{
    {sla}
}}
"#
    )
}

fn run(dir: &Path, text: &str) -> (i32, String, Option<Value>) {
    let path = dir.join("t.kdl");
    std::fs::write(&path, text).unwrap();
    let out_dir = dir.join("out");
    let out = crate::support::command()
        .args(["run", "-q", "--no-plots", "--untrusted", "judge", "--out"])
        .arg(&out_dir)
        .arg(&path)
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let results = std::fs::read_to_string(out_dir.join("results.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).expect("results.json is JSON"));
    (out.status.code().unwrap_or(-1), stderr, results)
}

fn nvml_present() -> bool {
    infermeter_core::telemetry::open_nvml(None).is_ok()
}

#[test]
fn optional_nvml_warns_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, results) = run(
        dir.path(),
        &scenario("nvml required=#false", "assert \"error_rate < 10%\""),
    );
    assert_eq!(code, 0, "{stderr}");
    let results = results.expect("results written");
    let t = &results["telemetry"];
    assert!(t.is_object(), "telemetry in results: {results}");
    if !nvml_present() {
        let warnings = t["warnings"].as_array().unwrap();
        assert!(
            warnings
                .iter()
                .any(|w| w.as_str().unwrap().contains("nvml")),
            "{warnings:?}"
        );
        assert!(stderr.contains("warning: telemetry"), "{stderr}");
        assert!(t["gpus"].as_array().unwrap().is_empty());
    }
    // Warm-up and the stage are both marked.
    let names: Vec<&str> = t["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["warmup", "busy"]);
}

#[test]
fn required_nvml_missing_is_a_run_error() {
    if nvml_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, results) = run(dir.path(), &scenario("nvml required=#true", ""));
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("telemetry source `nvml` is required but unavailable"),
        "{stderr}"
    );
    assert!(
        stderr.contains("required=#false"),
        "the fix is named: {stderr}"
    );
    // No load was sent: the directory holds only the unfinished marker, saying why.
    let r = results.expect("the run marks its directory before starting");
    assert_eq!(r["complete"], false, "{r}");
    assert_eq!(r["passed"], false);
    assert!(r["stages"].as_array().unwrap().is_empty());
    assert!(r["error"].as_str().unwrap().contains("nvml"), "{r}");
}

#[test]
fn sim_metrics_give_server_series_summaries_and_slas() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr, results) = run(
        dir.path(),
        &scenario(
            "prometheus \"sim\" required=#true",
            // 8 clients on 2 slots: requests must queue; the KV cache is far from full.
            "assert \"queue.max >= 1\" stage=\"busy\"\n    assert \"kv_cache.max < 0.5\" stage=\"busy\"",
        ),
    );
    assert_eq!(code, 0, "{stderr}");
    let results = results.expect("results written");
    let t = &results["telemetry"];
    let servers = t["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0]["kind"], "vllm");
    assert!(!servers[0]["points"].as_array().unwrap().is_empty());
    let busy = t["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "busy")
        .expect("busy stage telemetry");
    let server = &busy["servers"][0];
    assert!(server["samples"].as_u64().unwrap() >= 2);
    assert!(server["waiting_max"].as_f64().unwrap() >= 1.0);
    assert!(server["running_max"].as_f64().unwrap() <= 2.0);
    // The server counted exactly the tokens the stage asked for (ignore_eos).
    assert_eq!(server["generation_tokens"].as_f64().unwrap(), 40.0 * 8.0);
    let sla = results["sla"].as_array().unwrap();
    assert_eq!(sla.len(), 2);
    assert!(sla.iter().all(|v| v["passed"] == true), "{sla:?}");

    // The report has the telemetry section, and the server plot can be drawn from the results.
    let md = std::fs::read_to_string(dir.path().join("out/report.md")).unwrap();
    assert!(md.contains("## Telemetry"), "{md}");
    assert!(md.contains("waiting mean / max"), "{md}");
    let parsed =
        infermeter_core::results::read_results(&dir.path().join("out/results.json")).unwrap();
    let plots = dir.path().join("plots");
    std::fs::create_dir_all(&plots).unwrap();
    let written = infermeter_core::report::write_telemetry_plots(&parsed, &plots).unwrap();
    assert_eq!(written.len(), 1);
    let svg = std::fs::read_to_string(&written[0]).unwrap();
    assert!(svg.contains("<svg") && svg.contains("waiting"), "{svg}");
}

#[test]
fn telemetry_sla_fails_when_the_metric_is_not_measured() {
    let dir = tempfile::tempdir().unwrap();
    // NVML alone (optional) cannot measure the server queue.
    let (code, stderr, results) = run(
        dir.path(),
        &scenario("nvml required=#false", "assert \"queue.max < 5\""),
    );
    assert_eq!(code, 1, "{stderr}");
    let results = results.expect("results written");
    let v = &results["sla"][0];
    assert_eq!(v["passed"], false);
    assert!(
        v["note"]
            .as_str()
            .unwrap()
            .contains("did not measure `queue.max`"),
        "{v}"
    );
}
