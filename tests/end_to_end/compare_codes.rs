//! `compare`'s exit codes through the real binary, as README.md, docs/cli.md, docs/sla.md,
//! `compare --help` and action.yml state them: two identical runs show no regression but
//! cannot decide every metric (a zero error rate in both), which exits 0 by default with a
//! note saying why, 4 with `--inconclusive inconclusive` and 1 with `--inconclusive fail`.

use std::path::{Path, PathBuf};

use crate::support::{describe, infermeter, text};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/results")
        .join(name)
}

fn doc(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

#[test]
fn identical_runs_are_inconclusive_and_exit_as_documented() {
    let base = fixture("baseline.json");
    let base = base.to_str().unwrap();
    let o = infermeter(&["compare", base, base]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        out.starts_with("chat-pr-gate: INCONCLUSIVE (no regression shown)"),
        "{out}"
    );
    assert!(
        err.contains(
            "note: 2 metric(s) undecided: no regression shown, none ruled out; exit 0 \
             (--inconclusive inconclusive exits 4 for this, --inconclusive fail 1)"
        ),
        "{err}"
    );

    let o = infermeter(&["compare", base, base, "--inconclusive", "inconclusive"]);
    assert_eq!(o.status.code(), Some(4), "{}", describe(&o));
    let (_, err) = text(&o);
    assert!(err.contains("inconclusive: steady: error_rate"), "{err}");
    assert!(!err.contains("note:"), "{err}");
    let o = infermeter(&["compare", base, base, "--inconclusive", "fail"]);
    assert_eq!(o.status.code(), Some(1), "{}", describe(&o));
}

#[test]
fn the_help_the_readme_and_the_action_say_the_same() {
    let o = infermeter(&["compare", "--help"]);
    let (help, _) = text(&o);
    assert!(
        help.contains(
            "4 none is worse but one is undecided, with `--inconclusive inconclusive` only"
        ),
        "{help}"
    );
    assert!(help.contains("[default: pass]"), "{help}");
    let readme = doc("README.md").replace('\n', " ");
    assert!(
        readme.contains("`4` for an undecided metric only with `--inconclusive inconclusive`"),
        "README.md"
    );
    assert!(
        !readme.contains("or `compare` could not rule a regression out"),
        "README.md"
    );
    let cli = doc("docs/cli.md").replace('\n', " ");
    assert!(
        cli.contains("`compare` exits `4` only with `--inconclusive inconclusive`"),
        "docs/cli.md"
    );
    // The Action runs compare with its default, and fails the job on a regression only.
    let action = doc("action.yml");
    assert!(
        action.contains("0 no regression shown, undecided metrics included"),
        "action.yml"
    );
    assert!(
        action.contains(
            r#"if [ "${COMPARE_CODE:-}" = 1 ] && [ "$INPUT_FAIL_ON_REGRESSION" = true ]"#
        ),
        "action.yml"
    );
    assert!(
        !action.contains("--inconclusive inconclusive"),
        "action.yml"
    );
}
