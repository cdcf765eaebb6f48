//! The CI workflow in docs/ci.md works as written: its `infermeter` commands, run in order
//! against the embedded simulator, gate, compare with a baseline, and catch a regression made
//! by slowing the simulator down.

use std::path::Path;
use std::process::Command;

use crate::support::bin;

/// The `infermeter …` command lines of the workflow, in order.
fn workflow_commands() -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ci.md")).unwrap();
    let yaml = doc
        .split("```yaml")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("docs/ci.md has a yaml block");
    yaml.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("infermeter "))
        .map(String::from)
        .collect()
}

fn sh(dir: &Path, command: &str) -> std::process::Output {
    let bin_dir = Path::new(bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

#[test]
#[cfg(unix)]
fn the_documented_workflow_gates_compares_and_catches_a_regression() {
    let commands = workflow_commands();
    assert_eq!(commands.len(), 2, "{commands:?}");
    let (gate, compare) = (&commands[0], &commands[1]);
    assert!(gate.starts_with("infermeter run scenarios/ci-gate.kdl"));
    assert!(compare.starts_with("infermeter compare baseline/results.json"));

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    let scenario = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/ci-gate.kdl"
    ))
    .unwrap();
    std::fs::write(root.join("scenarios/ci-gate.kdl"), &scenario).unwrap();

    // On main: the gate passes, its result becomes the baseline.
    let o = sh(root, gate);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
    assert!(root.join("results/pr/junit.xml").exists());
    std::fs::create_dir_all(root.join("baseline")).unwrap();
    std::fs::copy(
        root.join("results/pr/results.json"),
        root.join("baseline/results.json"),
    )
    .unwrap();

    // A pull request that changes nothing: same plan, within tolerance.
    std::fs::remove_dir_all(root.join("results")).unwrap();
    let o = sh(root, gate);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
    let o = sh(root, compare);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
    let md = std::fs::read_to_string(root.join("results/pr/compare.md")).unwrap();
    assert!(md.contains("ttft"), "{md}");

    // A pull request that makes every decode step three times slower.
    let slower = scenario.replace("decode-base \"10ms\"", "decode-base \"30ms\"");
    assert_ne!(slower, scenario);
    std::fs::write(root.join("scenarios/ci-gate.kdl"), slower).unwrap();
    std::fs::remove_dir_all(root.join("results")).unwrap();
    let _ = sh(root, gate); // its SLAs may or may not hold; the comparison must catch it
    // The simulator's settings say where the load goes, not what it is: same plan, and the
    // comparison names the regression.
    let o = sh(root, compare);
    assert_eq!(o.status.code(), Some(1), "{}", crate::support::describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("itl") || err.contains("tpot"), "{err}");
}

#[test]
fn compare_flags_a_slower_server_running_the_same_plan() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut runs = Vec::new();
    for (name, decode) in [("base", "10ms"), ("same", "10ms"), ("slow", "30ms")] {
        let sim = crate::support::SimProcess::start(&[
            "--decode-base",
            decode,
            "--decode-per-seq",
            "0ms",
            "--prefill-per-token",
            "20us",
        ]);
        let path = crate::support::scenario(
            root,
            "gate.kdl",
            r#"
param "url" "http://127.0.0.1:8000/v1"
target (param)"url" { model "infermeter-sim"; }
dataset "d" { synthetic { input-tokens 64; output-tokens 16; } }
stage "steady" {
    dataset "d"
    arrival "concurrency" clients=4
    requests 40
}
"#,
        );
        let out = root.join(name);
        let o = crate::support::run(&path, &out, &["--param", &format!("url={}", sim.base_url)]);
        assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
        runs.push(out.join("results.json"));
    }
    let compare = |a: &Path, b: &Path| {
        Command::new(bin())
            .arg("compare")
            .arg(a)
            .arg(b)
            // Wide: on a shared machine a stall can move a p99 by half; 3x slower still shows.
            .args(["--tolerance", "100%"])
            .output()
            .unwrap()
    };
    // The endpoint is not part of the workload: all three runs have the same plan hash.
    let hash = |p: &Path| -> String {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        v["plan_hash"].as_str().unwrap().to_string()
    };
    assert_eq!(hash(&runs[0]), hash(&runs[1]));
    assert_eq!(hash(&runs[0]), hash(&runs[2]));
    let o = compare(&runs[0], &runs[1]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
    let o = compare(&runs[0], &runs[2]);
    assert_eq!(o.status.code(), Some(1), "{}", crate::support::describe(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("itl") || err.contains("tpot") || err.contains("e2e"),
        "{err}"
    );
}
