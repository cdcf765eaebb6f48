//! The plain-shell recipe in docs/ci.md works as written: its block, run as one script
//! against the embedded simulator, gates without a baseline, compares with one, catches a
//! regression made by slowing the simulator down, and waits for and sends to a server in its
//! own process when `INFERMETER_URL` is set.

use std::path::Path;
use std::process::Command;

use crate::support::bin;

/// The sh block of the section "Any other CI".
fn recipe() -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/ci.md")).unwrap();
    let section = doc
        .split("## Any other CI")
        .nth(1)
        .expect("docs/ci.md has the plain-shell recipe");
    let block = section.split("```sh\n").nth(1).expect("a sh block");
    block.split("```").next().unwrap().to_string()
}

fn sh(dir: &Path, script: &str, url: Option<&str>) -> std::process::Output {
    let bin_dir = Path::new(bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(script)
        .current_dir(dir)
        .env("PATH", path)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("INFERMETER_URL");
    if let Some(url) = url {
        c.env("INFERMETER_URL", url);
    }
    c.output().unwrap()
}

#[test]
#[cfg(unix)]
fn the_documented_recipe_gates_compares_and_catches_a_regression() {
    let script = recipe();
    assert!(
        script.contains("infermeter run scenarios/ci-gate.kdl"),
        "{script}"
    );
    assert!(
        script.contains("infermeter compare baseline/results.json"),
        "{script}"
    );

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    let scenario = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/ci-gate.kdl"
    ))
    .unwrap();
    std::fs::write(root.join("scenarios/ci-gate.kdl"), &scenario).unwrap();

    // The first run: no baseline anywhere. The gate alone decides, and passes.
    let o = sh(root, &script, None);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
    assert!(root.join("results/pr/junit.xml").exists());
    let note = std::fs::read_to_string(root.join("results/pr/compare.md")).unwrap();
    assert!(note.contains("No baseline yet"), "{note}");
    // On main: its result becomes the baseline.
    std::fs::create_dir_all(root.join("baseline")).unwrap();
    std::fs::copy(
        root.join("results/pr/results.json"),
        root.join("baseline/results.json"),
    )
    .unwrap();

    // A pull request that changes nothing: same plan, within tolerance.
    std::fs::remove_dir_all(root.join("results")).unwrap();
    let o = sh(root, &script, None);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
    let md = std::fs::read_to_string(root.join("results/pr/compare.md")).unwrap();
    assert!(md.contains("ttft"), "{md}");

    // The same workload against a server in its own process, waited for first: same plan
    // hash (the URL is not part of it), so it compares with the baseline.
    let sim = crate::support::SimProcess::start(&[
        "--decode-base",
        "10ms",
        "--decode-per-seq",
        "0ms",
        "--prefill-per-token",
        "20us",
    ]);
    std::fs::remove_dir_all(root.join("results")).unwrap();
    let o = sh(root, &script, Some(&sim.base_url));
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("ready: "));
    let r = crate::support::results(&root.join("results/pr"));
    assert_eq!(r["target"]["endpoint"], sim.base_url);
    drop(sim);

    // A pull request that makes every decode step three times slower: red, whether its own
    // SLAs caught it or the comparison did.
    let slower = scenario.replace("decode-base \"10ms\"", "decode-base \"30ms\"");
    assert_ne!(slower, scenario);
    std::fs::write(root.join("scenarios/ci-gate.kdl"), slower).unwrap();
    std::fs::remove_dir_all(root.join("results")).unwrap();
    let o = sh(root, &script, None);
    assert_eq!(o.status.code(), Some(1), "{}", crate::support::describe(&o));
    let r = crate::support::results(&root.join("results/pr"));
    if r["passed"] == true {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("itl") || err.contains("tpot"), "{err}");
    }
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
