//! Every output path is checked before the first request (an unwritable one is not noticed
//! after the benchmark), outputs never collide with each other or an input, plot file names
//! derived from stage names are bounded and one-to-one, a run's default directory is its
//! own, and an `--out` holding an earlier run's results is kept unless `--force`.

use crate::support::bad_server::{BadServer, Misbehaviour};
use crate::support::*;

const QUICK: &str = r#"
target "sim" { decode-base "1ms"; prefill-per-token "0ms"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=2; requests 6; }
"#;

#[test]
fn an_output_that_cannot_be_written_stops_the_run_before_its_first_request() {
    let server = BadServer::start(Misbehaviour::StallChat);
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        &format!(
            r#"
target "{}" {{ model "m"; timeout "2s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "constant" rate=5; requests 2; }}
"#,
            server.base_url
        ),
    );
    let out = dir.path().join("out");
    // A directory where results.json goes: no rename can replace it, root or not.
    std::fs::create_dir_all(out.join("results.json")).unwrap();
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    assert!(!stdout.contains("PASSED"), "{stdout}");
    assert!(stderr.contains("results.json"), "{stderr}");
    assert!(stderr.contains("directory"), "the cause is given: {stderr}");
    assert_eq!(
        server.connections(),
        0,
        "not even the model lookup happened"
    );
}

#[test]
fn junit_on_an_output_of_the_run_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", QUICK);
    let out = dir.path().join("out");
    for file in ["results.json", "report.md", "stage-s-timeline.svg"] {
        let junit = out.join(file);
        let o = run(&path, &out, &["--junit", junit.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", describe(&o));
        let (_, stderr) = text(&o);
        assert!(stderr.contains("--junit"), "{stderr}");
        assert!(stderr.contains("help:"), "{stderr}");
    }
    let o = run(&path, &out, &["--junit", path.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "the scenario itself: {}",
        describe(&o)
    );
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("stage \"s\"")
    );
    // Elsewhere (in a directory that does not exist yet) is fine.
    let junit = dir.path().join("ci/junit.xml");
    let o = run(&path, &out, &["--junit", junit.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(std::fs::read_to_string(junit).unwrap().starts_with("<?xml"));
    assert_eq!(results(&out)["complete"], true);
}

#[test]
fn plot_names_from_stage_names_are_bounded_and_distinct() {
    let dir = tempfile::tempdir().unwrap();
    let long = "L".repeat(300);
    let stages: String = ["Load A", "load-a", long.as_str()]
        .iter()
        .map(|name| {
            format!(
                "stage \"{name}\" {{ dataset \"d\"; arrival \"concurrency\" clients=1; requests 3; }}\n"
            )
        })
        .collect();
    let text = format!(
        "target \"sim\" {{ decode-base \"1ms\"; prefill-per-token \"0ms\"; }}\n\
         dataset \"d\" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}\n{stages}"
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let md = std::fs::read_to_string(out.join("report.md")).expect("the report was written");
    let mut svgs: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".svg"))
        .collect();
    svgs.sort();
    assert_eq!(
        svgs.len(),
        6,
        "two plots per stage, none overwritten: {svgs:?}"
    );
    for svg in &svgs {
        assert!(svg.len() < 100, "bounded: {svg}");
        assert!(md.contains(&format!("]({svg})")), "the report links {svg}");
    }
    assert!(
        svgs.contains(&"stage-load-a-timeline.svg".to_string()),
        "{svgs:?}"
    );
}

#[test]
fn runs_started_together_without_out_get_their_own_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", QUICK);
    let children: Vec<_> = (0..3)
        .map(|_| {
            std::process::Command::new(bin())
                .current_dir(dir.path())
                .env("NO_COLOR", "1")
                .env_remove("GITHUB_STEP_SUMMARY")
                .args(["run", "--quiet", "--untrusted", "judge"])
                .arg(&path)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut dirs: Vec<String> = children
        .into_iter()
        .map(|c| {
            let o = wait_bounded(c, 120, "a run without --out");
            assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
            let (stdout, _) = text(&o);
            stdout
                .lines()
                .find_map(|l| l.strip_prefix("results: "))
                .expect("the results line")
                .to_string()
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 3, "{dirs:?}");
}

#[test]
fn a_run_that_cannot_start_marks_the_previous_results_in_its_directory_stale() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let good = scenario(dir.path(), "good.kdl", QUICK);
    let o = run(&good, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(results(&out)["passed"], true);
    for report in ["report.md", "report.html", "report.pr.md", "stages.csv"] {
        assert!(out.join(report).exists(), "{report}");
    }
    // The next run in the same directory names a data set file that does not exist.
    let broken = QUICK.replace(
        "synthetic { input-tokens 16; output-tokens 4; }",
        "jsonl \"missing.jsonl\"",
    );
    let bad = scenario(dir.path(), "bad.kdl", &broken);
    // Asked to replace the earlier run (without --force the directory is refused, untouched:
    // see the test below).
    let o = run(&bad, &out, &["--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let r = results(&out);
    assert_eq!(r["passed"], false, "{r}");
    assert_eq!(r["complete"], false, "{r}");
    assert_eq!(r["outcome"], "fail", "{r}");
    let why = r["error"].as_str().unwrap();
    assert!(
        why.contains("stale") && why.contains("missing.jsonl"),
        "{why}"
    );
    for report in ["report.md", "report.html", "report.pr.md", "stages.csv"] {
        assert!(!out.join(report).exists(), "the earlier {report} is gone");
    }
    // The earlier run's figures are kept, marked.
    assert_eq!(stage(&r, "s")["requests"]["ok"], 6);
}

#[test]
fn an_out_holding_an_earlier_runs_results_is_kept_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let good = scenario(dir.path(), "good.kdl", QUICK);
    let o = run(&good, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let earlier = std::fs::read(out.join("results.json")).unwrap();
    let files = |out: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = files(&out);

    // Again into the same directory: refused with the way out, nothing touched. The same for
    // a run that would stop before its plan (which, forced, marks the earlier run stale).
    let broken = QUICK.replace(
        "synthetic { input-tokens 16; output-tokens 4; }",
        "jsonl \"missing.jsonl\"",
    );
    let bad = scenario(dir.path(), "bad.kdl", &broken);
    for scenario in [&good, &bad] {
        let o = run(scenario, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        let (stdout, stderr) = text(&o);
        assert!(!stdout.contains("PASSED"), "{stdout}");
        assert!(
            stderr.contains("holds an earlier run's results (scenario `good`, started "),
            "{stderr}"
        );
        assert!(stderr.contains("pass --force to replace them"), "{stderr}");
        assert!(stderr.contains("another --out DIR"), "{stderr}");
        assert_eq!(std::fs::read(out.join("results.json")).unwrap(), earlier);
        assert_eq!(files(&out), before);
    }

    // --force replaces it.
    let o = run(&good, &out, &["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_ne!(std::fs::read(out.join("results.json")).unwrap(), earlier);
    assert_eq!(results(&out)["complete"], true);
}

#[test]
fn a_run_that_measured_nothing_leaves_its_directory_to_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // Nothing listens at the target: exit 3, a placeholder saying why, no stage.
    let unreachable = scenario(
        dir.path(),
        "down.kdl",
        &QUICK.replace(
            r#"target "sim" { decode-base "1ms"; prefill-per-token "0ms"; }"#,
            &format!(r#"target "{}" {{ model "m"; }}"#, closed_port_url()),
        ),
    );
    let o = run(&unreachable, &out, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", describe(&o));
    assert_eq!(results(&out)["complete"], false);
    // The rerun (the target fixed) takes the directory over without --force.
    let good = scenario(dir.path(), "good.kdl", QUICK);
    let o = run(&good, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(results(&out)["complete"], true);
}
