//! `validate` holds every kind of stage to what its assertions need, through the real binary:
//! a sweep's points, a rate search's probes, multi-turn sessions (every turn a request) and
//! rounds each get a row per assertion, a warning naming the stage, the point and the change
//! where they send too few, and none where they send enough.

use crate::support::{describe, infermeter, scenario, text};

const HEAD: &str = r#"
scenario "needs"
target "sim"
dataset "d" { synthetic { input-tokens 10; output-tokens 10; } }
dataset "chat" {
    synthetic { input-tokens 10; output-tokens 10; }
    session turns=3 think-time="0s"
}
"#;

/// `validate` on `stages` under [`HEAD`]: its stdout (the table) and stderr (the warnings).
fn validate(stages: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "s.kdl", &format!("{HEAD}{stages}"));
    let o = infermeter(&["validate", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    text(&o)
}

const TOO_SMALL: &str = r#"
stage "sweep" {
    dataset "d"; arrival "constant" rate=5; requests 30
    sweep { rates 5 10 }
    sla { assert "ttft.p95 < 1s" }
}
stage "search" {
    dataset "d"
    search { rate from=1 to=20; probe "2s" }
    sla { assert "error_rate < 5%" }
}
stage "talk" {
    dataset "chat"; arrival "constant" rate=5; requests 10
    sla { assert "error_rate < 5%" }
}
stage "rounds" {
    dataset "d"; arrival "constant" rate=50; requests 40; rounds 3
    sla { assert "ttft.p99 < 1s" }
}
"#;

#[test]
fn stages_of_every_kind_too_small_for_their_assertions_are_warned_about() {
    let (out, err) = validate(TOO_SMALL);
    for row in [
        "sweep `sweep` point `sweep@5rps` sends 30: TOO FEW",
        "sweep `sweep` point `sweep@10rps` sends 30: TOO FEW",
        "search `search`'s 2s probes send about 2 to 40: TOO FEW",
        "stage `talk` sends 30 (10 sessions' turns): TOO FEW",
        "stage `rounds` runs 3 rounds of 40: TOO FEW",
    ] {
        assert!(out.contains(row), "no `{row}` in:\n{out}");
    }
    for warned in [
        "`ttft.p95 < 1s` on sweep `sweep`: its point `sweep@5rps` sends 30 requests",
        "`error_rate < 5%` on search `search`: its 2s probes send about 40 requests even at 20",
        "`error_rate < 5%` on stage `talk`: its 10 sessions send 30 requests",
        "`ttft.p99 < 1s` on stage `rounds`: 3 rounds of 40 requests pool 120",
    ] {
        assert!(err.contains(warned), "no `{warned}` in:\n{err}");
    }
    // `until-decided` is offered only where a stage may send until decided.
    assert!(!err.contains("until-decided"), "{err}");
}

#[test]
fn stages_of_every_kind_big_enough_for_their_assertions_are_not() {
    let enough = TOO_SMALL
        .replace("requests 30", "requests 60")
        .replace(
            "rate from=1 to=20; probe \"2s\"",
            "rate from=10 to=20; probe \"8s\"",
        )
        .replace("requests 10", "requests 25")
        .replace("rounds 3", "rounds 6");
    let (out, err) = validate(&enough);
    assert!(!out.contains("TOO FEW"), "{out}");
    assert!(out.contains("ok (across rounds)"), "{out}");
    assert!(!err.contains("warning"), "{err}");
}
