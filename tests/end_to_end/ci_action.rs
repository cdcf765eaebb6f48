//! The GitHub Action in `action.yml` works as written: its `run:` steps are read from the
//! file and run in order the way the runner runs them (`bash --noprofile --norc -eo pipefail`,
//! inputs through each step's `env:`, outputs through `$GITHUB_OUTPUT`), with the freshly
//! built binary on PATH and a stand-in `gh` that records what it is asked, against the
//! embedded simulator. The install steps (network) and the `uses:` steps (cache, artifact,
//! JUnit check) are GitHub's own and are not run.
//!
//! Covered: the first pull request with no baseline passes, comments and is not red; a push
//! to main keeps the baseline; the next pull request compares with it through `--url` (same
//! plan hash) and edits its comment; a failed SLA, a server that never comes up and an
//! inconclusive verdict each end the job with their exit code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{SimProcess, bin, describe};

const ACTION: &str = include_str!("../../action.yml");

/// One step of the composite action, as far as these tests need it.
#[derive(Debug, Default)]
struct Step {
    id: String,
    cond: Option<String>,
    uses: Option<String>,
    env: Vec<(String, String)>,
    run: Option<String>,
}

fn unquote(v: &str) -> String {
    let v = v.trim();
    if v.len() >= 2 && (v.starts_with('\'') && v.ends_with('\'')) {
        v[1..v.len() - 1].to_string()
    } else {
        v.to_string()
    }
}

/// Every input with its default (empty when it has none).
fn defaults() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let section = ACTION.split("\ninputs:\n").nth(1).unwrap();
    let section = section.split("\noutputs:\n").next().unwrap();
    let mut name = None;
    for line in section.lines() {
        if let Some(n) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) {
            let n = n.trim_end_matches(':').to_string();
            out.insert(n.clone(), String::new());
            name = Some(n);
        } else if let Some(d) = line.strip_prefix("    default:") {
            out.insert(name.clone().unwrap(), unquote(d));
        }
    }
    out
}

/// The steps, read by indentation: `    - ` starts a step, its keys are at six spaces, an
/// `env:` map and a `run: |` block at eight.
fn steps() -> Vec<Step> {
    let body = ACTION.split("\n  steps:\n").nth(1).expect("runs.steps");
    let mut steps: Vec<Step> = Vec::new();
    let mut in_env = false;
    let mut in_run = false;
    for line in body.lines() {
        if let Some(first) = line.strip_prefix("    - ") {
            steps.push(Step::default());
            in_env = false;
            in_run = false;
            step_key(steps.last_mut().unwrap(), first, &mut in_env, &mut in_run);
            continue;
        }
        let step = steps.last_mut().expect("a step");
        if in_run && (line.starts_with("        ") || line.trim().is_empty()) {
            let run = step.run.get_or_insert_with(String::new);
            run.push_str(line.get(8..).unwrap_or(""));
            run.push('\n');
            continue;
        }
        in_run = false;
        if in_env && line.starts_with("        ") {
            let (k, v) = line.trim().split_once(": ").expect("KEY: value");
            step.env.push((k.to_string(), v.to_string()));
            continue;
        }
        in_env = false;
        if let Some(key) = line.strip_prefix("      ") {
            step_key(step, key, &mut in_env, &mut in_run);
        }
    }
    steps
}

fn step_key(step: &mut Step, line: &str, in_env: &mut bool, in_run: &mut bool) {
    let (k, v) = line.split_once(':').unwrap_or((line, ""));
    let v = v.trim();
    match k {
        "id" => step.id = v.to_string(),
        "if" => step.cond = Some(v.to_string()),
        "uses" => step.uses = Some(v.to_string()),
        "env" => *in_env = true,
        "run" => {
            assert_eq!(v, "|", "run steps are `run: |` blocks");
            *in_run = true;
        }
        _ => {}
    }
}

/// A workspace and the state one job carries from step to step.
struct Job {
    dir: PathBuf,
    inputs: BTreeMap<String, String>,
    github: BTreeMap<&'static str, String>,
    outputs: BTreeMap<String, BTreeMap<String, String>>,
    summary: PathBuf,
    gh_log: PathBuf,
    gh_body: PathBuf,
    gh_comment_id: String,
}

impl Job {
    fn new(dir: &Path, inputs: &[(&str, &str)], event: &str) -> Job {
        let mut all = defaults();
        for (k, v) in inputs {
            assert!(all.contains_key(*k), "action.yml has no input `{k}`");
            all.insert(k.to_string(), v.to_string());
        }
        let mut github = BTreeMap::new();
        github.insert("event_name", event.to_string());
        let (r, pr) = if event == "pull_request" {
            ("refs/pull/7/merge", "7")
        } else {
            ("refs/heads/main", "")
        };
        github.insert("ref", r.to_string());
        github.insert("event.pull_request.number", pr.to_string());
        github.insert("event.repository.default_branch", "main".to_string());
        github.insert("token", "t0ken".to_string());
        github.insert("run_id", "42".to_string());
        std::fs::create_dir_all(dir.join(".job")).unwrap();
        Job {
            dir: dir.to_path_buf(),
            inputs: all,
            github,
            outputs: BTreeMap::new(),
            summary: dir.join(".job/summary.md"),
            gh_log: dir.join(".job/gh.log"),
            gh_body: dir.join(".job/gh-body.md"),
            gh_comment_id: String::new(),
        }
    }

    /// `${{ inputs.x }}`, `${{ github.x }}`, `${{ steps.x.outputs.y }}` or a literal; any other
    /// expression fails the test, so scripts keep to what can be checked here.
    fn eval(&self, v: &str) -> String {
        let Some(expr) = v.strip_prefix("${{").and_then(|e| e.strip_suffix("}}")) else {
            assert!(!v.contains("${{"), "only whole-value expressions: {v}");
            return unquote(v);
        };
        let expr = expr.trim();
        if let Some(name) = expr.strip_prefix("inputs.") {
            let value = self
                .inputs
                .get(name)
                .unwrap_or_else(|| panic!("input {name}"));
            // A default may itself be an expression (`${{ github.token }}`).
            return if value.starts_with("${{") {
                self.eval(value)
            } else {
                value.clone()
            };
        }
        if let Some(rest) = expr.strip_prefix("steps.") {
            let (id, out) = rest.split_once(".outputs.").expect("steps.ID.outputs.NAME");
            return self
                .outputs
                .get(id)
                .and_then(|o| o.get(out))
                .cloned()
                .unwrap_or_default();
        }
        if let Some(name) = expr.strip_prefix("github.") {
            return self
                .github
                .get(name)
                .cloned()
                .unwrap_or_else(|| panic!("github.{name} is not provided by this test"));
        }
        panic!("expression `{expr}` in a run step's env cannot be checked here");
    }

    /// Runs one `run:` step; returns its exit code.
    fn step(&mut self, step: &Step) -> i32 {
        let script = self.dir.join(format!(".job/{}.sh", step.id));
        std::fs::write(&script, step.run.as_ref().unwrap()).unwrap();
        let output_file = self.dir.join(format!(".job/{}.out", step.id));
        std::fs::write(&output_file, "").unwrap();
        let fake_bin = self.dir.join(".job/bin");
        std::fs::create_dir_all(&fake_bin).unwrap();
        write_fake_gh(&fake_bin);
        let path = format!(
            "{}:{}:{}",
            Path::new(bin()).parent().unwrap().display(),
            fake_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
            .arg(&script)
            .current_dir(&self.dir)
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .env("GITHUB_OUTPUT", &output_file)
            .env("GITHUB_STEP_SUMMARY", &self.summary)
            .env("GITHUB_SERVER_URL", "https://github.example")
            .env("GITHUB_REPOSITORY", "acme/llm-server")
            .env("GITHUB_RUN_ID", "42")
            .env("RUNNER_TEMP", self.dir.join(".job"))
            .env("FAKE_GH_LOG", &self.gh_log)
            .env("FAKE_GH_BODY", &self.gh_body)
            .env("FAKE_GH_COMMENT_ID", &self.gh_comment_id);
        for (k, v) in &step.env {
            cmd.env(k, self.eval(v));
        }
        let o = cmd.output().unwrap();
        let code = o.status.code().unwrap_or(-1);
        eprintln!("--- step {} exited {code}\n{}", step.id, describe(&o));
        let text = std::fs::read_to_string(&output_file).unwrap();
        let outputs = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.outputs.insert(step.id.clone(), outputs);
        code
    }

    /// Every run step but the installs, in file order, as the runner would (all of them have
    /// `if: always()` or no condition); returns the last step's exit code, the job's verdict.
    fn run(&mut self) -> i32 {
        let mut last = 0;
        for s in steps().iter().filter(|s| s.run.is_some()) {
            if s.id == "resolve" || s.id == "install" {
                continue;
            }
            last = self.step(s);
            // A failing step without `if: always()` would skip the rest; the action has
            // none but the verdict, which is last.
            if last != 0 {
                assert_eq!(s.id, "verdict", "step {} failed", s.id);
            }
        }
        last
    }

    fn output(&self, step: &str, name: &str) -> String {
        self.outputs[step].get(name).cloned().unwrap_or_default()
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.join(rel)).unwrap_or_default()
    }
}

fn write_fake_gh(dir: &Path) {
    let path = dir.join("gh");
    std::fs::write(
        &path,
        r#"#!/bin/sh
# Stands in for the GitHub CLI: logs each call, keeps the comment body it was given, and
# answers the listing of comments with $FAKE_GH_COMMENT_ID.
printf '%s\n' "$*" >> "$FAKE_GH_LOG"
for a in "$@"; do
  case "$a" in body=@*) cp "${a#body=@}" "$FAKE_GH_BODY" ;; esac
done
case "$*" in *--paginate*) [ -n "$FAKE_GH_COMMENT_ID" ] && echo "$FAKE_GH_COMMENT_ID" ;; esac
exit 0
"#,
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("scenarios")).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/ci-gate.kdl"),
        dir.path().join("scenarios/ci-gate.kdl"),
    )
    .unwrap();
    dir
}

#[test]
fn the_action_has_the_shape_these_tests_rely_on() {
    let steps = steps();
    let run_ids: Vec<&str> = steps
        .iter()
        .filter(|s| s.run.is_some())
        .map(|s| s.id.as_str())
        .collect();
    // A new run step must be added here, and so be thought about in these tests.
    assert_eq!(
        run_ids,
        [
            "resolve",
            "install",
            "paths",
            "gate",
            "compare",
            "report",
            "comment",
            "keep-baseline",
            "verdict"
        ]
    );
    for s in &steps {
        if let Some(run) = &s.run {
            assert!(
                s.cond.as_deref().is_none_or(|c| c == "always()"),
                "run step {} has a condition the tests cannot evaluate: {:?}",
                s.id,
                s.cond
            );
            assert!(
                !run.contains("${{"),
                "run step {} uses an expression in its script; pass it through env:",
                s.id
            );
        } else {
            assert!(s.uses.is_some(), "a step is either run: or uses:");
        }
    }
    for input in [
        "scenario",
        "params",
        "url",
        "model",
        "baseline",
        "baseline-key",
        "tolerance",
        "save-inconclusive-baseline",
    ] {
        assert!(
            defaults().contains_key(input) || input == "scenario",
            "{input}"
        );
    }
    for input in [
        "wait-for",
        "wait-timeout",
        "comment",
        "version",
        "inconclusive",
    ] {
        assert!(defaults().contains_key(input), "{input}");
    }
}

#[test]
#[cfg(unix)]
fn first_pr_main_push_and_next_pr() {
    let ws = workspace();
    // No tolerance input: compare takes the scenario's own.
    let text = std::fs::read_to_string(ws.path().join("scenarios/ci-gate.kdl")).unwrap();
    std::fs::write(
        ws.path().join("scenarios/ci-gate.kdl"),
        text + "report {\n    tolerance \"90%\"\n}\n",
    )
    .unwrap();
    let inputs = [
        ("scenario", "scenarios/ci-gate.kdl"),
        ("baseline-key", "infermeter-baseline"),
        ("comment", "true"),
    ];

    // The first pull request: no baseline anywhere. The gate decides, the job is green.
    let mut job = Job::new(ws.path(), &inputs, "pull_request");
    assert_eq!(job.run(), 0, "{}", job.read(".job/summary.md"));
    assert_eq!(job.output("gate", "exit-code"), "0");
    assert_eq!(job.output("compare", "exit-code"), "");
    assert_eq!(job.output("report", "verdict"), "passed");
    let body = std::fs::read_to_string(&job.gh_body).expect("a comment was posted");
    assert!(
        body.starts_with("<!-- infermeter: scenarios/ci-gate.kdl -->"),
        "{body}"
    );
    assert!(body.contains("✅ passed"), "{body}");
    assert!(
        body.contains("No baseline: first run, or evicted by the cache"),
        "{body}"
    );
    assert!(!body.contains(".svg)"), "plot links are left out: {body}");
    assert!(body.contains("https://github.example/acme/llm-server/actions/runs/42"));
    let gh = job.read(".job/gh.log");
    assert!(
        gh.contains("-X POST repos/acme/llm-server/issues/7/comments"),
        "{gh}"
    );
    assert!(job.read(".job/summary.md").contains("✅ passed"));
    assert!(
        ws.path()
            .join("infermeter-results/ci-gate/junit.xml")
            .exists()
    );
    assert_eq!(job.output("keep-baseline", "save"), "false");

    // A push to main: its results become the baseline.
    let mut job = Job::new(ws.path(), &inputs, "push");
    assert_eq!(job.run(), 0);
    assert_eq!(job.output("keep-baseline", "save"), "true");
    assert!(
        ws.path()
            .join(".infermeter-baseline/infermeter-baseline/results.json")
            .exists()
    );

    // The next pull request, against a server in its own process (--url): same plan hash,
    // compared with the baseline, and the earlier comment is edited rather than a new one.
    let sim = SimProcess::start(&[
        "--decode-base",
        "10ms",
        "--decode-per-seq",
        "0ms",
        "--prefill-per-token",
        "20us",
    ]);
    let mut inputs = inputs.to_vec();
    inputs.push(("url", &sim.base_url));
    let mut job = Job::new(ws.path(), &inputs, "pull_request");
    job.gh_comment_id = "77".into();
    assert_eq!(job.run(), 0, "{}", job.read(".job/summary.md"));
    assert_eq!(job.output("compare", "exit-code"), "0");
    let body = std::fs::read_to_string(&job.gh_body).unwrap();
    assert!(
        body.contains("ttft"),
        "the comparison is in the comment: {body}"
    );
    assert!(!body.contains("No baseline"));
    assert!(
        body.contains("(tolerance 90 %"),
        "the scenario's tolerance: {body}"
    );
    let gh = job.read(".job/gh.log");
    assert!(
        gh.contains("-X PATCH repos/acme/llm-server/issues/comments/77"),
        "{gh}"
    );
}

#[test]
#[cfg(unix)]
fn a_failed_sla_fails_the_job_with_params() {
    let ws = workspace();
    let text = std::fs::read_to_string(ws.path().join("scenarios/ci-gate.kdl")).unwrap();
    let strict = text
        .replace("requests 320", "requests (param)\"n\"")
        .replace("assert \"ttft.p95 < 200ms\"", "assert \"ttft.p95 < 1us\"")
        + "param \"n\" 320\n";
    std::fs::write(ws.path().join("scenarios/strict.kdl"), strict).unwrap();
    let mut job = Job::new(
        ws.path(),
        &[
            ("scenario", "scenarios/strict.kdl"),
            ("params", "n=12\n"),
            ("baseline", "baseline/results.json"),
        ],
        "pull_request",
    );
    assert_eq!(job.run(), 1);
    assert_eq!(job.output("report", "verdict"), "failed");
    let results = crate::support::results(&ws.path().join("infermeter-results/strict"));
    assert_eq!(
        results["stages"][0]["requests"]["sent"], 12,
        "params reach the run"
    );
    let summary = job.read(".job/summary.md");
    assert!(summary.contains("❌ an SLA failed"), "{summary}");
    // junit.xml as a table, the failed assertion with its message.
    assert!(summary.contains("#### junit.xml"), "{summary}");
    assert!(
        summary.contains("| ttft.p95 &lt; 1us \\[steady\\] | ❌ "),
        "{summary}"
    );
    // 12 requests cannot show an error rate under 5 %: undecided, a skipped case.
    assert!(
        summary.contains("| error\\_rate &lt; 5% \\[steady\\] | ❔ inconclusive: "),
        "{summary}"
    );
    assert!(
        summary.contains("`baseline/results.json` does not exist"),
        "{summary}"
    );
    // Comments were not asked for.
    assert!(!job.gh_log.exists());
}

#[test]
#[cfg(unix)]
fn a_server_that_never_comes_up_is_a_run_error() {
    let ws = workspace();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut job = Job::new(
        ws.path(),
        &[
            ("scenario", "scenarios/ci-gate.kdl"),
            ("wait-for", &url),
            ("wait-timeout", "1s"),
            ("url", &url),
        ],
        "pull_request",
    );
    assert_eq!(job.run(), 3);
    assert_eq!(job.output("report", "verdict"), "error");
    assert!(job.read(".job/summary.md").contains("never became ready"));
}

#[test]
#[cfg(unix)]
fn an_inconclusive_verdict_is_named_and_exits_4() {
    // The run step's outcome stands in for a binary with `--inconclusive`: what the report
    // and verdict steps make of exit code 4.
    let ws = workspace();
    let mut job = Job::new(
        ws.path(),
        &[("scenario", "scenarios/ci-gate.kdl")],
        "pull_request",
    );
    job.outputs.insert(
        "gate".into(),
        [("exit-code".to_string(), "4".to_string())].into(),
    );
    let steps = steps();
    let find = |id: &str| steps.iter().find(|s| s.id == id).unwrap();
    assert_eq!(job.step(find("paths")), 0);
    assert_eq!(job.step(find("report")), 0);
    assert_eq!(job.output("report", "verdict"), "inconclusive");
    assert!(job.read(".job/summary.md").contains("❔ inconclusive"));
    assert_eq!(job.step(find("verdict")), 4);
    // The flag is passed only when the input is set.
    let gate = find("gate").run.clone().unwrap();
    assert!(gate.contains("if [ -n \"$INPUT_INCONCLUSIVE\" ]; then args+=(--inconclusive"));
}

#[test]
#[cfg(unix)]
fn two_scenarios_in_one_job_keep_apart_and_both_keep_their_baselines() {
    let ws = workspace();
    let text = std::fs::read_to_string(ws.path().join("scenarios/ci-gate.kdl")).unwrap();
    std::fs::write(
        ws.path().join("scenarios/other.kdl"),
        text.replace("scenario \"ci-gate\"", "scenario \"other\""),
    )
    .unwrap();
    let mut outs = Vec::new();
    for (scenario, key) in [
        ("scenarios/ci-gate.kdl", "gate-base"),
        ("scenarios/other.kdl", "other-base"),
    ] {
        let mut job = Job::new(
            ws.path(),
            &[("scenario", scenario), ("baseline-key", key)],
            "push",
        );
        assert_eq!(job.run(), 0, "{}", job.read(".job/summary.md"));
        assert_eq!(job.output("keep-baseline", "save"), "true");
        outs.push((
            job.output("paths", "out"),
            job.output("paths", "artifact"),
            job.output("paths", "baseline-dir"),
        ));
    }
    assert_eq!(
        outs[0],
        (
            "infermeter-results/ci-gate".to_string(),
            "infermeter-results-ci-gate".to_string(),
            ".infermeter-baseline/gate-base".to_string()
        )
    );
    assert_eq!(outs[1].0, "infermeter-results/other");
    assert_eq!(outs[1].1, "infermeter-results-other");
    for (out, _, base) in &outs {
        let r = crate::support::results(&ws.path().join(out));
        let kept: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(ws.path().join(base).join("results.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(r["scenario"], kept["scenario"], "{out} and {base}");
    }
}

#[test]
#[cfg(unix)]
fn an_inconclusive_main_keeps_its_baseline_only_when_asked() {
    let ws = workspace();
    let out = ws.path().join("infermeter-results/ci-gate");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("results.json"), "{}").unwrap();
    let steps = steps();
    let find = |id: &str| steps.iter().find(|s| s.id == id).unwrap();
    for (asked, gate, saved) in [
        ("false", "4", "false"),
        ("true", "4", "true"),
        ("true", "1", "false"),
        ("false", "0", "true"),
    ] {
        let mut job = Job::new(
            ws.path(),
            &[
                ("scenario", "scenarios/ci-gate.kdl"),
                ("baseline-key", "k"),
                ("save-inconclusive-baseline", asked),
            ],
            "push",
        );
        job.outputs.insert(
            "gate".into(),
            [("exit-code".to_string(), gate.to_string())].into(),
        );
        assert_eq!(job.step(find("paths")), 0);
        assert_eq!(job.step(find("keep-baseline")), 0);
        assert_eq!(
            job.output("keep-baseline", "save"),
            saved,
            "asked {asked}, gate {gate}"
        );
    }
}

#[test]
fn the_action_scripts_pass_shellcheck() {
    let found = Command::new("shellcheck")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var_os("INFERMETER_REQUIRE_SHELLCHECK").is_none(),
            "shellcheck is required here (.ci/run installs it)"
        );
        eprintln!("shellcheck not on PATH: skipped (.ci/run installs it)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for s in steps().iter().filter(|s| s.run.is_some()) {
        let file = dir.path().join(format!("{}.sh", s.id));
        // The runner starts each script as `bash -eo pipefail FILE`; `env:` sets its inputs.
        std::fs::write(
            &file,
            format!("#!/usr/bin/env bash\n{}", s.run.as_ref().unwrap()),
        )
        .unwrap();
        let o = Command::new("shellcheck")
            .args(["--shell", "bash", "--severity", "style"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "step {}: {}",
            s.id,
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

/// A pull request can change a committed baseline file: what `compare` says in refusing it
/// quotes the file, and that line reaches the comment and the step summary in a code span
/// (no live tag, link or mention); a baseline key with a line break is shown as the paths
/// step made it, and runs no workflow command.
#[test]
#[cfg(unix)]
fn a_hostile_baseline_is_quoted_inert_in_the_comment() {
    let ws = workspace();
    std::fs::create_dir_all(ws.path().join("baseline")).unwrap();
    let hostile = "<img src=x onerror=alert(1)> @org/team [x](javascript:y) `tick`";
    std::fs::write(
        ws.path().join("baseline/results.json"),
        serde_json::json!({ "schema_version": hostile }).to_string(),
    )
    .unwrap();
    let mut job = Job::new(
        ws.path(),
        &[
            ("scenario", "scenarios/ci-gate.kdl"),
            ("baseline", "baseline/results.json"),
            ("comment", "true"),
        ],
        "pull_request",
    );
    assert_eq!(job.run(), 0, "{}", job.read(".job/summary.md"));
    assert_eq!(job.output("compare", "exit-code"), "2");
    let md = job.read("infermeter-results/ci-gate/compare.md");
    let line = md.lines().next().unwrap_or_default();
    assert!(
        line.starts_with("_Not compared with the baseline: `error:")
            && line.ends_with("`_")
            && line.matches('`').count() == 2,
        "one code span, the file's text inside it: {md}"
    );
    assert!(line.contains("<img src=x"), "quoted as it was: {md}");
    for (what, text) in [
        ("comment", std::fs::read_to_string(&job.gh_body).unwrap()),
        ("summary", job.read(".job/summary.md")),
    ] {
        let outside: String = text.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for bad in ["<img", "@org/team", "](javascript:"] {
            assert!(!outside.contains(bad), "{what} holds {bad:?} live:\n{text}");
        }
    }

    // A key with a line break and Markdown: the sanitized key, no second line.
    let mut job = Job::new(
        ws.path(),
        &[
            ("scenario", "scenarios/ci-gate.kdl"),
            ("baseline-key", "k\n::error::pwned <b>@org/team</b>"),
        ],
        "pull_request",
    );
    job.run();
    let md = job.read("infermeter-results/ci-gate/compare.md");
    assert!(
        md.contains("under `k___error__pwned__b__org_team__b_`"),
        "{md}"
    );
}
