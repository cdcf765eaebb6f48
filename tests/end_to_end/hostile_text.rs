//! Text infermeter did not write — a server's `server` header and model id, a scenario's and
//! its stages' names — reaches every output escaped for it: report.md, report.pr.md and the
//! step summary (GitHub Markdown: no tag, no live link or mention, no extra table cell),
//! report.html, stages.csv (no formula), junit.xml and the plots (well-formed XML 1.0), and
//! the terminal (no escape sequence, no workflow command). Against a server written for the
//! test (`support::hostile_server`), over real HTTP; and a sweep's name in what `validate`,
//! `plan` and `run` print (the decidable table, its warnings, the Profiles section).

use crate::support::hostile_server::{HOSTILE_MODEL, HostileServer};
use crate::support::*;

/// A stage name that is a spreadsheet formula, with markup and a mention.
const STAGE: &str = "=HYPERLINK(\"http://evil\",\"x\") <b>@team</b> |y|";

fn hostile_run(
    extra_env: &[(&str, &std::path::Path)],
) -> (tempfile::TempDir, std::process::Output) {
    let server = HostileServer::start();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
scenario "<script>alert(1)</script> [x](javascript:y) @org/team"
target "{url}" {{ timeout "5s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage {stage} {{ dataset "d"; arrival "concurrency" clients=1; requests 3; }}
"#,
        url = server.base_url,
        stage = serde_json::to_string(STAGE).unwrap(),
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let mut cmd = command();
    cmd.arg("run")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .arg("--junit")
        .arg(out.join("junit.xml"))
        .arg("--progress-lines");
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let o = cmd.output().expect("the binary runs");
    // The server must be up for the whole run.
    drop(server);
    (dir, o)
}

/// Neither stream holds an escape sequence, a bell or a line GitHub Actions would run.
fn assert_terminal_inert(what: &str, o: &std::process::Output) {
    let (stdout, stderr) = text(o);
    for (stream, t) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(
            !t.contains('\u{1b}') && !t.contains('\u{7}'),
            "{what}: {stream} holds an escape:\n{t}"
        );
        assert!(
            !t.lines().any(|l| l.trim_start().starts_with("::")),
            "{what}: {stream} holds a workflow command:\n{t}"
        );
    }
}

/// What a hostile value must never be in Markdown: a tag, a live link or mention, a raw `|`.
fn assert_markdown_inert(what: &str, md: &str) {
    for bad in [
        "<img",
        "<script",
        "<b>",
        "](javascript:",
        "@octocat",
        "@team",
        "@org/team",
        "|x|",
        "|y|",
        "\u{1b}",
        "\u{7}",
    ] {
        assert!(!md.contains(bad), "{what} holds {bad:?}:\n{md}");
    }
}

#[test]
fn server_and_scenario_text_is_escaped_in_every_output() {
    let summary_dir = tempfile::tempdir().unwrap();
    let summary = summary_dir.path().join("summary.md");
    let (dir, o) = hostile_run(&[("GITHUB_STEP_SUMMARY", &summary)]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let out = dir.path().join("out");
    let r = results(&out);
    // The run measured, and the results keep what the server said, as it said it.
    assert_eq!(r["target"]["model"], HOSTILE_MODEL);
    assert_eq!(stage(&r, STAGE)["requests"]["ok"], 3);

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert_markdown_inert("report.md", &md);
    assert!(md.contains("&lt;script&gt;"), "shown, escaped:\n{md}");
    assert!(
        md.contains("@\u{200d}org/team"),
        "the mention is broken:\n{md}"
    );
    assert_markdown_inert(
        "report.pr.md",
        &std::fs::read_to_string(out.join("report.pr.md")).unwrap(),
    );
    assert_markdown_inert(
        "the step summary",
        &std::fs::read_to_string(&summary).unwrap(),
    );

    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for bad in ["<img", "<script>alert", "<b>@team", "\u{1b}", "\u{fffe}"] {
        assert!(!html.contains(bad), "report.html holds {bad:?}");
    }

    let csv = std::fs::read_to_string(out.join("stages.csv")).unwrap();
    let row = csv.lines().nth(1).expect("a stage row");
    assert!(row.starts_with("\"'=HYPERLINK("), "no formula: {row}");

    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    roxmltree::Document::parse(&junit).unwrap_or_else(|e| panic!("junit.xml: {e}\n{junit}"));
    let mut plots = 0;
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "svg") {
            let svg = std::fs::read_to_string(&path).unwrap();
            roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            plots += 1;
        }
    }
    assert!(plots > 0, "plots were drawn");

    let (stdout, stderr) = text(&o);
    for (what, t) in [("stdout", &stdout), ("stderr", &stderr)] {
        assert!(
            !t.contains('\u{1b}') && !t.contains('\u{7}'),
            "{what} holds an escape:\n{t}"
        );
        assert!(
            !t.lines().any(|l| l.trim_start().starts_with("::")),
            "{what} holds a workflow command:\n{t}"
        );
    }
    assert!(
        stdout.contains("\\u{1b}]0;pwned"),
        "shown escaped:\n{stdout}"
    );
}

#[test]
fn wait_prints_what_the_server_lists_escaped() {
    let server = HostileServer::start();
    let o = infermeter(&["wait", &server.base_url, "--timeout", "20s"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    for t in [&stdout, &stderr] {
        assert!(
            !t.contains('\u{1b}') && !t.contains('\u{7}'),
            "an escape:\n{t}"
        );
        assert!(
            !t.lines().any(|l| l.trim_start().starts_with("::")),
            "a workflow command:\n{t}"
        );
    }
    assert!(
        stdout.contains("\\n::add-mask::x"),
        "shown escaped:\n{stdout}"
    );
}

/// A stage name that would end its line, run `::error::` and set the window title.
const LINE_BREAKER: &str = "cap\\n::error::pwned\\u{1b}]0;x\\u{7}";

#[test]
fn a_stage_name_is_escaped_in_the_decidable_table_and_its_warnings() {
    let dir = tempfile::tempdir().unwrap();
    // 20 requests cannot show an error rate under 1 %: a row and a warning name the stage.
    let path = scenario(
        dir.path(),
        "s.kdl",
        &format!(
            r#"scenario "h"
target "sim"
dataset "d" {{ synthetic {{ input-tokens 8; output-tokens 4; }} }}
stage "{LINE_BREAKER}" {{
    dataset "d"
    arrival "constant" rate=50
    requests 20
    sla {{ assert "error_rate < 1%" }}
}}
"#
        ),
    );
    let path = path.to_str().unwrap();
    let validate = infermeter(&["validate", path]);
    assert_eq!(validate.status.code(), Some(0), "{}", describe(&validate));
    assert_terminal_inert("validate", &validate);
    let (stdout, stderr) = text(&validate);
    assert!(
        stdout.contains(&format!("stage `{LINE_BREAKER}` sends 20: TOO FEW")),
        "the row, shown escaped:\n{stdout}"
    );
    assert!(
        stderr.contains(&format!("on stage `{LINE_BREAKER}`: the stage sends 20")),
        "the warning, shown escaped:\n{stderr}"
    );
    let plan = infermeter(&["plan", path]);
    assert_eq!(plan.status.code(), Some(0), "{}", describe(&plan));
    assert_terminal_inert("plan", &plan);
    assert!(text(&plan).0.contains("TOO FEW"), "{}", describe(&plan));
}

#[test]
fn a_sweeps_name_is_escaped_in_the_profiles_section() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/sweep-gate.kdl");
    let example = std::fs::read_to_string(example).unwrap();
    let hostile = example.replace("stage \"capacity\"", &format!("stage \"{LINE_BREAKER}\""));
    assert_ne!(
        hostile, example,
        "the example still names its stage `capacity`"
    );
    let path = scenario(dir.path(), "sweep.kdl", &hostile);
    let out = dir.path().join("out");
    let run = run(&path, &out, &[]);
    // As the example: the point past the knee fails without gating.
    assert_eq!(run.status.code(), Some(0), "{}", describe(&run));
    assert_terminal_inert("run", &run);
    let (stdout, _) = text(&run);
    assert!(
        stdout.contains(&format!("\nProfiles\n  sweep `{LINE_BREAKER}`: knee")),
        "the group, shown escaped:\n{stdout}"
    );
}
