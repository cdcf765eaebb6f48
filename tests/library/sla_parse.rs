//! The SLA grammar: every documented example parses to the right typed assertion, every error
//! points at the right bytes with a useful hint, and no input makes the parser panic.

use Aggregation::*;
use SlaErrorKind::*;
use infermeter_core::metrics::{CountMetric as C, LatencyMetric as L};
use infermeter_core::sla::Percentile::*;
use infermeter_core::sla::{Aggregation, Metric, Op, SlaErrorKind, Threshold, parse};

fn abs(expr: &str) -> (Metric, Option<Aggregation>, Op, f64) {
    let a = parse(expr).unwrap_or_else(|e| panic!("{expr}: {e} ({})", e.hint));
    let Threshold::Absolute(v) = a.threshold else {
        panic!("{expr}: expected an absolute threshold")
    };
    (a.metric, a.aggregation, a.op, v)
}

/// (expression, metric, aggregation, operator, threshold in the metric's unit)
const DOCUMENTED_EXAMPLES: &[(&str, Metric, Option<Aggregation>, Op, f64)] = &[
    (
        "ttft.p95 < 200ms",
        Metric::Latency(L::Ttft),
        Some(Percentile(P95)),
        Op::Lt,
        200.0,
    ),
    (
        "itl.p99 <= 40ms",
        Metric::Latency(L::Itl),
        Some(Percentile(P99)),
        Op::Le,
        40.0,
    ),
    (
        "e2e.max < 30s",
        Metric::Latency(L::E2e),
        Some(Max),
        Op::Lt,
        30_000.0,
    ),
    (
        "ntpot.p90 < 60ms",
        Metric::Latency(L::Ntpot),
        Some(Percentile(P90)),
        Op::Lt,
        60.0,
    ),
    (
        "tpot.mean < 50ms",
        Metric::Latency(L::Tpot),
        Some(Mean),
        Op::Lt,
        50.0,
    ),
    (
        "ttft.p99.9 < 1s",
        Metric::Latency(L::Ttft),
        Some(Percentile(P999)),
        Op::Lt,
        1000.0,
    ),
    (
        "ttft.p999 < 1s",
        Metric::Latency(L::Ttft),
        Some(Percentile(P999)),
        Op::Lt,
        1000.0,
    ),
    (
        "ttfa.min >= 5ms",
        Metric::Latency(L::Ttfa),
        Some(Min),
        Op::Ge,
        5.0,
    ),
    (
        "e2e.max < 2m",
        Metric::Latency(L::E2e),
        Some(Max),
        Op::Lt,
        120_000.0,
    ),
    (
        "e2e.p99 < 1.5m",
        Metric::Latency(L::E2e),
        Some(Percentile(P99)),
        Op::Lt,
        90_000.0,
    ),
    (
        "ttft.p50 == 250us",
        Metric::Latency(L::Ttft),
        Some(Percentile(P50)),
        Op::Eq,
        0.25,
    ),
    (
        "error_rate < 1%",
        Metric::Count(C::ErrorRate),
        None,
        Op::Lt,
        1.0,
    ),
    (
        "output_throughput > 2000 tok/s",
        Metric::Count(C::OutputThroughput),
        None,
        Op::Gt,
        2000.0,
    ),
    (
        "input_throughput > 1000 tok/s",
        Metric::Count(C::InputThroughput),
        None,
        Op::Gt,
        1000.0,
    ),
    (
        "request_throughput >= 50 req/s",
        Metric::Count(C::RequestThroughput),
        None,
        Op::Ge,
        50.0,
    ),
    (
        "goodput > 95%",
        Metric::Count(C::Goodput),
        None,
        Op::Gt,
        95.0,
    ),
    (
        "goodput_rate > 10 req/s",
        Metric::Count(C::GoodputRate),
        None,
        Op::Gt,
        10.0,
    ),
    (
        "send_lag.p99 < 1ms",
        Metric::Latency(L::SendLag),
        Some(Percentile(P99)),
        Op::Lt,
        1.0,
    ),
    (
        "  ttft.p95<200ms  ",
        Metric::Latency(L::Ttft),
        Some(Percentile(P95)),
        Op::Lt,
        200.0,
    ),
    (
        "ttft.p95 < 1.5 s",
        Metric::Latency(L::Ttft),
        Some(Percentile(P95)),
        Op::Lt,
        1500.0,
    ),
];

#[test]
fn every_documented_example_parses() {
    let cases = DOCUMENTED_EXAMPLES;
    for &(expr, metric, agg, op, value) in cases {
        let got = abs(expr);
        assert_eq!(got.0, metric, "{expr}");
        assert_eq!(got.1, agg, "{expr}");
        assert_eq!(got.2, op, "{expr}");
        assert!((got.3 - value).abs() < 1e-9, "{expr}: {} != {value}", got.3);
    }
    assert_eq!(parse("  ttft.p95<200ms  ").unwrap().expr, "ttft.p95<200ms");
    assert_eq!(parse("error_rate < 1%").unwrap().unit(), "%");
    assert_eq!(parse("ttft.p99.9 < 1s").unwrap().metric_ref(), "ttft.p99.9");
}

#[test]
fn baseline_thresholds() {
    let a = parse("ttft.p95 < baseline * 1.10").unwrap();
    assert_eq!(a.threshold, Threshold::Baseline { factor: 1.10 });
    assert_eq!(a.unit(), "ms");
    let a = parse("output_throughput >= baseline").unwrap();
    assert_eq!(a.threshold, Threshold::Baseline { factor: 1.0 });
    let a = parse("goodput > baseline*0.9").unwrap();
    assert_eq!(a.threshold, Threshold::Baseline { factor: 0.9 });
    let e = parse("ttft.p95 < baseline * x").unwrap_err();
    assert_eq!(e.kind, SlaErrorKind::BadNumber);
    assert_eq!(e.offset, 22);
    assert!(e.hint.contains("baseline * 1.10"), "{}", e.hint);
}

/// (expression, kind, offset, len, text the message or hint must contain)
const ERRORS: &[(&str, SlaErrorKind, usize, usize, &str)] = &[
    ("", Empty, 0, 0, "ttft.p95 < 200ms"),
    (
        "ttfb.p95 < 200ms",
        UnknownMetric,
        0,
        4,
        "did you mean `ttft`?",
    ),
    (
        "error_rat < 1%",
        UnknownMetric,
        0,
        9,
        "did you mean `error_rate`?",
    ),
    (
        "output_througput > 1 tok/s",
        UnknownMetric,
        0,
        16,
        "did you mean `output_throughput`?",
    ),
    ("zzzzzz < 1%", UnknownMetric, 0, 6, "metrics: ttft"),
    ("< 200ms", UnknownMetric, 0, 1, "expected a metric name"),
    (
        "error_rate < 200ms",
        UnitMismatch,
        16,
        2,
        "error_rate is a percentage; write e.g. 1%",
    ),
    ("ttft.p95 < 5%", UnitMismatch, 12, 1, "ttft is a latency"),
    ("output_throughput > 20 req/s", UnitMismatch, 23, 5, "tok/s"),
    ("ttft.p95 < 200", MissingUnit, 14, 0, "write e.g. 200ms"),
    (
        "ttft.p95 < 200 parsecs",
        UnknownUnit,
        15,
        7,
        "ttft is a latency",
    ),
    ("ttft < 200ms", MissingAggregation, 0, 4, "ttft.p95"),
    (
        "error_rate.p95 < 1%",
        UnexpectedAggregation,
        10,
        4,
        "takes no aggregation",
    ),
    (
        "ttft.p42 < 200ms",
        UnsupportedPercentile,
        5,
        3,
        "p50, p90, p95, p99, p99.9",
    ),
    ("ttft.p99.99 < 1s", UnsupportedPercentile, 5, 6, "supported"),
    (
        "send_lag.p95 < 1ms",
        UnsupportedPercentile,
        9,
        3,
        "p50, p99, max",
    ),
    ("ttft.median < 1s", UnknownAggregation, 5, 6, "mean"),
    (
        "ttft.pxx < 1s",
        UnknownAggregation,
        5,
        3,
        "not a percentile",
    ),
    ("ttft.p95 200ms", MissingOperator, 9, 5, "operators"),
    (
        "ttft.p95",
        MissingOperator,
        8,
        0,
        "missing comparison operator",
    ),
    ("ttft.p95 = 200ms", BadOperator, 9, 1, "=="),
    ("ttft.p95 != 200ms", BadOperator, 9, 2, "operators"),
    ("ttft.p95 <", MissingValue, 10, 0, "200ms"),
    ("ttft.p95 < abc", BadNumber, 11, 3, "200ms"),
    (
        "ttft.p95 < 1.2.3ms",
        BadNumber,
        11,
        5,
        "not a valid threshold",
    ),
    ("ttft.p95 < -5ms", BadNumber, 11, 4, "200ms"),
    (
        "ttft.p95 < 200ms and more",
        TrailingInput,
        17,
        8,
        "one assertion",
    ),
    ("ttft.p95 < 200ms 5", TrailingInput, 17, 1, "unexpected `5`"),
];

#[test]
fn errors_point_at_the_offending_text_with_a_hint() {
    let cases = ERRORS;
    for &(expr, kind, offset, len, needle) in cases {
        let e = parse(expr).expect_err(expr);
        assert_eq!(e.kind, kind, "{expr}: {e} / {}", e.hint);
        assert_eq!((e.offset, e.len), (offset, len), "{expr}: {e}");
        assert!(
            e.message.contains(needle) || e.hint.contains(needle),
            "{expr}: `{needle}` not in `{}` / `{}`",
            e.message,
            e.hint
        );
        assert!(e.offset + e.len <= expr.len(), "{expr}: span past the end");
    }
}

/// Pieces of the grammar (and of what is not), so that random inputs get past the first token.
const FRAGMENTS: &[&str] = &[
    "ttft",
    ".",
    "p95",
    "p99.9",
    "<",
    "<=",
    "==",
    "=",
    ">",
    " ",
    "200",
    "ms",
    "%",
    "req/s",
    "tok/s",
    "baseline",
    "*",
    "1.1",
    "µs",
    "é",
    "error_rate",
    "send_lag",
    "\t",
    "p",
    "..",
    "e2e",
    "-",
    "🦀",
    "\u{0}",
    "9999999999999999999999999999999",
    "1e400",
    "max",
    "goodput",
];

/// Valid assertions, edited at random.
const EXAMPLES: &[&str] = &[
    "ttft.p95 < 200ms",
    "ttft.p99.9 < 1s",
    "output_throughput > 2000 tok/s",
    "goodput > 95%",
    "ttft.p95 < baseline * 1.10",
];

/// A small deterministic generator: no proptest, but many inputs, half built from grammar
/// fragments so they get past the first token.
#[test]
fn never_panics_on_garbage() {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut parsed = 0;
    for i in 0..30_000 {
        let n = (next() % 8) as usize;
        let mut s = String::new();
        match i % 3 {
            0 => {
                for _ in 0..n {
                    s.push_str(FRAGMENTS[(next() % FRAGMENTS.len() as u64) as usize]);
                }
            }
            1 => {
                for _ in 0..n {
                    s.push(char::from_u32((next() % 0x2FF) as u32).unwrap_or('?'));
                }
            }
            _ => {
                // One random edit of a valid assertion: most break it, some keep it valid.
                let mut chars: Vec<char> = EXAMPLES[(next() % EXAMPLES.len() as u64) as usize]
                    .chars()
                    .collect();
                let at = (next() % chars.len() as u64) as usize;
                let c = char::from_u32((next() % 0x80) as u32).unwrap_or('?');
                match next() % 3 {
                    0 => drop(chars.remove(at)),
                    1 => chars.insert(at, c),
                    _ => chars[at] = c,
                }
                s = chars.into_iter().collect();
            }
        }
        match parse(&s) {
            Ok(a) => {
                parsed += 1;
                assert_eq!(a.expr, s.trim_matches([' ', '\t']));
            }
            Err(e) => {
                assert!(e.offset + e.len <= s.len(), "{s:?}: span {e:?}");
                assert!(s.is_char_boundary(e.offset), "{s:?}: {e:?}");
                assert!(s.is_char_boundary(e.offset + e.len), "{s:?}: {e:?}");
                assert!(!e.hint.is_empty(), "{s:?}: no hint");
            }
        }
    }
    assert!(parsed > 0, "the generator never produced a valid assertion");
}

#[test]
fn a_window_selector_puts_the_assertion_on_the_steady_state_window() {
    use infermeter_core::sla::Window;
    let a = parse("ttft.p99[window=steady] < 200ms").unwrap();
    assert_eq!(a.window, Window::Steady);
    assert_eq!(a.threshold, Threshold::Absolute(200.0));
    // Spaces inside the brackets, `stage` spelled out, counts and rates take it too.
    assert_eq!(
        parse("e2e.p50[ window = stage ] < 1s").unwrap().window,
        Window::Stage
    );
    assert_eq!(
        parse("error_rate[window=steady] < 1%").unwrap().window,
        Window::Steady
    );
    assert_eq!(
        parse("request_throughput[window=steady] > 10 req/s")
            .unwrap()
            .window,
        Window::Steady
    );
    // Without a selector: the whole stage.
    assert_eq!(parse("ttft.p99 < 200ms").unwrap().window, Window::Stage);
    // The text round-trips (the plan's JSON holds it).
    let back: infermeter_core::sla::Assertion = a.expr.parse().unwrap();
    assert_eq!(back, a);
}

#[test]
fn a_bad_window_selector_is_refused_where_it_is() {
    for (expr, at, words) in [
        ("ttft.p99[window=steady < 200ms", 8, "unclosed"),
        ("ttft.p99[window=ramp] < 200ms", 9, "unknown window `ramp`"),
        ("ttft.p99[region=a] < 200ms", 9, "unknown selector `region`"),
        ("ttft.p99[window=steady,window=stage] < 1s", 23, "twice"),
        ("ttft.p99[] < 200ms", 9, "unknown selector"),
        ("itl.p99[window=steady] < 40ms", 7, "ITL"),
        ("send_lag.p99[window=steady] < 1ms", 12, "send lag"),
        ("gpu.temp.max[window=steady] < 80", 12, "telemetry"),
    ] {
        let e = parse(expr).unwrap_err();
        assert_eq!(e.kind, SlaErrorKind::BadSelector, "{expr}: {e}");
        assert_eq!(e.offset, at, "{expr}: {e}");
        assert!(e.message.contains(words), "{expr}: {e}");
        assert!(!e.hint.is_empty(), "{expr}");
    }
    // Hostile: a huge selector, nested brackets, control characters: errors, not panics.
    let huge = format!("ttft.p99[{}] < 1ms", "window=steady,".repeat(10_000));
    assert!(parse(&huge).is_err());
    for expr in [
        "ttft.p99[[window=steady]] < 1ms",
        "ttft.p99[window=\u{0}] < 1ms",
        "ttft.p99][",
    ] {
        assert!(parse(expr).is_err(), "{expr}");
    }
}

#[test]
fn in_window_writes_the_selector_into_the_text() {
    use infermeter_core::sla::Window;
    let a = parse("ttft.p99 < 200ms").unwrap().in_window(Window::Steady);
    assert_eq!(a.expr, "ttft.p99[window=steady] < 200ms");
    assert_eq!(a.window, Window::Steady);
    assert_eq!(
        a.expr.parse::<infermeter_core::sla::Assertion>().unwrap(),
        a
    );
    // An assertion that names its own window keeps it.
    let own = parse("ttft.p99[window=stage] < 200ms").unwrap();
    assert_eq!(own.clone().in_window(Window::Steady), own);
    let rate = parse("error_rate<1%").unwrap().in_window(Window::Steady);
    assert_eq!(rate.expr, "error_rate[window=steady]<1%");
}
