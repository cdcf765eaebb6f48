//! `network { … }` in a target: its forms read alike, absent settings are zero, and what the
//! proxy cannot honour is refused with the fix.

use std::path::Path;

use infermeter_core::protocol::NetworkShape;
use infermeter_core::scenario::parse_str;

const REST: &str = r#"
dataset "d" { synthetic { input-tokens 8; output-tokens 8; } }
stage "s" { dataset "d"; arrival "poisson" rate=1; requests 1; }
"#;

fn shape(target: &str) -> Option<NetworkShape> {
    let text = format!("{target}\n{REST}");
    match parse_str(Path::new("t.kdl"), &text, &[]) {
        Ok(s) => s.target.run.network,
        Err(e) => panic!("{target}: {:?}", miette::Report::new(e)),
    }
}

fn problems(target: &str) -> String {
    let text = format!("{target}\n{REST}");
    let e = parse_str(Path::new("t.kdl"), &text, &[]).expect_err(target);
    e.problems()
        .iter()
        .map(|p| format!("{} | {} | {:?}\n", p.message, p.label, p.help))
        .collect()
}

#[test]
fn the_block_the_properties_and_the_one_line_form_read_alike() {
    let forms = [
        r#"target "sim" { network { delay "25ms"; jitter "5ms"; bandwidth "100Mbit"; loss "0.1%"; } }"#,
        r#"target "sim" { network delay="25ms" jitter="5ms" bandwidth="100Mbit" loss="0.1%"; }"#,
        r#"target "sim" { network { delay "25ms" jitter="5ms" bandwidth="100Mbit" loss="0.1%"; } }"#,
        r#"target "http://10.0.0.1:8000/v1" { network { loss "0.1%"; bandwidth "12.5MB/s"; jitter "5ms"; delay "25ms"; } }"#,
    ];
    let shapes: Vec<NetworkShape> = forms.iter().map(|f| shape(f).unwrap()).collect();
    for s in &shapes[1..] {
        assert_eq!(s, &shapes[0]);
    }
    let s = shapes[0];
    assert_eq!(s.delay.as_millis_f64(), 25.0);
    assert_eq!(s.jitter.as_millis_f64(), 5.0);
    assert_eq!(s.bandwidth.unwrap().bits_per_sec(), 100_000_000);
    assert!((s.loss.0 - 0.001).abs() < 1e-12);
    assert_eq!(shape(r#"target "sim" { timeout "5s"; }"#), None);
}

#[test]
fn absent_settings_are_zero_and_jitter_may_exceed_the_delay() {
    let s = shape(r#"target "sim" { network jitter="40ms"; }"#).unwrap();
    assert_eq!(s.delay.as_nanos(), 0);
    assert_eq!(s.jitter.as_millis_f64(), 40.0);
    assert_eq!(s.bandwidth, None);
    assert_eq!(s.loss.0, 0.0);
    let s = shape(r#"target "sim" { network delay="1m" loss="50%"; }"#).unwrap();
    assert_eq!(s.delay.as_secs_f64(), 60.0);
    assert_eq!(s.loss.0, 0.5);
}

#[test]
fn what_the_proxy_cannot_honour_is_refused_with_the_fix() {
    for (target, want) in [
        (
            r#"target "sim" { network delay="61s"; }"#,
            "`delay` too long",
        ),
        (
            r#"target "sim" { network jitter="2m"; }"#,
            "`jitter` too long",
        ),
        (r#"target "sim" { network loss="51%"; }"#, "`loss` too high"),
        (r#"target "sim" { network loss=0.1; }"#, "invalid `loss`"),
        (
            r#"target "sim" { network bandwidth=100; }"#,
            "wrong type for `bandwidth`",
        ),
        (
            r#"target "sim" { network bandwidth="100Mbyte"; }"#,
            "invalid `bandwidth`",
        ),
        (
            r#"target "sim" { network delay="-5ms"; }"#,
            "invalid duration for `delay`",
        ),
        (r#"target "sim" { network; }"#, "`network` sets nothing"),
        (
            r#"target "sim" { network { delya "5ms"; } }"#,
            "did you mean `delay`",
        ),
        (
            r#"target "sim" { network delay="5ms" { delay "6ms"; } }"#,
            "`delay` given twice",
        ),
        (
            r#"target "sim" { network delay="5ms" shape="x"; }"#,
            "unknown property `shape`",
        ),
        (
            r#"target "https://api.example.com/v1" { network delay="5ms"; }"#,
            "network shaping needs an http target",
        ),
        (
            r#"target { url "http://a:1/v1"; url "https://b/v1"; network delay="5ms"; }"#,
            "network shaping needs an http target",
        ),
    ] {
        let p = problems(target);
        assert!(p.contains(want), "{target}: {p}");
    }
}
