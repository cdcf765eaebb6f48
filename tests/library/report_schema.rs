//! `schemas/results.schema.json` is generated from [`Results`]; this fails when it is stale.
//! Regenerate with `INFERMETER_BLESS=1 cargo test --test library report_schema`.

use std::path::Path;

use infermeter::results::{RESULTS_SCHEMA_VERSION, Results, migrate};

#[test]
fn results_schema_is_up_to_date() {
    // The text `infermeter schema results` prints.
    let fresh = infermeter::results::json_schema();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/results.schema.json");
    if std::env::var_os("INFERMETER_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == fresh,
        "{} is stale; regenerate it with INFERMETER_BLESS=1 cargo test --test library report_schema",
        path.display()
    );
}

#[test]
fn fixtures_match_the_schema_shape() {
    // Every fixture of the current format must deserialize into the contract and survive a
    // round trip unchanged; older ones must load, their verdicts migrated.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results");
    let mut current = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let r: Results =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if r.schema_version < RESULTS_SCHEMA_VERSION {
            let r = migrate(r);
            for v in &r.sla {
                let want = if v.passed { "pass" } else { "fail" };
                assert_eq!(v.outcome.as_str(), want, "{}", path.display());
            }
            continue;
        }
        current += 1;
        let back: serde_json::Value = serde_json::to_value(&r).unwrap();
        let orig: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(back == orig, "{} does not round-trip", path.display());
        // The figures a version-2 result carries: histograms, intervals, outcomes.
        assert!(r.stages.iter().all(|s| s.histograms.is_some()));
        assert!(r.stages[0].latency.ttft_ms.intervals.is_some());
        if path.ends_with("v2.json") {
            assert!(r.stages.iter().any(|s| s.rounds.len() == 3));
        }
    }
    assert!(
        current >= 1,
        "a fixture of the current format is checked in"
    );
}

#[test]
fn results_written_before_complete_existed_read_as_complete() {
    // Older versions wrote results.json once, at the end of the run.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results/current.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("complete");
    let r: Results = serde_json::from_value(v).unwrap();
    assert!(r.complete);
}
