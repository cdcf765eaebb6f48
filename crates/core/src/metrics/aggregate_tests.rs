//! Tests of the stage aggregator: the metric definitions, the validity rules, snapshots.

use super::*;
use crate::metrics::{Dist, FlagKind, HostLoad, LagCause};

fn ok_record(index: u64, scheduled_ms: u64, ttft_ms: u64, gaps_ms: &[u64]) -> RequestRecord {
    let ms = 1_000_000;
    let first = (scheduled_ms + ttft_ms) * ms;
    let done = first + gaps_ms.iter().sum::<u64>() * ms;
    RequestRecord {
        index,
        scheduled_ns: scheduled_ms * ms,
        sent_ns: scheduled_ms * ms + 10_000,
        done_ns: done,
        first_token_ns: Some(first),
        first_answer_ns: Some(first),
        itl_us: gaps_ms.iter().map(|g| (*g * 1000) as u32).collect(),
        chunks: gaps_ms.len() as u32 + 1,
        input_tokens: 100,
        output_tokens: gaps_ms.len() as u32 + 1,
        ..RequestRecord::default()
    }
}

#[test]
fn metrics_follow_the_definitions() {
    let slo = GoodputSlo {
        ttft_ns: Some(60_000_000),
        ..GoodputSlo::default()
    };
    let mut agg = StageAggregator::new("s", PlannedLoad::default(), slo);
    // TTFT 50 ms, then 4 gaps of 10 ms: E2E 90 ms, 5 tokens, TPOT 10 ms, NTPOT 18 ms.
    agg.record(&ok_record(0, 0, 50, &[10, 10, 10, 10]));
    // TTFT 100 ms (misses the 60 ms SLO), one token.
    agg.record(&ok_record(1, 100, 100, &[]));
    let mut failed = RequestRecord {
        index: 2,
        error: Some(ErrorKind::Http(503)),
        ..RequestRecord::default()
    };
    failed.done_ns = 5_000_000;
    agg.record(&failed);
    let clock = StageClock {
        wall_ns: 2_000_000_000,
        planned_span_ns: None,
        cpu_ns: 0,
        cores: 2,
        peak_rss_bytes: 0,
        steal_share: None,
        poll_idle: false,
        ..StageClock::default()
    };
    let s = agg.finish(clock, &ValidityRules::default());
    assert_eq!(s.requests.sent, 3);
    assert_eq!(s.requests.ok, 2);
    assert_eq!(s.requests.failed, 1);
    assert_eq!(s.requests.errors["http_503"], 1);
    assert_eq!(s.latency[LatencyMetric::Ttft].count, 2);
    assert!(
        (s.latency[LatencyMetric::Ttft].min - 50.0).abs() < 0.1,
        "{:?}",
        s.latency
    );
    assert!((s.latency[LatencyMetric::Ttft].max - 100.0).abs() < 0.1);
    assert_eq!(s.latency[LatencyMetric::Itl].count, 4);
    assert!((s.latency[LatencyMetric::Itl].p50 - 10.0).abs() < 0.05);
    assert_eq!(
        s.latency[LatencyMetric::Tpot].count,
        1,
        "single-token requests have no TPOT"
    );
    assert!((s.latency[LatencyMetric::Tpot].p50 - 10.0).abs() < 0.05);
    assert!((s.latency[LatencyMetric::Ntpot].min - 18.0).abs() < 0.05);
    assert!((s.latency[LatencyMetric::E2e].min - 90.0).abs() < 0.1);
    assert_eq!(s.tokens.output, 6);
    assert!((s.throughput.requests_per_s - 1.0).abs() < 1e-9);
    assert!((s.throughput.goodput_ratio - 1.0 / 3.0).abs() < 1e-9);
    assert!(s.validity.trusted, "{:?}", s.validity.reasons);
    assert_eq!(s.timeline.len(), 1);
    assert_eq!(s.timeline[0].completed, 2);
    assert_eq!(s.timeline[0].failed, 1);
}

#[test]
fn late_client_is_flagged_with_its_cause() {
    let late = |lag_us: u64, poll_idle, host: HostLoad| {
        let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
        for i in 0..100 {
            let mut r = ok_record(i, i * 10, 5, &[1]);
            r.sent_ns = r.scheduled_ns + lag_us * 1_000;
            agg.record(&r);
        }
        let clock = StageClock {
            wall_ns: 1_100_000_000,
            planned_span_ns: Some(990_000_000),
            cores: 1,
            poll_idle,
            host,
            ..StageClock::default()
        };
        agg.finish(clock, &ValidityRules::default())
    };
    let idle = HostLoad {
        busy_share: Some(0.05),
        others_share: Some(0.01),
        ..HostLoad::default()
    };
    let s = late(1_500, false, idle);
    assert!(!s.validity.trusted);
    assert!(s.validity.reasons[0].contains("send lag p99"));
    assert!((s.client.send_lag_ms.p99 - 1.5).abs() < 0.01);
    // On an idle machine, a small lag: sleeping CPUs, unless they were kept polling.
    assert!(s.validity.reasons[0].contains("--poll-idle"));
    assert!(matches!(
        s.validity.flags[0].kind,
        FlagKind::SendLag {
            cause: LagCause::WakeUp,
            ..
        }
    ));
    assert!(!s.client.poll_idle);
    let s = late(1_500, true, idle);
    assert!(!s.validity.reasons[0].contains("--poll-idle"));
    assert!(s.client.poll_idle);
    // Other processes on the client's CPUs: contention, and its fix.
    let crowded = HostLoad {
        busy_share: Some(1.0),
        others_share: Some(0.9),
        involuntary_per_s: Some(300.0),
        run_queue_mean: Some(5.0),
        run_queue_max: Some(8),
    };
    let s = late(40_000, false, crowded);
    let reason = &s.validity.reasons[0];
    assert!(
        reason.contains("CPU contention") && reason.contains("90%"),
        "{reason}"
    );
    assert!(!reason.contains("--poll-idle"), "{reason}");
    assert_eq!(s.client.others_percent, Some(90.0));
    assert_eq!(s.client.run_queue.map(|q| q.max), Some(8));
}

#[test]
fn send_lag_is_judged_against_the_ttft_it_distorts() {
    // 1.3 ms late at 1 req/s against 100 ms TTFTs: 1.3 % of what is measured.
    let stage = |lag_us: u64, ttft_ms: u64| {
        let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
        for i in 0..50 {
            let mut r = ok_record(i, i * 1000, ttft_ms, &[1]);
            r.sent_ns = r.scheduled_ns + lag_us * 1_000;
            agg.record(&r);
        }
        agg.finish(
            StageClock {
                wall_ns: 50_000_000_000,
                cores: 1,
                ..StageClock::default()
            },
            &ValidityRules::default(),
        )
    };
    let s = stage(1_300, 100);
    assert!(s.validity.trusted, "{:?}", s.validity.reasons);
    // The same lag against 5 ms TTFTs is over the 1 ms floor.
    let s = stage(1_300, 5);
    assert!(!s.validity.trusted);
    assert!(
        s.validity.reasons[0].contains("of TTFT p50"),
        "{:?}",
        s.validity.reasons
    );
    // 8 ms against 100 ms is over 5 % of it.
    assert!(!stage(8_000, 100).validity.trusted);
}

#[test]
fn the_servers_answers_can_make_a_stage_untrusted() {
    let clock = StageClock {
        wall_ns: 1_000_000_000,
        cores: 1,
        ..StageClock::default()
    };
    let rules = ValidityRules::default();
    // Nothing succeeded.
    let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
    agg.record(&RequestRecord {
        error: Some(ErrorKind::Empty),
        ..RequestRecord::default()
    });
    let s = agg.finish(clock, &rules);
    assert!(s.validity.reasons[0].contains("no request succeeded (1 sent; empty: 1)"));

    // With ignore_eos, output lengths off the plan; and an implausible usage count.
    let facts = StageFacts {
        ignore_eos: true,
        ..StageFacts::default()
    };
    let mut agg =
        StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default()).with_facts(facts);
    for i in 0..10 {
        let mut r = ok_record(i, i * 10, 5, &[1, 1, 1]);
        r.planned_output_tokens = if i < 8 { 16 } else { 4 };
        r.implausible_usage = i == 0;
        agg.record(&r);
    }
    let s = agg.finish(clock, &rules);
    assert_eq!(s.tokens.off_plan_output, 8);
    assert_eq!(s.tokens.implausible, 1);
    let reasons = s.validity.reasons.join(" | ");
    assert!(reasons.contains("80% of responses (8 of 10)"), "{reasons}");
    assert!(reasons.contains("implausible on 1 of 10"), "{reasons}");
}

#[test]
fn cache_hits_the_plan_did_not_intend_are_flagged() {
    let stage = |facts: StageFacts, requests: u64| {
        let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default())
            .with_facts(facts);
        for i in 0..requests {
            let mut r = ok_record(i, i * 10, 5, &[1]);
            r.cached_tokens = Some(80);
            agg.record(&r);
        }
        agg.finish(
            StageClock {
                wall_ns: 1_000_000_000,
                cores: 1,
                ..StageClock::default()
            },
            &ValidityRules::default(),
        )
    };
    let plain = stage(
        StageFacts {
            distinct_prompts: Some(4),
            ..StageFacts::default()
        },
        20,
    );
    assert_eq!(plain.tokens.cached, 1600);
    assert_eq!(plain.tokens.cached_share, Some(0.8));
    assert!(!plain.validity.trusted);
    let reasons = plain.validity.reasons.join(" ");
    assert!(
        reasons.contains("80% of prompt tokens (1600 of 2000)")
            && reasons.contains("20 requests over 4 distinct prompts"),
        "{reasons}"
    );
    assert!(plain.notes[0].contains("20 requests over 4 distinct prompts"));
    // Sessions and shared prefixes mean to hit the cache.
    let shared = stage(
        StageFacts {
            shares_prefixes: true,
            ..StageFacts::default()
        },
        20,
    );
    assert!(shared.validity.trusted, "{:?}", shared.validity.reasons);
    assert_eq!(shared.tokens.cached_share, Some(0.8));
}

#[test]
fn a_snapshot_leaves_the_aggregator_as_it_was() {
    let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
    agg.record(&ok_record(0, 0, 5, &[1]));
    let clock = StageClock {
        wall_ns: 1_000_000_000,
        cores: 1,
        ..StageClock::default()
    };
    let snap = agg.snapshot(clock, &ValidityRules::default());
    assert_eq!(snap.requests.ok, 1);
    assert!(snap.histograms.is_none());
    agg.record(&ok_record(1, 10, 5, &[1]));
    let s = agg.finish(clock, &ValidityRules::default());
    assert_eq!(s.requests.ok, 2);
    assert!(s.histograms.is_some());
}

#[test]
fn steal_is_a_cause_and_idle_closed_loop_clients_its_effect() {
    let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
    agg.record(&ok_record(0, 0, 5, &[1]));
    let clock = |steal, idle| StageClock {
        wall_ns: 1_000_000_000,
        cores: 1,
        steal_share: Some(steal),
        poll_idle: false,
        closed_idle: idle,
        ..StageClock::default()
    };
    let calm = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default())
        .finish(clock(0.005, None), &ValidityRules::default());
    assert!(calm.validity.trusted, "{:?}", calm.validity.reasons);
    assert_eq!(calm.client.steal_percent, Some(0.5));
    assert!(calm.notes.is_empty(), "{:?}", calm.notes);
    // 30 % stolen and nothing measured of it: trusted, and said once as a note.
    let s = agg.finish(clock(0.3, Some((5, 1_000))), &ValidityRules::default());
    assert!(s.validity.trusted, "{:?}", s.validity.reasons);
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("stole 30.0%") && n.contains("no measured effect")),
        "{:?}",
        s.notes
    );
    assert_eq!(s.client.closed_loop_idle_percent, Some(0.5));
    // A closed loop's clients idle 5 % of their time: flagged, with steal as the cause.
    let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
    agg.record(&ok_record(0, 0, 5, &[1]));
    let s = agg.finish(clock(0.3, Some((50, 1_000))), &ValidityRules::default());
    assert!(!s.validity.trusted);
    let flags = s.validity.typed_flags();
    assert_eq!(
        flags[0].kind.name(),
        "idle_clients",
        "{:?}",
        s.validity.reasons
    );
    assert!(
        s.validity.reasons[0].contains("5.0% of their time"),
        "{:?}",
        s.validity.reasons
    );
    assert!(
        s.validity.reasons[0].contains("stole"),
        "{:?}",
        s.validity.reasons
    );
    assert!(
        s.notes.iter().all(|n| !n.contains("stole")),
        "{:?}",
        s.notes
    );
}

#[test]
fn empty_stage_has_empty_distributions() {
    let agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
    let s = agg.finish(StageClock::default(), &ValidityRules::default());
    assert_eq!(s.latency[LatencyMetric::Ttft], Dist::default());
    assert_eq!(s.requests.sent, 0);
}
