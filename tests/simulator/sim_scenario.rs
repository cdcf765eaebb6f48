//! The real-server settings from a scenario's `target "sim"` block: decoded through
//! `SimConfig`'s serde like every simulator setting, and rejected with a pointed error when
//! mistyped.

use std::path::Path;

use infermeter_core::scenario::{Endpoint, parse_str};

const REST: &str = r#"
dataset "d" {
    synthetic {
        input-tokens 128
        output-tokens 64
    }
}
stage "s" {
    dataset "d"
    arrival "poisson" rate=5
    requests 10
}
"#;

#[test]
fn real_server_settings_parse_from_kdl() {
    let text = format!(
        r#"target "sim" {{
            close-after-stream #true
            prefix-cache #true
            prefix-cache-capacity 100000
            prefix-cache-block 128
            timings #true
            metrics-histograms #true
        }}
        {REST}"#
    );
    let s = parse_str(Path::new("t.kdl"), &text, &[])
        .unwrap_or_else(|e| panic!("{:?}", miette::Report::new(e)));
    let Endpoint::Sim(c) = &s.target.endpoint else {
        panic!("sim target")
    };
    assert!(c.close_after_stream && c.prefix_cache && c.timings && c.metrics_histograms);
    assert_eq!(c.prefix_cache_capacity, 100_000);
    assert_eq!(c.prefix_cache_block, 128);
}

#[test]
fn mistyped_real_server_settings_are_reported() {
    let text = format!("target \"sim\" {{\n    prefix-cache \"yes\"\n    timing #true\n}}\n{REST}");
    let e = parse_str(Path::new("t.kdl"), &text, &[]).expect_err("invalid");
    let all: String = e
        .problems()
        .iter()
        .map(|p| format!("{} | {} | {:?}\n", p.message, p.label, p.help))
        .collect();
    assert!(
        all.contains("invalid simulator setting `prefix-cache`"),
        "{all}"
    );
    assert!(all.contains("unknown setting `timing`"), "{all}");
    assert!(all.contains("timings"), "a did-you-mean for timings: {all}");
}
