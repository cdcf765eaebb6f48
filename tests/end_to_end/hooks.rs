//! rhai hooks: compile errors with file, line and column; limits and sandbox escapes caught
//! and named; mutate/validate/request semantics; hook failures counted per request in a run.

use std::path::Path;

use infermeter_core::dataset::Prompt;
use infermeter_core::hooks::{HookCtx, HookError, Hooks};

fn ctx(index: u64) -> HookCtx<'static> {
    HookCtx {
        index,
        stage: "s",
        item: index,
        input_tokens: 10,
        output_tokens: 5,
        seed: 42 + index,
    }
}

fn runtime(err: HookError) -> String {
    match &err {
        HookError::Runtime { .. } => err.to_string(),
        HookError::Compile { .. } => panic!("expected a runtime error, got {err}"),
    }
}

#[test]
fn compile_errors_name_file_line_and_column() {
    let err = Hooks::compile("fn mutate(p, c) {\n  let x = ;\n}", "hooks/bad.rhai").unwrap_err();
    let HookError::Compile { line, column, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*line, 2);
    assert!(*column > 0);
    assert!(err.to_string().starts_with("hooks/bad.rhai:2:"), "{err}");
}

#[test]
fn limits_end_runaway_scripts_with_a_clear_error() {
    let h = Hooks::compile("fn mutate(p, c) { loop {} }", "loop.rhai").unwrap();
    let e = runtime(h.mutate(Prompt::Text("x".into()), &ctx(0)).unwrap_err());
    assert!(e.contains("mutate") && e.contains("operations"), "{e}");

    let h = Hooks::compile(
        "fn deep(n) { deep(n + 1) }\nfn validate(r, c) { deep(0) }",
        "deep.rhai",
    )
    .unwrap();
    let e = runtime(h.validate("ok", &ctx(0)).unwrap_err());
    assert!(e.contains("validate") && e.contains("nested calls"), "{e}");

    let h = Hooks::compile(
        "fn mutate(p, c) { let s = \"xxxxxxxxxxxxxxxx\"; loop { s += s; } }",
        "big.rhai",
    )
    .unwrap();
    let e = runtime(h.mutate(Prompt::Text("x".into()), &ctx(0)).unwrap_err());
    assert!(e.contains("limit"), "{e}");
}

#[test]
fn the_sandbox_has_no_files_modules_or_eval() {
    // `eval` is disabled at compile time.
    assert!(Hooks::compile("fn mutate(p, c) { eval(\"1\") }", "e.rhai").is_err());
    // Modules cannot be loaded.
    let h = Hooks::compile(
        "fn mutate(p, c) { import \"/etc/passwd\" as m; p }",
        "i.rhai",
    );
    if let Ok(h) = h {
        let e = runtime(h.mutate(Prompt::Text("x".into()), &ctx(0)).unwrap_err());
        assert!(e.contains("mutate"), "{e}");
    }
    // No file or process functions exist.
    for f in [
        "open_file(\"/etc/passwd\")",
        "system(\"ls\")",
        "read_file(\"x\")",
    ] {
        let h = Hooks::compile(&format!("fn mutate(p, c) {{ {f} }}"), "f.rhai").unwrap();
        let e = runtime(h.mutate(Prompt::Text("x".into()), &ctx(0)).unwrap_err());
        assert!(e.contains("not found"), "{f}: {e}");
    }
}

#[test]
fn mutate_is_deterministic_and_may_return_messages() {
    let h = Hooks::compile(
        "fn mutate(p, c) { p + \" #\" + c.rng.int(0, 1000000) + \" \" + c.stage + c.index }",
        "m.rhai",
    )
    .unwrap();
    let a = h.mutate(Prompt::Text("q".into()), &ctx(1)).unwrap();
    assert_eq!(a, h.mutate(Prompt::Text("q".into()), &ctx(1)).unwrap());
    assert!(
        a.as_text().starts_with("q #") && a.as_text().ends_with(" s1"),
        "{a:?}"
    );
    let b = h.mutate(Prompt::Text("q".into()), &ctx(2)).unwrap();
    assert_ne!(a, b);

    let h = Hooks::compile(
        "fn mutate(p, c) { [#{role: \"system\", content: \"be brief\"}, #{role: \"user\", content: p}] }",
        "m.rhai",
    )
    .unwrap();
    let Prompt::Messages(ms) = h.mutate(Prompt::Text("hi".into()), &ctx(0)).unwrap() else {
        panic!("messages expected")
    };
    assert_eq!(
        (ms[0].role.as_str(), ms[1].content.as_str()),
        ("system", "hi")
    );
    let h = Hooks::compile("fn mutate(p, c) { 42 }", "m.rhai").unwrap();
    let e = runtime(h.mutate(Prompt::Text("x".into()), &ctx(0)).unwrap_err());
    assert!(e.contains("expected a string"), "{e}");
}

#[test]
fn validate_and_request_hooks() {
    let h = Hooks::compile(
        "fn validate(r, c) { if r.contains(\"4\") { true } else if r == \"\" { false } else { \"wrong answer\" } }\n\
         fn request(b, c) { b.priority = c.index; b }",
        "v.rhai",
    )
    .unwrap();
    assert_eq!(h.validate("it is 4", &ctx(0)).unwrap(), None);
    assert!(h.validate("", &ctx(0)).unwrap().is_some());
    assert_eq!(
        h.validate("five", &ctx(0)).unwrap().as_deref(),
        Some("wrong answer")
    );
    let body = h
        .request(serde_json::json!({"model": "m", "max_tokens": 3}), &ctx(7))
        .unwrap();
    assert_eq!(body["priority"], 7);
    assert_eq!(body["max_tokens"], 3);
}

/// Runs a scenario with the given hook script; returns the error field of each request.
fn run_with_hooks(script: &str) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("h.rhai"), script).unwrap();
    let prompts = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/data/prompts.jsonl");
    let kdl = format!(
        "scenario \"h\" {{ seed 1 }}\ntarget \"sim\" {{ decode-base \"1ms\" }}\n\
         dataset \"d\" {{ jsonl \"{}\" max-tokens=8; hooks \"h.rhai\" }}\n\
         stage \"s\" {{ dataset \"d\"; arrival \"concurrency\" clients=2; requests 8 }}\n",
        prompts.display()
    );
    let file = dir.path().join("s.kdl");
    std::fs::write(&file, kdl).unwrap();
    let out = dir.path().join("out");
    let status = crate::support::command()
        .args(["run", "-q", "--no-plots", "--requests-jsonl", "--out"])
        .arg(&out)
        .arg(&file)
        .status()
        .unwrap();
    assert!(status.code().is_some_and(|c| c <= 1), "{status}");
    let rows = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    rows.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["error"].clone())
        .collect()
}

#[test]
fn hook_failures_count_per_request_and_the_run_goes_on() {
    // Every other request fails in mutate; the others are rejected by validate.
    let errors = run_with_hooks(
        "fn mutate(p, c) { if c.index % 2 == 0 { throw \"boom\"; } p }\nfn validate(r, c) { false }",
    );
    assert_eq!(errors.len(), 8);
    let hook = errors.iter().filter(|e| *e == "hook").count();
    let invalid = errors.iter().filter(|e| *e == "invalid").count();
    assert_eq!((hook, invalid), (4, 4), "{errors:?}");
}

#[test]
fn a_bad_script_stops_the_run_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("h.rhai"), "fn mutate(p, c) {\n  p +\n").unwrap();
    let kdl = "scenario \"h\"\ntarget \"sim\"\ndataset \"d\" { synthetic { input-tokens 8; output-tokens 4 }; hooks \"h.rhai\" }\nstage \"s\" { dataset \"d\"; arrival \"concurrency\" clients=1; requests 2 }\n";
    let file = dir.path().join("s.kdl");
    std::fs::write(&file, kdl).unwrap();
    let out = crate::support::command()
        .args(["run", "-q", "--out"])
        .arg(dir.path().join("out"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("h.rhai:"), "{stderr}");
    assert!(!dir.path().join("out/results.json").exists());
}

/// A session's tool round trip through `mutate`: messages the script hands back keep their
/// tool call or result (the server needs the call id); messages it builds anew carry none.
#[test]
fn mutate_keeps_the_tool_parts_of_the_messages_it_hands_back() {
    use infermeter_core::dataset::ChatMessage;
    use infermeter_core::protocol::{ToolCall, ToolPart};
    let call = ToolCall {
        call_id: "call-7".into(),
        name: "get_weather".into(),
        arguments: "{}".into(),
    };
    let msg = |role: &str, content: &str, tool| ChatMessage {
        role: role.into(),
        content: content.into(),
        tool,
    };
    let prompt = Prompt::Messages(vec![
        msg("user", "weather?", None),
        msg("assistant", "", Some(ToolPart::Calls(vec![call]))),
        msg(
            "tool",
            "sunny",
            Some(ToolPart::Result {
                call_id: "call-7".into(),
            }),
        ),
    ]);
    let kept = Hooks::compile(
        "fn mutate(p, c) { for i in 0..p.len() { p[i].content += \"!\"; } p }",
        "keep.rhai",
    )
    .unwrap();
    let Prompt::Messages(ms) = kept.mutate(prompt.clone(), &ctx(0)).unwrap() else {
        panic!("messages expected")
    };
    assert_eq!(ms[2].content, "sunny!");
    assert_eq!(
        ms[2].tool,
        Some(ToolPart::Result {
            call_id: "call-7".into()
        })
    );
    assert!(matches!(&ms[1].tool, Some(ToolPart::Calls(c)) if c[0].call_id == "call-7"));
    let rebuilt = Hooks::compile(
        "fn mutate(p, c) { p.map(|m| #{role: m.role, content: m.content}) }",
        "rebuild.rhai",
    )
    .unwrap();
    let Prompt::Messages(ms) = rebuilt.mutate(prompt, &ctx(0)).unwrap() else {
        panic!("messages expected")
    };
    assert!(ms.iter().all(|m| m.tool.is_none()), "{ms:?}");
}
