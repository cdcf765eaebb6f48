//! The `echo` API kind (`crates/words/src/protocol/echo.rs`), the example of adding a kind,
//! run end to end: KDL → plan → client → simulator → results for an API no other file names.
//! Built only with the `echo` feature (`cargo test -p infermeter-core --features echo --test
//! api_echo`, which `.ci/run` runs): the kind must never reach a released binary, nor the
//! binary the rest of the suite tests.
#![cfg(feature = "echo")]

use std::sync::Arc;

use serde_json::Value;

use infermeter_core::app::{RunSettings, run_scenario};

#[test]
fn a_new_api_kind_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let settings = RunSettings {
        scenario_text: Some(
            r#"
scenario "echo" { seed 1; }
target "sim" { api "echo"; decode-base "1ms"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
stage "s" { dataset "d"; arrival "constant" rate=50; requests 8; }
"#
            .into(),
        ),
        out_dir: Some(dir.path().join("out")),
        plots: false,
        // A loaded test machine may flag the client's send lag; trust is not under test.
        untrusted: Some(infermeter_core::sla::Untrusted::Judge),
        ..RunSettings::new(dir.path().join("echo.kdl"))
    };
    run_scenario(&settings, Arc::new(())).expect("the run is carried out");
    let text = std::fs::read_to_string(dir.path().join("out/results.json")).unwrap();
    let results: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(results["target"]["api"], "echo");
    let stage = &results["stages"][0];
    assert_eq!(stage["requests"]["ok"], 8, "{}", stage["requests"]);
    assert_eq!(stage["tokens"]["output"], 32);
    assert_eq!(stage["tokens"]["from_usage"], 8);
    // The simulator counted the `input` it was sent exactly as the plan did.
    assert_eq!(stage["tokens"]["input"], 8 * 16);
    assert_eq!(stage["tokens"]["mismatched"], 0);
}
