use super::*;

#[test]
fn kebab_case_fields_deserialize_and_unknown_ones_fail() {
    let c: SimConfig = serde_json::from_str(
        r#"{"decode-base":"20ms","max-running":4,"fault-http-500":0.5,"output-len-dist":"fixed"}"#,
    )
    .unwrap();
    assert_eq!(c.decode_base, Duration::from_millis(20));
    assert_eq!(c.max_running, 4);
    assert_eq!(c.fault_http_500, 0.5);
    assert_eq!(c.output_len_dist, OutputLenDist::Fixed);
    assert_eq!(c.kv_capacity, SimConfig::default().kv_capacity);
    assert!(serde_json::from_str::<SimConfig>(r#"{"decode-bas":"1ms"}"#).is_err());
    let round: SimConfig = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
    assert_eq!(round, c);
}

#[test]
fn validation_rejects_bad_ranges() {
    assert!(SimConfig::default().validate().is_ok());
    let bad = |f: fn(&mut SimConfig)| {
        let mut c = SimConfig::default();
        f(&mut c);
        c.validate().unwrap_err().field
    };
    assert_eq!(bad(|c| c.max_running = 0), "max-running");
    assert_eq!(bad(|c| c.jitter = 1.0), "jitter");
    assert_eq!(bad(|c| c.fault_stall = 1.5), "fault-stall");
    assert_eq!(
        bad(|c| {
            c.fault_http_429 = 0.6;
            c.fault_http_500 = 0.6;
        }),
        "fault-*"
    );
    assert_eq!(bad(|c| c.output_len_mean = 0), "output-len-mean");
    assert_eq!(bad(|c| c.prefix_cache_block = 0), "prefix-cache-block");
    assert_eq!(bad(|c| c.draft_tokens = 33), "draft-tokens");
    assert_eq!(bad(|c| c.draft_acceptance = f64::NAN), "draft-acceptance");
    assert_eq!(
        bad(|c| c.draft_acceptance_decay = 1.5),
        "draft-acceptance-decay"
    );
    assert_eq!(
        bad(|c| c.prefix_cache_capacity = 0),
        "prefix-cache-capacity"
    );
}

/// The default config as plans serialise (and hash) it, as it was before the real-server
/// settings were added: it must not change, or every sim plan's hash would.
#[test]
fn default_serialisation_is_pinned() {
    assert_eq!(
        serde_json::to_string(&SimConfig::default()).unwrap(),
        r#"{"model":"infermeter-sim","prefill-per-token":"50us","decode-base":"8ms","decode-per-seq":"100us","max-running":256,"seed":0,"kv-capacity":400000,"prefill-chunk":8192,"jitter":0.0,"default-max-tokens":1024,"output-len-dist":"exponential","output-len-mean":256,"fault-http-429":0.0,"fault-http-500":0.0,"fault-http-503":0.0,"fault-stream-cut":0.0,"fault-stall":0.0,"fault-malformed-sse":0.0,"fault-slow-first-byte":0.0,"stall-duration":"30s","slow-first-byte-delay":"2s"}"#
    );
}

#[test]
fn new_settings_are_left_out_at_their_defaults() {
    let v = serde_json::to_value(SimConfig::default()).unwrap();
    for key in [
        "close-after-stream",
        "prefix-cache",
        "prefix-cache-capacity",
        "prefix-cache-block",
        "timings",
        "metrics-histograms",
        "embedding-dim",
        "reasoning-tokens",
        "draft-tokens",
        "draft-acceptance",
        "draft-acceptance-decay",
    ] {
        assert!(v.get(key).is_none(), "{key} serialised at its default");
    }
    let c: SimConfig = serde_json::from_str(
        r#"{"close-after-stream":true,"prefix-cache":true,"prefix-cache-capacity":64,
            "prefix-cache-block":128,"timings":true,"metrics-histograms":true}"#,
    )
    .unwrap();
    assert!(c.close_after_stream && c.prefix_cache && c.timings && c.metrics_histograms);
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["prefix-cache-capacity"], 64);
    assert_eq!(v["prefix-cache-block"], 128);
    let round: SimConfig = serde_json::from_value(v).unwrap();
    assert_eq!(round, c);
}

#[test]
fn dist_parses_and_prints() {
    for d in ["fixed", "uniform", "exponential"] {
        assert_eq!(d.parse::<OutputLenDist>().unwrap().to_string(), d);
    }
    assert!("normal".parse::<OutputLenDist>().is_err());
}
