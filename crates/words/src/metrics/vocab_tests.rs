use super::*;
use crate::metrics::{ErrorKind, RequestRecord};

#[test]
fn names_keys_and_labels_are_each_given_once() {
    let all: Vec<Metric> = Metric::all().collect();
    for (i, a) in all.iter().enumerate() {
        assert_eq!(Metric::from_name(a.name()), Some(*a), "{a}");
        for b in &all[i + 1..] {
            assert_ne!(a.name(), b.name());
            assert_ne!(a.def().key, b.def().key, "{a} {b}");
            assert_ne!(a.def().label, b.def().label, "{a} {b}");
        }
    }
    // Each family's table is in the order of its enum.
    for (i, m) in LatencyMetric::ALL.iter().enumerate() {
        assert_eq!(*m as usize, i);
        assert_eq!(m.def().kind, MetricKind::Latency);
        assert!(m.key().ends_with("_ms") && m.key().starts_with(m.name()));
    }
    assert!(
        CountMetric::ALL
            .iter()
            .enumerate()
            .all(|(i, m)| *m as usize == i)
    );
    assert!(
        TelemetryMetric::ALL
            .iter()
            .enumerate()
            .all(|(i, m)| *m as usize == i)
    );
}

#[test]
fn latencies_get_worse_upwards_and_rates_downwards() {
    use Worse::{Higher, Lower};
    let worse = |name: &str| Metric::from_name(name).unwrap().def().worse;
    for name in [
        "ttft",
        "itl",
        "tpot",
        "e2e",
        "ntpot",
        "ttfa",
        "send_lag",
        "error_rate",
    ] {
        assert_eq!(worse(name), Higher, "{name}");
    }
    for name in [
        "output_throughput",
        "input_throughput",
        "request_throughput",
        "goodput",
        "goodput_rate",
        "tokens_per_joule",
        "gpu.throttle_ratio.min",
    ] {
        assert_eq!(worse(name), Lower, "{name}");
    }
    for name in [
        "gpu.temp.max",
        "gpu.power.mean",
        "energy_j",
        "kv_cache.max",
        "queue.max",
    ] {
        assert_eq!(worse(name), Higher, "{name}");
    }
}

/// What issue 25's gate reads: which verdicts a late client could have flipped.
#[test]
fn what_a_late_client_can_do_to_each_metric() {
    let def = |name: &str| Metric::from_name(name).unwrap().def();
    // Measured from the scheduled instant: lateness only adds, so a pass stands.
    for name in ["ttft", "e2e", "ttfa", "ntpot", "send_lag"] {
        let d = def(name);
        assert_eq!(d.late_client, LateClient::Raises, "{name}");
        assert!(d.client_can_worsen() && !d.client_can_improve(), "{name}");
    }
    // Between two received events: a late read moves them either way.
    for name in ["itl", "tpot"] {
        let d = def(name);
        assert!(d.client_can_worsen() && d.client_can_improve(), "{name}");
    }
    // A late client completes fewer per second: it can only make them look worse.
    for name in [
        "output_throughput",
        "request_throughput",
        "goodput",
        "goodput_rate",
    ] {
        let d = def(name);
        assert_eq!(d.late_client, LateClient::Lowers, "{name}");
        assert!(d.client_can_worsen() && !d.client_can_improve(), "{name}");
    }
    // Errors: only the kinds the client declares itself.
    let e = def("error_rate");
    assert_eq!(e.late_client, LateClient::ClientSideErrors);
    assert!(e.client_can_worsen() && !e.client_can_improve());
    assert!(ErrorKind::Timeout.client_side() && ErrorKind::Cancelled.client_side());
    for server in [
        ErrorKind::Http(503),
        ErrorKind::Connect,
        ErrorKind::StreamBroken,
        ErrorKind::Protocol,
        ErrorKind::Malformed,
        ErrorKind::Empty,
        ErrorKind::Incomplete,
    ] {
        assert!(!server.client_side(), "{server:?}");
    }
    // The server's own readings: only through the load it was offered.
    for m in TelemetryMetric::ALL {
        let d = m.def();
        assert_eq!(d.late_client, LateClient::LoadOnly);
        assert!(
            !d.client_can_worsen() && !d.client_can_improve(),
            "{}",
            d.name
        );
    }
}

#[test]
fn a_late_send_adds_to_the_latencies_measured_from_the_schedule() {
    // A later turn that completed its task, so that every metric measures it.
    let on_time = RequestRecord {
        turn: 1,
        task_ns: Some(100_000_000),
        scheduled_ns: 1_000_000,
        sent_ns: 1_000_000,
        first_token_ns: Some(21_000_000),
        first_answer_ns: Some(21_000_000),
        done_ns: 101_000_000,
        itl_us: vec![10_000; 8],
        output_tokens: 9,
        ..RequestRecord::default()
    };
    // The same server, the client 5 ms late sending.
    let late = RequestRecord {
        sent_ns: 6_000_000,
        first_token_ns: Some(26_000_000),
        first_answer_ns: Some(26_000_000),
        done_ns: 106_000_000,
        // Its task ends with this request, 5 ms later too.
        task_ns: Some(105_000_000),
        ..on_time.clone()
    };
    for m in LatencyMetric::ALL {
        let (a, b) = (m.measure(&on_time), m.measure(&late));
        match m.def().late_client {
            LateClient::Raises => match (a, b) {
                (Sample::Ns(a), Sample::Ns(b)) => assert!(b > a, "{}", m.name()),
                other => panic!("{}: {other:?}", m.name()),
            },
            // Not measured from the schedule: a late send alone leaves them as they were.
            _ => assert_eq!(a, b, "{}", m.name()),
        }
    }
    let failed = RequestRecord {
        error: Some(ErrorKind::Timeout),
        ..on_time
    };
    for m in LatencyMetric::ALL {
        let want_sample = m == LatencyMetric::SendLag;
        assert_eq!(
            m.measure(&failed) != Sample::None,
            want_sample,
            "{}",
            m.name()
        );
    }
}

#[test]
fn only_distributions_take_aggregations() {
    for m in Metric::all() {
        // Server start-up is a duration but one reading per stage, not a histogram.
        let single_duration = m == Metric::Count(CountMetric::ServerStartup);
        assert_eq!(
            m.needs_aggregation(),
            m.kind().shape() == Shape::Distribution && !single_duration,
            "{m}"
        );
        assert_eq!(
            m.supported_aggregations().is_empty(),
            !m.needs_aggregation()
        );
        // Bare numbers: telemetry readings, a concurrency curve's count of clients, and the
        // judge's score, which is on the rubric's own scale.
        let bare = m.is_telemetry()
            || m.curve().is_some_and(CurveMetric::of_clients)
            || m == Metric::Count(CountMetric::JudgeScore);
        assert_eq!(m.kind().unit_optional(), bare, "{m}");
    }
    // Send lag's summary is the client's health: p50, p99 and max only.
    assert_eq!(
        Metric::Latency(LatencyMetric::SendLag)
            .supported_aggregations()
            .len(),
        3
    );
}
