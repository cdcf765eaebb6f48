//! A sweep's points are planned as load points (`arrival::LoadPoint`); the plan's JSON, and so
//! its hash, is what it was when the point type also carried the results' fields: a baseline
//! taken before that split still compares as the same plan.

use std::path::Path;

fn hash_of(text: &str) -> String {
    let scenario = infermeter_core::scenario::parse_str(Path::new("sweep.kdl"), text, &[]).unwrap();
    infermeter_core::plan::compile(&scenario).unwrap().hash
}

#[test]
fn sweep_plans_keep_their_hashes() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/latency-profile.kdl");
    let text = std::fs::read_to_string(path).unwrap();
    // Computed by infermeter at 3358b53, before the split ("5689528f61973b29"), then again
    // when PLAN_FORMAT went to 3 (synthetic prompts derived from their length and data set:
    // the same plan sends other text, so it must not compare as the same workload), and when
    // the example's points were sized to decide their assertions (rates 10–60, 9 s each).
    assert_eq!(hash_of(&text), "50b8af326abbe392");
    let clients = text.replace("rates 10 20 30 45 60", "concurrency 1 2 4");
    assert_ne!(clients, text);
    assert_eq!(hash_of(&clients), "9dd4bd8f147b519a");
}
