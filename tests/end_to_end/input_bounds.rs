//! Input that would crash or flood: data set lines without bound or not UTF-8, scenarios
//! nested thousands of levels deep or made of binary garbage, broken report templates. Each
//! is a clear, bounded error (exit 2) naming the file and where in it, before any request.

use crate::support::bad_server::{BadServer, Misbehaviour};
use crate::support::*;

fn jsonl_scenario(dir: &std::path::Path) -> std::path::PathBuf {
    scenario(
        dir,
        "s.kdl",
        r#"
dataset "mine" { jsonl "prompts.jsonl" max-tokens=4; }
stage "s" { dataset "mine"; arrival "concurrency" clients=1; requests 2; }
"#,
    )
}

#[test]
fn a_data_set_line_longer_than_the_bound_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = jsonl_scenario(dir.path());
    // A valid record on one 17 MiB line (a file with no newline reads the same way).
    let mut big = String::from("{\"prompt\": \"hello\"}\n{\"prompt\": \"");
    big.push_str(&"a".repeat(17 << 20));
    big.push_str("\"}\n");
    std::fs::write(dir.path().join("prompts.jsonl"), big).unwrap();
    let o = infermeter(&["plan", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("prompts.jsonl:2"), "{stderr}");
    assert!(stderr.contains("16 MiB"), "{stderr}");
}

#[test]
fn invalid_utf8_in_a_data_set_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = jsonl_scenario(dir.path());
    std::fs::write(
        dir.path().join("prompts.jsonl"),
        b"{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\xff\"}\n",
    )
    .unwrap();
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("prompts.jsonl:3"), "{stderr}");
    assert!(stderr.contains("UTF-8"), "{stderr}");
}

#[test]
fn a_scenario_nested_thousands_deep_is_a_diagnostic_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20_000;
    let text = format!("stage \"a\" {}{}", "{ x ".repeat(n), "}".repeat(n));
    let path = scenario(dir.path(), "deep.kdl", &text);
    for command in ["validate", "plan", "run"] {
        let o = infermeter(&[command, path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{command}: {}", describe(&o));
        let (_, stderr) = crate::support::text(&o);
        assert!(stderr.contains("nest more than 64 levels"), "{stderr}");
    }
}

#[test]
fn what_the_kdl_parser_recurses_into_is_a_diagnostic_not_a_crash() {
    // Each aborted `validate` with a stack overflow (exit 134): blocks behind something the
    // depth guard's lexer reads as a string or comment while kdl's recovery does not, and
    // the other things kdl recurses on — a resumption per stray character, a level per token
    // of a comment.
    let blocks = format!("\n{}{}", "b { ".repeat(3_000), "}".repeat(3_000));
    let mut texts: Vec<String> = [
        "a \"",
        "a \"1\"2\"3\"4\"5\"6\"7",
        "a #\"",
        "a ##\"x\"#",
        "a \"\"\"",
        "a \"\\q",
        "a \"x\\",
        "/* ",
        "/* /* */",
        "/- a \"",
        "a /- \"",
        "a (\"",
    ]
    .iter()
    .map(|prefix| format!("{prefix}{blocks}"))
    .collect();
    texts.push("}".repeat(30_000));
    texts.push("=".repeat(30_000));
    texts.push(format!("/*{}*/", "*a".repeat(20_000)));
    texts.push(format!("{}{}", "/*".repeat(5_000), "*/".repeat(5_000)));
    let dir = tempfile::tempdir().unwrap();
    for (i, t) in texts.iter().enumerate() {
        let path = scenario(dir.path(), &format!("r{i}.kdl"), t);
        let o = infermeter(&["validate", path.to_str().unwrap()]);
        let shown: String = t.chars().take(24).collect();
        assert_eq!(o.status.code(), Some(2), "{shown:?}: {}", describe(&o));
        assert!(
            o.stderr.len() < 256 << 10,
            "{shown:?}: {} bytes",
            o.stderr.len()
        );
        assert!(text(&o).1.contains(&format!("r{i}.kdl")), "{shown:?}");
    }
}

#[test]
fn a_megabyte_of_garbage_gives_a_bounded_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    // Printable ASCII, no newline: one 1 MiB line.
    let mut x: u32 = 12345;
    let garbage: String = (0..1 << 20)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            char::from(33 + ((x >> 16) % 94) as u8)
        })
        .collect();
    let path = scenario(dir.path(), "garbage.kdl", &garbage);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        o.stderr.len() < 256 << 10,
        "a {} byte diagnostic for a 1 MiB file",
        o.stderr.len()
    );
    let (_, stderr) = text(&o);
    assert!(stderr.contains("garbage.kdl"), "{stderr}");
    // Refused before kdl sees it: parsing it could need more stack than the cap.
    assert!(stderr.contains("too large to parse safely"), "{stderr}");
}

#[test]
fn a_long_valid_scenario_is_not_refused_as_too_large() {
    // Some 40 KB, sixteen times the largest example: well inside the parser's stack cap.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from(
        "scenario \"long\"\ntarget \"sim\"\ndataset \"d\" {\n    synthetic {\n        input-tokens 32\n        output-tokens 32\n    }\n}\n",
    );
    for i in 0..500 {
        text.push_str(&format!(
            "stage \"s{i}\" {{\n    dataset \"d\"\n    arrival \"concurrency\" clients=1\n    requests 1\n}}\n"
        ));
    }
    assert!(text.len() > 40_000, "{}", text.len());
    let path = scenario(dir.path(), "long.kdl", &text);
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

#[test]
fn a_template_with_an_undefined_name_is_refused_before_the_run() {
    let server = BadServer::start(Misbehaviour::StallChat);
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(
        dir.path(),
        "s.kdl",
        &format!(
            r#"
target "{}" {{ model "m"; timeout "2s"; }}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "s" {{ dataset "d"; arrival "constant" rate=5; requests 1; }}
"#,
            server.base_url
        ),
    );
    let template = dir.path().join("mine.md.j2");
    std::fs::write(
        &template,
        "# {{ results.scenario }}\n{% for s in results.stages %}{{ s.name }} {{ s.latncy }}\n{% endfor %}",
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = run(&path, &out, &["--template", template.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("mine.md.j2"), "the file: {stderr}");
    assert!(stderr.contains("line 2"), "the line: {stderr}");
    assert!(stderr.contains("s.latncy"), "the name: {stderr}");
    // A name undefined at the top level: named too, as undefined.
    std::fs::write(&template, "# report\n{{ nosuch }}\n").unwrap();
    let o = run(&path, &out, &["--template", template.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (_, stderr) = text(&o);
    assert!(stderr.contains("mine.md.j2, line 2"), "{stderr}");
    assert!(stderr.contains("`nosuch` is undefined"), "{stderr}");
    assert_eq!(server.connections(), 0, "refused before the run");
}

#[test]
#[cfg(unix)]
fn endless_input_files_are_refused_not_read_to_the_end_of_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = jsonl_scenario(dir.path());
    std::fs::write(dir.path().join("prompts.jsonl"), "{\"prompt\": \"a\"}\n").unwrap();
    let out = dir.path().join("out");
    let s = path.to_str().unwrap();
    let o = out.to_str().unwrap();
    for args in [vec!["validate", "/dev/zero"], vec!["report", "/dev/zero"]] {
        let child = command()
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let o = wait_bounded(child, 60, &args.join(" "));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
        assert!(text(&o).1.contains("larger than"), "{}", describe(&o));
    }
    // A template is read only from a regular file: a device is refused before it is read.
    let err = refused(&["run", s, "--out", o, "--template", "/dev/zero"]);
    assert!(
        err.contains("it is a character device, not a regular file"),
        "{err}"
    );
}

/// Whether a thread of process `pid` is named `name` (Linux's `/proc`).
#[cfg(target_os = "linux")]
fn has_thread(pid: u32, name: &str) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks
        .filter_map(Result::ok)
        .any(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
}

#[test]
#[cfg(target_os = "linux")]
fn a_fifo_nobody_writes_to_ends_at_the_first_signal_with_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("s.kdl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path in a directory this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = dir.path().join("out");
    let (f, o) = (fifo.to_str().unwrap(), out.to_str().unwrap());
    for (args, sig) in [
        (vec!["run", f, "--out", o], libc::SIGINT),
        (vec!["run", f, "--out", o], libc::SIGTERM),
        (vec!["validate", f], libc::SIGINT),
        (vec!["plan", f], libc::SIGINT),
    ] {
        let child = command()
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Blocked on the FIFO, on the thread a signal can leave behind.
        wait_for(60, &format!("{args:?} reading the FIFO"), || {
            has_thread(child.id(), "input-reader")
        });
        signal(&child, sig);
        let o = wait_bounded(child, 30, &format!("{args:?} after a signal"));
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", describe(&o));
        assert!(
            text(&o).1.contains("interrupted"),
            "{args:?}: {}",
            describe(&o)
        );
    }
}

/// Makes a FIFO at `path`.
#[cfg(unix)]
fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) on a NUL-terminated path in a directory the test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Runs `args`, which must end at once (a FIFO nobody writes to would hold it: killed and
/// reported as a hang after a minute), with exit 2; its stderr.
fn refused(args: &[&str]) -> String {
    let child = command()
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let o = wait_bounded(child, 60, &args.join(" "));
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
    text(&o).1
}

#[test]
#[cfg(target_os = "linux")]
fn a_file_the_scenario_names_that_is_not_a_regular_file_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("fifo"));
    std::fs::create_dir(d.join("folder")).unwrap();
    std::os::unix::fs::symlink(d.join("fifo"), d.join("link.jsonl")).unwrap();
    let stage = "stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }\n";
    let synthetic = "synthetic { input-tokens 8; output-tokens 2; }";
    // What names the file, on line 2 of each scenario (line 1 is a comment).
    let cases = [
        (
            "jsonl",
            "dataset \"d\" { jsonl \"fifo\"; }".to_string(),
            "fifo",
            "a FIFO",
        ),
        (
            "link",
            "dataset \"d\" { jsonl \"link.jsonl\"; }".to_string(),
            "link.jsonl",
            "a FIFO",
        ),
        (
            "folder",
            "dataset \"d\" { sharegpt \"folder\"; }".to_string(),
            "folder",
            "a directory",
        ),
        (
            "device",
            "dataset \"d\" { trace \"/dev/zero\"; }".to_string(),
            "/dev/zero",
            "a character device",
        ),
        (
            "agentic",
            "dataset \"d\" { agentic \"fifo\"; }".to_string(),
            "fifo",
            "a FIFO",
        ),
        (
            "hooks",
            format!("dataset \"d\" {{ {synthetic}; hooks \"fifo\"; }}"),
            "fifo",
            "a FIFO",
        ),
        (
            "tokenizer",
            format!("tokenizer \"./fifo\"\ndataset \"d\" {{ {synthetic}; }}"),
            "./fifo",
            "a FIFO",
        ),
        (
            "template",
            format!("report {{ template \"fifo\"; }}\ndataset \"d\" {{ {synthetic}; }}"),
            "fifo",
            "a FIFO",
        ),
    ];
    for (name, node, path, kind) in cases {
        let text = format!("// {name}\n{node}\n{stage}");
        let file = scenario(d, &format!("{name}.kdl"), &text);
        let out = d.join(format!("out-{name}"));
        let (f, o) = (file.to_str().unwrap(), out.to_str().unwrap());
        for args in [vec!["validate", f], vec!["run", f, "--out", o]] {
            let err = refused(&args);
            assert!(
                err.contains(&format!("path `{path}` is {kind}, not a regular file")),
                "{args:?}: {err}"
            );
            assert!(
                err.contains(&format!("{name}.kdl:2:")),
                "the line: {args:?}: {err}"
            );
        }
        assert!(!out.join("results.json").exists(), "{name}: nothing ran");
    }
}

#[test]
#[cfg(target_os = "linux")]
fn an_image_or_template_no_scenario_line_names_is_refused_when_not_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    mkfifo(&d.join("fifo"));
    let stage = "stage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 1; }\n";
    let synthetic = "synthetic { input-tokens 8; output-tokens 2; }";
    // An image a data set line names: refused at its line.
    std::fs::write(
        d.join("img.jsonl"),
        "{\"prompt\": \"look\", \"images\": [\"fifo\"]}\n",
    )
    .unwrap();
    let text = format!("target \"sim\"\ndataset \"d\" {{ jsonl \"img.jsonl\"; }}\n{stage}");
    let file = scenario(d, "img.kdl", &text);
    let err = refused(&["validate", file.to_str().unwrap()]);
    assert!(err.contains("img.jsonl:1: images[0]: `"), "{err}");
    assert!(err.contains("it is a FIFO, not a regular file"), "{err}");
    // A --template.
    let text = format!("dataset \"d\" {{ {synthetic}; }}\n{stage}");
    let file = scenario(d, "plain.kdl", &text);
    let out = d.join("out-plain");
    let fifo = d.join("fifo");
    let err = refused(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--template",
        fifo.to_str().unwrap(),
    ]);
    assert!(err.contains("failed to read template"), "{err}");
    assert!(err.contains("it is a FIFO, not a regular file"), "{err}");
}
