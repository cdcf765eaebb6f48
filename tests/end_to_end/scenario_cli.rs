//! The real binary: `infermeter validate` exit codes and output, `infermeter schema scenario`.

use std::path::Path;

use crate::support::infermeter;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn shipped_scenarios_validate() {
    let mut files: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios"))
            .unwrap()
            .map(|e| format!("scenarios/{}", e.unwrap().file_name().to_string_lossy()))
            .filter(|f| f.ends_with(".kdl"))
            .collect();
    files.sort();
    // scenarios/sharegpt-hub.kdl names a Hub file: give it a cache holding one, laid out as
    // `infermeter dataset fetch` (and huggingface_hub) leave it.
    let hub = tempfile::tempdir().unwrap();
    let commit = "0123456789abcdef0123456789abcdef01234567";
    let repo = hub
        .path()
        .join("datasets--anon8231489123--ShareGPT_Vicuna_unfiltered");
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), format!("{commit}\n")).unwrap();
    let snap = repo.join("snapshots").join(commit);
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/data/sharegpt_small.json"),
        snap.join("ShareGPT_V3_unfiltered_cleaned_split.json"),
    )
    .unwrap();
    // scenarios/benchmark-questions.kdl names the files `dataset fetch gsm8k|mmlu` write:
    // validate a copy of the folder holding a record of each.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios"),
        &copy.path().join("scenarios"),
    );
    let data = copy.path().join("scenarios/data");
    std::fs::write(
        data.join("gsm8k.jsonl"),
        "{\"prompt\": \"1 + 1?\", \"reference\": \"2\"}\n",
    )
    .unwrap();
    std::fs::write(
        data.join("mmlu.jsonl"),
        "{\"prompt\": \"Largest?\", \"choices\": [\"1\", \"2\"], \"reference\": \"B\"}\n",
    )
    .unwrap();
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let out = crate::support::command()
        .current_dir(copy.path())
        .args(&args)
        .env("HF_HUB_CACHE", hub.path())
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("ok  scenarios/pr-gate.kdl  (2 datasets, 2 stages)"),
        "{stdout}"
    );
    // One `ok` line a file (each followed by what its assertions need).
    let oks = stdout.lines().filter(|l| l.starts_with("ok  ")).count();
    assert_eq!(oks, files.len(), "{stdout}");
}

/// A copy of the folder `from` (files and folders; nothing else is shipped there) at `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn invalid_files_exit_2_with_file_and_line() {
    for (file, line, needle) in [
        (
            "tests/invalid/unknown-arrival.kdl",
            12,
            "did you mean `poisson`?",
        ),
        (
            "tests/invalid/duration-no-unit.kdl",
            13,
            "expected a duration like \"250ms\", got 60",
        ),
        (
            "tests/invalid/syntax-unterminated-string.kdl",
            9,
            "Unexpected newline",
        ),
        ("tests/invalid/multi-error.kdl", 17, "undefined dataset `e`"),
    ] {
        let out = infermeter(&["validate", file]);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!("{file}:{line}:")),
            "{file}: {stderr}"
        );
        assert!(stderr.contains(needle), "{file}: {stderr}");
        assert!(out.stdout.is_empty(), "{file}");
    }
}

#[test]
fn one_invalid_file_among_valid_ones_fails_the_run() {
    let out = infermeter(&[
        "validate",
        "scenarios/quickstart.kdl",
        "tests/invalid/no-stage.kdl",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).contains("ok  scenarios/quickstart.kdl"));
}

#[test]
fn params_and_missing_files() {
    let ok = infermeter(&["validate", "scenarios/quickstart.kdl", "--param", "rate=35"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let bad = infermeter(&[
        "validate",
        "scenarios/quickstart.kdl",
        "--param",
        "rate=fast",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("`fast` is not an integer"));
    let no_eq = infermeter(&["validate", "scenarios/quickstart.kdl", "--param", "rate"]);
    assert_eq!(no_eq.status.code(), Some(2));
    let missing = infermeter(&["validate", "scenarios/does-not-exist.kdl"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("scenarios/does-not-exist.kdl"));
}

#[test]
fn schema_command_prints_the_checked_in_schema() {
    let out = infermeter(&["schema", "scenario"]);
    assert_eq!(out.status.code(), Some(0));
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(printed["title"], "Scenario");
    assert!(printed["properties"]["stages"].is_object());
}

#[test]
fn docs_cli_lists_every_option_of_run_and_plan() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).unwrap();
    for command in [
        "run",
        "plan",
        "new",
        "import vllm",
        "wait",
        "dataset fetch",
        "dataset fetch hf",
        "dataset fetch gsm8k",
        "dataset fetch mmlu",
    ] {
        let help = crate::support::command()
            .args(command.split(' '))
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        for flag in help
            .split_whitespace()
            .filter(|w| w.starts_with("--") && *w != "--help")
        {
            // Help text may name other tools' flags in passing ("vLLM's --request-rate)").
            let flag = flag.trim_end_matches([',', ')', '.', ';']);
            assert!(
                doc.contains(flag),
                "docs/cli.md does not mention `{command} {flag}`"
            );
        }
    }
}

#[test]
fn validate_compiles_the_plan_so_a_missing_data_set_file_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = crate::support::scenario(
        dir.path(),
        "s.kdl",
        r#"
param "n" 2
dataset "mine" { jsonl "missing.jsonl"; }
stage "s" { dataset "mine"; arrival "concurrency" clients=1; requests (param)"n"; }
"#,
    );
    let o = crate::support::infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::support::describe(&o));
    let (_, stderr) = crate::support::text(&o);
    assert!(stderr.contains("missing.jsonl"), "{stderr}");
    assert!(stderr.contains("s.kdl"), "the scenario is named: {stderr}");
    // With the file there, `-p` (short for --param) and the ok line.
    std::fs::write(dir.path().join("missing.jsonl"), "{\"prompt\": \"hi\"}\n").unwrap();
    let o = crate::support::infermeter(&["validate", "-p", "n=3", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
    assert!(crate::support::text(&o).0.starts_with("ok  "));
}

#[test]
fn validate_tries_the_report_template() {
    let dir = tempfile::tempdir().unwrap();
    let path = crate::support::scenario(
        dir.path(),
        "s.kdl",
        r#"
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 2; }
report { template "mine.md.j2"; }
"#,
    );
    std::fs::write(dir.path().join("mine.md.j2"), "{{ results.scenaro }}\n").unwrap();
    let o = crate::support::infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", crate::support::describe(&o));
    let (_, stderr) = crate::support::text(&o);
    assert!(stderr.contains("mine.md.j2"), "{stderr}");
    assert!(stderr.contains("results.scenaro"), "{stderr}");
    std::fs::write(dir.path().join("mine.md.j2"), "{{ results.scenario }}\n").unwrap();
    let o = crate::support::infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::describe(&o));
}
