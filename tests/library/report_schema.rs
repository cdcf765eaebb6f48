//! `schemas/results.schema.json` is generated from [`Results`]; this fails when it is stale.
//! Regenerate with `INFERMETER_BLESS=1 cargo test --test library report_schema`.

use std::path::Path;

use infermeter_core::metrics::LatencyMetric;
use infermeter_core::results::{RESULTS_SCHEMA_VERSION, Results, migrate};

#[test]
fn results_schema_is_up_to_date() {
    // The text `infermeter schema results` prints.
    let fresh = infermeter_core::results::json_schema();
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
            // Version 1 had no outcomes: they are taken from `passed`. Later versions keep
            // theirs.
            let before: Vec<_> = r.sla.iter().map(|v| v.outcome).collect();
            let version = r.schema_version;
            let r = migrate(r);
            // Version 2 files are version 3 without `gates`, which then reads as gating.
            for (v, was) in r.sla.iter().zip(before) {
                let want = match version {
                    1 if v.passed => "pass",
                    1 => "fail",
                    _ => was.as_str(),
                };
                assert_eq!(v.outcome.as_str(), want, "{}", path.display());
                assert!(v.gates, "{}", path.display());
            }
            continue;
        }
        current += 1;
        let back: serde_json::Value = serde_json::to_value(&r).unwrap();
        let orig: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(back == orig, "{} does not round-trip", path.display());
        // The figures a version-2 result carries: histograms, intervals, outcomes.
        assert!(r.stages.iter().all(|s| s.histograms.is_some()));
        assert!(r.stages[0].latency[LatencyMetric::Ttft].intervals.is_some());
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

#[test]
fn every_saved_result_saves_again_byte_identical() {
    // Loaded and written the way `infermeter` writes a result (`results::write_results`: pretty
    // JSON and a newline), without the migration `read_results` applies to older formats.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results");
    let out = tempfile::tempdir().unwrap();
    let (mut current, mut changed) = (0, Vec::new());
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let r: Results =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let again = out.path().join("results.json");
        infermeter_core::results::write_results(&r, &again).unwrap();
        let written = std::fs::read_to_string(&again).unwrap();
        if r.schema_version < RESULTS_SCHEMA_VERSION {
            // An older format gains the fields added since (`outcome`, `complete`,
            // `sla_policy`…), and nothing else changes.
            let mut v: serde_json::Value = serde_json::from_str(&written).unwrap();
            let orig: serde_json::Value = serde_json::from_str(&text).unwrap();
            drop_added(&mut v, &orig);
            if let Some(at) = first_difference(&orig, &v, String::new()) {
                changed.push(format!("{}: {at}", path.display()));
            }
            continue;
        }
        current += 1;
        if let Some(line) = text.lines().zip(written.lines()).position(|(a, b)| a != b) {
            changed.push(format!(
                "{} line {}: {:?} became {:?}",
                path.display(),
                line + 1,
                text.lines().nth(line),
                written.lines().nth(line)
            ));
        } else if text != written {
            changed.push(format!("{}: its length changed", path.display()));
        }
    }
    assert!(changed.is_empty(), "saved again, changed: {changed:#?}");
    assert!(current >= 5, "the current-format fixtures are checked");
}

/// Where two JSON values first differ, as a path and the two values there.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.keys()
                .chain(y.keys())
                .find_map(|k| match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => first_difference(p, q, format!("{at}.{k}")),
                    (p, q) => Some(format!("{at}.{k}: {p:?} became {q:?}")),
                })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, format!("{at}[{i}]"))),
        _ => (a != b).then(|| format!("{at}: {a} became {b}")),
    }
}

/// Removes from `written` every member `orig` lacks, at any depth.
fn drop_added(written: &mut serde_json::Value, orig: &serde_json::Value) {
    use serde_json::Value;
    match (written, orig) {
        (Value::Object(w), Value::Object(o)) => {
            w.retain(|k, _| o.contains_key(k));
            for (k, v) in w.iter_mut() {
                drop_added(v, &o[k]);
            }
        }
        (Value::Array(w), Value::Array(o)) => {
            for (v, ov) in w.iter_mut().zip(o) {
                drop_added(v, ov);
            }
        }
        _ => {}
    }
}

#[test]
fn a_version_2_result_loads_as_it_was() {
    // Version 3 only added the error kind `protocol`: a version-2 file needs no migration.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results/v2.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["schema_version"] = 2.into();
    let old: Results = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(migrate(old)).unwrap(), v);
}
