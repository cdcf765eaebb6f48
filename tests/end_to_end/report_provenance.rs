//! Where a result came from, end to end: a run against a simulator in its own process, given
//! by a URL with credentials in it, records the build, the command line with the credentials
//! masked, the params, tags and file hash, the host (without its name when asked), and what
//! the server said about itself; every report form is written; the console shows the point
//! of a sweep, elapsed time and the lag unit.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::support::{self, SimProcess};

const SCENARIO: &str = r#"
scenario "provenance" {
    seed 3
    tags "nightly" "sim"
}
param "rate" 20
target "http://127.0.0.1:9/v1" {
    timeout "10s"
}
dataset "d" {
    synthetic {
        input-tokens 16
        output-tokens 4
    }
}
stage "sweep" {
    dataset "d"
    arrival "poisson" rate=(param)"rate"
    duration "1s"
    sweep {
        rates 10 20
    }
}
sla {
    assert "ttft.p95 < 5s"
}
"#;

#[test]
fn results_say_where_they_came_from_and_every_report_form_is_written() {
    let sim = SimProcess::start(&["--decode-base", "1ms"]);
    let dir = tempfile::tempdir().unwrap();
    let path = support::scenario(dir.path(), "p.kdl", SCENARIO);
    let out = dir.path().join("out");
    // Credentials in the URL must reach no file.
    let url = sim.base_url.replacen("http://", "http://admin:s3cr3t@", 1);
    let url = format!("{}/v1", url.trim_end_matches('/').trim_end_matches("/v1"));
    // Not `support::run`: its --quiet would hide the progress lines looked at here.
    let o = support::command()
        .arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .args([
            "--url",
            &url,
            "--param",
            "rate=12",
            "--no-hostname",
            "--progress-lines",
            "--color",
            "never",
            "--untrusted",
            "judge",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = support::text(&o);
    assert!(
        matches!(o.status.code(), Some(0) | Some(4)),
        "{}",
        support::describe(&o)
    );
    assert!(
        stderr.contains("(point 1 of 2)") && stderr.contains("(point 2 of 2)"),
        "{stderr}"
    );
    assert!(stderr.contains("elapsed "), "{stderr}");
    assert!(stdout.contains("lag p99 ms"), "{stdout}");
    assert!(!stdout.contains('\u{1b}'), "--color never");

    provenance_recorded(&out);
    no_secret_and_every_form_written(&out);
    report_renders_every_form(&out);
}

/// The build, the command line, the params, tags and file hash, the host (without its name)
/// and what the server said about itself.
fn provenance_recorded(out: &Path) {
    let r = support::results(out);
    let p = &r["provenance"];
    assert_eq!(p["build"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(!p["build"]["commit"].as_str().unwrap().is_empty());
    let cmd: Vec<&str> = p["command_line"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(cmd.contains(&"run") && cmd.contains(&"rate=12"), "{cmd:?}");
    assert_eq!(p["params"]["rate"], 12);
    assert_eq!(p["tags"], serde_json::json!(["nightly", "sim"]));
    let want: String = Sha256::digest(SCENARIO.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(p["scenario_sha256"], want.as_str());
    assert!(p["ended_at"].as_str().unwrap() >= p["started_at"].as_str().unwrap());
    let host = &p["host"];
    assert!(host.get("hostname").is_none(), "--no-hostname");
    assert!(host["cpus"].as_u64().unwrap() >= 1);
    assert!(!host["kernel"].as_str().unwrap().is_empty());
    let server = &p["server"];
    assert!(
        server["server_header"]
            .as_str()
            .unwrap()
            .starts_with("infermeter-sim"),
        "{server}"
    );
    for path in ["/v1/models", "/version", "/props", "/get_server_info"] {
        assert!(
            server["endpoints"][path].is_object(),
            "{path} answered: {server}"
        );
    }
}

/// Every file the run wrote: no URL password in any; each form shaped for where it is read.
fn no_secret_and_every_form_written(out: &Path) {
    for file in [
        "results.json",
        "report.md",
        "report.html",
        "report.pr.md",
        "stages.csv",
    ] {
        let text = std::fs::read_to_string(out.join(file)).unwrap();
        assert!(!text.contains("s3cr3t"), "{file} shows the URL's password");
    }
    let pr = std::fs::read_to_string(out.join("report.pr.md")).unwrap();
    assert!(!pr.contains("]("), "a PR comment links nothing: {pr}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    // An image right after a table would be swallowed into its last row on GitHub.
    let lines: Vec<&str> = md.lines().collect();
    for w in lines.windows(2) {
        assert!(
            !(w[0].starts_with('|') && w[1].starts_with("![")),
            "an image glued to a table: {w:?}"
        );
    }
    assert!(md.contains("| command line |") && md.contains("| server |"));
    let csv = std::fs::read_to_string(out.join("stages.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 2, "a header and one row per sweep point");
    assert!(rows[0].starts_with("stage,profile_group,offered_load,sent,ok,failed,"));
    assert!(rows[1].starts_with("sweep@10rps,sweep,10,"), "{}", rows[1]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("class=\"infermeter-plot\" data-kind=\"profile\""));
}

/// `report` renders every form from the saved results.
fn report_renders_every_form(out: &Path) {
    for (format, marker) in [
        ("html", "<!DOCTYPE html>"),
        ("csv", "stage,profile_group"),
        ("pr-comment", "artifacts"),
        ("markdown", "### Reproducibility"),
    ] {
        let o = support::infermeter(&[
            "report",
            out.join("results.json").to_str().unwrap(),
            "--format",
            format,
        ]);
        let (stdout, _) = support::text(&o);
        assert!(
            o.status.success() && stdout.contains(marker),
            "{format}: {}",
            support::describe(&o)
        );
    }
}

#[test]
fn the_host_name_is_recorded_unless_opted_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::scenario(
        dir.path(),
        "h.kdl",
        r#"
scenario "host" { seed 1 }
target "sim"
dataset "d" {
    synthetic {
        input-tokens 8
        output-tokens 2
    }
}
stage "s" {
    dataset "d"
    arrival "concurrency" clients=1
    requests 3
}
"#,
    );
    let out = dir.path().join("out");
    let o = support::run(&path, &out, &["--color", "always"]);
    assert!(o.status.success(), "{}", support::describe(&o));
    let (stdout, _) = support::text(&o);
    assert!(
        stdout.contains("\u{1b}[1;32mPASSED"),
        "--color always: {stdout}"
    );
    let r = support::results(&out);
    let host = &r["provenance"]["host"];
    if cfg!(target_os = "linux") {
        assert!(host["hostname"].is_string(), "{host}");
    }
    // The embedded simulator describes itself too.
    assert!(r["provenance"]["server"]["endpoints"]["/version"].is_object());
}

/// A run against the simulator with `infra` declaring `gpu` and contradicting the engine's
/// version: (results.json, report.md).
fn infra_run(dir: &Path, name: &str, gpu: &str) -> (serde_json::Value, String) {
    let text = format!(
        "target \"sim\" {{ decode-base \"1ms\"; }}\n\
         dataset \"d\" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}\n\
         stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=2; requests 8; }}\n\
         infra {{ engine-version \"9.9\"; gpu-model \"{gpu}\"; gpu-count 8; fact \"tensor-parallel\" 8; }}\n"
    );
    // One file name for both: the scenario is named after it, and the plans must agree.
    let home = dir.join(format!("{name}-scenario"));
    std::fs::create_dir_all(&home).unwrap();
    let path = support::scenario(&home, "infra.kdl", &text);
    let out = dir.join(name);
    let o = support::run(&path, &out, &["--no-plots"]);
    assert_eq!(o.status.code(), Some(0), "{}", support::describe(&o));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    (support::results(&out), md)
}

#[test]
fn infrastructure_facts_are_recorded_shown_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let (r, md) = infra_run(dir.path(), "a", "H100");
    let infra = &r["provenance"]["infra"];
    // What the server said wins, the declaration it contradicts kept beside it.
    assert_eq!(infra["engine"]["value"], "infermeter-sim", "{infra}");
    assert_eq!(infra["engine_version"]["source"], "server header");
    assert_eq!(infra["engine_version"]["declared"], "9.9");
    assert_eq!(infra["max_model_len"]["source"], "/v1/models");
    assert_eq!(infra["gpu_model"]["value"], "H100");
    assert_eq!(infra["gpu_model"]["source"], "declared");
    assert_eq!(infra["tensor_parallel"]["value"], "8");
    let row = md
        .lines()
        .find(|l| l.starts_with("| infrastructure |"))
        .unwrap_or_else(|| panic!("no infrastructure row:\n{md}"));
    assert!(
        row.contains("H100") && row.contains("declared 9.9"),
        "{row}"
    );
    // A baseline on other GPUs: `compare` says so beside its verdict.
    let (_, _) = infra_run(dir.path(), "b", "A100");
    let o = support::infermeter(&[
        "compare",
        dir.path().join("a/results.json").to_str().unwrap(),
        dir.path().join("b/results.json").to_str().unwrap(),
    ]);
    let (stdout, stderr) = support::text(&o);
    assert!(
        format!("{stdout}{stderr}")
            .contains("differ in their infrastructure (gpu_model H100 → A100)"),
        "{stdout}{stderr}"
    );
}

#[test]
fn infrastructure_declarations_are_checked_at_validate() {
    let dir = tempfile::tempdir().unwrap();
    for (infra, said) in [
        ("fact \"bad name!\" \"x\"", "a fact's name is 1 to 64"),
        ("gpu-count 0", "gpu-count"),
        ("gpu-model \"a\"; gpu-model \"b\"", "gpu-model"),
        ("replicas 2; fact \"replicas\" 3", "declared twice"),
        ("cloud \"x\"", "unknown node `cloud`"),
    ] {
        let text = format!(
            "target \"sim\"\ndataset \"d\" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}\n\
             stage \"s\" {{ dataset \"d\"; requests 4; }}\ninfra {{ {infra}; }}\n"
        );
        let path = support::scenario(dir.path(), "bad.kdl", &text);
        let o = support::infermeter(&["validate", path.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{infra}: {}",
            support::describe(&o)
        );
        let (_, stderr) = support::text(&o);
        assert!(
            stderr.contains(said) && stderr.contains("bad.kdl"),
            "{infra}: {stderr}"
        );
    }
}
