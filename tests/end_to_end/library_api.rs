//! The library entry point: `infermeter_core::run_scenario` does what `infermeter run` does, tells
//! the caller's observer about every stage, and returns a typed outcome whose exit code is the
//! one the binary would have used.

use std::sync::{Arc, Mutex};

use infermeter_core::app::{Outcome, RunSettings, run_scenario};
use infermeter_core::runner::{Observer, StageProgress};

use crate::support::scenario;

#[derive(Default)]
struct Seen {
    started: Mutex<Vec<(String, Option<u64>)>>,
    finished: Arc<Mutex<Vec<(String, u64)>>>,
}

struct Stage {
    name: String,
    done: u64,
    finished: Arc<Mutex<Vec<(String, u64)>>>,
}

impl Observer for Seen {
    fn stage_started(&self, name: &str, total: Option<u64>) -> Box<dyn StageProgress> {
        self.started.lock().unwrap().push((name.to_string(), total));
        Box::new(Stage {
            name: name.to_string(),
            done: 0,
            finished: self.finished.clone(),
        })
    }
}

impl StageProgress for Stage {
    fn update(&mut self, done: u64, _: u64, _: (&'static str, f64)) {
        self.done = done;
    }
    fn finish(self: Box<Self>) {
        self.finished.lock().unwrap().push((self.name, self.done));
    }
}

const SCENARIO: &str = r#"
scenario "lib" { seed 3; }
param "ttft" "10s"
target "sim" { decode-base "1ms"; }
dataset "d" { synthetic { input-tokens 16; output-tokens 4; } }
warmup requests=2
stage "s" {
    dataset "d"
    arrival "constant" rate=50
    requests 12
}
sla { assert "ttft.p50 < 10s"; }
"#;

#[test]
fn a_passing_run_reports_its_stages_and_exit_code_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "lib.kdl", SCENARIO);
    let seen = Arc::new(Seen::default());
    let settings = RunSettings {
        out_dir: Some(dir.path().join("out")),
        plots: false,
        // A loaded test machine may flag the client's send lag; trust is not under test here.
        untrusted: Some(infermeter_core::sla::Untrusted::Judge),
        ..RunSettings::new(&path)
    };
    let report = run_scenario(&settings, seen.clone()).expect("the run is carried out");
    assert!(
        matches!(report.outcome, Outcome::Completed),
        "{:?}",
        report.outcome
    );
    assert!(report.results.passed);
    assert_eq!(report.exit_code(), 0);
    assert!(report.check().is_ok());
    assert_eq!(report.files[0], dir.path().join("out/results.json"));
    assert!(
        report.files.iter().all(|f| f.is_file()),
        "{:?}",
        report.files
    );
    assert_eq!(
        *seen.started.lock().unwrap(),
        [("warmup".to_string(), Some(2)), ("s".to_string(), Some(12))]
    );
    assert_eq!(
        *seen.finished.lock().unwrap(),
        [("warmup".to_string(), 2), ("s".to_string(), 12)]
    );
}

#[test]
fn a_failed_sla_and_an_invalid_scenario_map_to_their_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let failing = SCENARIO.replace("ttft.p50 < 10s", "ttft.p50 < 1us");
    let path = scenario(dir.path(), "fail.kdl", &failing);
    let settings = RunSettings {
        out_dir: Some(dir.path().join("out")),
        plots: false,
        untrusted: Some(infermeter_core::sla::Untrusted::Judge),
        ..RunSettings::new(&path)
    };
    let report = run_scenario(&settings, Arc::new(())).expect("the run is carried out");
    assert!(!report.results.passed);
    assert_eq!(report.exit_code(), 1);
    let err = report.check().unwrap_err();
    assert!(
        err.to_string().contains("1 SLA assertion(s) failed"),
        "{err}"
    );

    let bad = scenario(dir.path(), "bad.kdl", "stage \"x\" {}");
    let err = run_scenario(&RunSettings::new(&bad), Arc::new(())).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(
        matches!(err, infermeter_core::Error::Scenario(_)),
        "{err:?}"
    );
}

#[test]
fn an_interrupt_before_the_first_stage_is_an_interrupted_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path(), "lib.kdl", SCENARIO);
    let settings = RunSettings {
        out_dir: Some(dir.path().join("out")),
        plots: false,
        ..RunSettings::new(&path)
    };
    settings.interrupt.cancel();
    let report = run_scenario(&settings, Arc::new(())).expect("the run is carried out");
    assert!(
        matches!(report.outcome, Outcome::Interrupted),
        "{:?}",
        report.outcome
    );
    assert!(report.results.interrupted && !report.results.passed);
    assert_eq!(report.exit_code(), 3);
}
