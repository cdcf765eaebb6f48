//! `schemas/results.schema.json` is generated from [`Results`]; this fails when it is stale.
//! Regenerate with `INFERMETER_BLESS=1 cargo test --test library report_schema`.

use std::path::Path;

use infermeter::results::Results;

#[test]
fn results_schema_is_up_to_date() {
    let schema = schemars::schema_for!(Results);
    let fresh = serde_json::to_string_pretty(&schema).unwrap() + "\n";
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
    // Every fixture must deserialize into the contract and survive a round trip unchanged.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/results");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let r: Results =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let back: serde_json::Value = serde_json::to_value(&r).unwrap();
        let orig: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(back == orig, "{} does not round-trip", path.display());
    }
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
