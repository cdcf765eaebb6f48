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
    for args in [
        vec!["validate", "/dev/zero"],
        vec!["report", "/dev/zero"],
        vec!["run", s, "--out", o, "--template", "/dev/zero"],
    ] {
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
}
