//! schemas/scenario.schema.json must match the code. Regenerate with
//! `INFERMETER_BLESS=1 cargo test --test library scenario_schema`.

use std::path::Path;

#[test]
fn checked_in_schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/scenario.schema.json");
    let generated = infermeter_core::scenario::json_schema();
    if std::env::var_os("INFERMETER_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "schemas/scenario.schema.json is stale or missing; regenerate it with \
         `INFERMETER_BLESS=1 cargo test --test library scenario_schema` and commit the result"
    );
}
