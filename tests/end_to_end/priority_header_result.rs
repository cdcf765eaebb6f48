//! results.json says which header told the server a class's priority (`target.priority_header`,
//! through the real binary against the embedded simulator): present with `priority-as
//! "header"` or `"both"` (the name as sent, lowercase), absent when priorities go in the body
//! only; the report's reproducibility table shows it, escaped when a saved result was edited
//! to hold markup.

use crate::support::*;

/// A small two-class stage on the simulator; `told` is the target's priority children.
fn classes_run(told: &str) -> (tempfile::TempDir, std::path::PathBuf, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        r#"
target "sim" {{
    decode-base "1ms"
    timeout "30s"
    {told}
}}
dataset "d" {{ synthetic {{ input-tokens 16; output-tokens 4; }} }}
stage "mixed" {{
    dataset "d"
    arrival "concurrency" clients=2
    requests 8
    class "interactive" weight=1 priority=-1
    class "batch" weight=1 priority=5
}}
"#
    );
    let path = scenario(dir.path(), "s.kdl", &text);
    let out = dir.path().join("out");
    let o = run(&path, &out, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = results(&out);
    (dir, out, r)
}

#[test]
fn the_priority_header_is_recorded_and_shown_escaped() {
    let (_dir, _out, body) = classes_run("");
    assert!(
        body["target"].get("priority_header").is_none(),
        "{}",
        body["target"]
    );
    let (_dir, out, both) = classes_run("priority-as \"both\"\n    priority-header \"X-Prio\"");
    assert_eq!(both["target"]["priority_header"], "x-prio");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("| priority header | `x-prio` |"), "{md}");

    // A saved result edited to hold markup: `report` renders it inert.
    let mut edited = both.clone();
    edited["target"]["priority_header"] = "x|y|<b>@team</b>".into();
    let path = out.join("edited.json");
    std::fs::write(&path, serde_json::to_string(&edited).unwrap()).unwrap();
    // A raw `|` would open a new Markdown table cell; in HTML only a tag would do harm.
    for (format, bad) in [
        ("markdown", &["<b>", "|y|", "@team"][..]),
        ("html", &["<b>", "@team</b>"][..]),
    ] {
        let o = infermeter(&["report", path.to_str().unwrap(), "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let (shown, _) = text(&o);
        assert!(shown.contains("priority header"), "{format}: {shown}");
        for bad in bad {
            assert!(!shown.contains(bad), "{format} holds {bad:?}:\n{shown}");
        }
    }
}
