//! A generated agentic shape (`agentic tasks=N { … }`) checked by `validate` where it is
//! written: every property and distribution within its limit, refused on its line with the
//! limit and the fix (never clamped), and a shape too wide for a plan refused with its size.

#[test]
fn a_generated_shape_is_checked_where_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("bad.kdl");
    std::fs::write(
        &scenario,
        "target \"sim\"\n\
         dataset \"tasks\" {\n\
             agentic tasks=0 fork-chance=1.5 depth=9 {\n\
                 turns \"uniform\" min=3 max=2\n\
                 fan-outs 2\n\
                 input-tokens 20\n\
             }\n\
         }\n\
         stage \"s\" { dataset \"tasks\"; arrival \"poisson\" rate=1; requests 1 }\n",
    )
    .unwrap();
    let out = crate::support::infermeter(&["validate", scenario.to_str().unwrap()]);
    let (_, err) = crate::support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for want in [
        "`tasks` out of range",
        "`fork-chance` is a probability",
        "`depth` out of range",
        "min",
        "fan-outs",
        "`agentic` without `output-tokens`",
    ] {
        assert!(err.contains(want), "{want}: {err}");
    }
}

/// `validate`'s stderr for a generated shape with `props` on its node and `children` in its
/// body (line 4 on), and its exit code.
fn validate_shape(props: &str, children: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("shape.kdl");
    std::fs::write(
        &scenario,
        format!(
            "target \"sim\"\n\
             dataset \"tasks\" {{\n\
                 agentic {props} {{\n\
                 {children}\n\
                 input-tokens 8\n\
                 output-tokens 8\n\
                 }}\n\
             }}\n\
             stage \"s\" {{ dataset \"tasks\"; arrival \"poisson\" rate=1; requests 1 }}\n"
        ),
    )
    .unwrap();
    let out = crate::support::infermeter(&["validate", scenario.to_str().unwrap()]);
    (out.status.code(), crate::support::text(&out).1)
}

#[test]
fn every_agentic_limit_is_refused_on_its_line_never_clamped() {
    for (child, want) in [
        (
            "fan-out 1000",
            "`fan-out` can draw 1000, more than the 64 subagents",
        ),
        (
            "turns 1000",
            "`turns` can draw 1000, more than the 64 turns",
        ),
        ("turns 2 4 65", "`turns` can draw 65, more than the 64"),
        (
            "fan-out \"uniform\" min=1 max=65",
            "`fan-out` can draw 65, more than the 64",
        ),
        (
            "tool-ms 3600001",
            "`tool-ms` can draw 3600001, more than the 3600000",
        ),
        (
            "turns \"lognormal\" median=4 sigma=1 min=1 max=100",
            "`turns` can draw 100",
        ),
    ] {
        let (code, err) = validate_shape("tasks=2", child);
        assert_eq!(code, Some(2), "{child}: {err}");
        assert!(err.contains(want), "{child}: {err}");
        assert!(err.contains("shape.kdl:4:"), "{child}: the line: {err}");
        assert!(err.contains("or less"), "{child}: the fix: {err}");
    }
    // The node's own limits, refused the same way.
    for (props, want) in [
        ("tasks=10001", "`tasks` out of range"),
        ("depth=9", "`depth` out of range"),
    ] {
        let (code, err) = validate_shape(props, "turns 2");
        assert_eq!(code, Some(2), "{props}: {err}");
        assert!(err.contains(want) && err.contains("shape.kdl:3:"), "{err}");
    }
    // Within every limit and the size a plan may hold: accepted.
    let widest = "fork-chance=1.0 depth=8";
    let body = "turns 64\nfan-out 64";
    let (code, err) = validate_shape(&format!("tasks=1 {widest}"), body);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn a_shape_too_wide_to_plan_is_refused_with_its_size() {
    // 65 tasks of 256 sessions of 64 turns, at their widest: past 2^20 turns.
    let (code, err) = validate_shape("tasks=65 fork-chance=1.0 depth=8", "turns 64\nfan-out 64");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains(
            "`agentic` can generate 1064960 turns (65 tasks × up to 256 sessions × up to 64 \
             turns), more than the 1048576 a plan may hold"
        ),
        "{err}"
    );
    assert!(err.contains("shape.kdl:3:"), "{err}");
    assert!(
        err.contains("lower `tasks`, `turns`, `fan-out` or `depth`"),
        "{err}"
    );
    // The widest shape the scenario once accepted (10,000 such tasks) ends at once too.
    let (code, err) = validate_shape(
        "tasks=10000 fork-chance=1.0 depth=8",
        "turns 64\nfan-out 64",
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("can generate 163840000 turns"), "{err}");
}
