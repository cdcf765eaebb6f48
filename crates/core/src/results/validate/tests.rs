//! The validator against the results the project ships (every one holds together) and against
//! each rule broken on purpose, naming the field and the value.

use super::*;
use crate::metrics::LatencyMetric;
use crate::results::read_results;

fn fixture(name: &str) -> Results {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/results")
        .join(name);
    read_results(&path).unwrap_or_else(|e| panic!("{name}: {}", error_chain(&e)))
}

const FIXTURES: [&str; 7] = [
    "baseline.json",
    "current.json",
    "sim-profile.json",
    "sim-quickstart.json",
    "sim-telemetry.json",
    "sim-timings.json",
    "v2.json",
];

#[test]
fn every_shipped_result_holds_together() {
    for name in FIXTURES {
        validate(&fixture(name)).unwrap();
    }
}

/// The problems of `r` after `f` breaks it, as text.
fn broken(f: impl FnOnce(&mut Results)) -> String {
    let mut r = fixture("sim-quickstart.json");
    f(&mut r);
    match validate(&r) {
        Ok(()) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn counts_that_do_not_add_up_are_named_with_their_value() {
    let e = broken(|r| r.stages[0].requests.failed += 7);
    assert!(e.contains("stages[0].requests.failed = "), "{e}");
    assert!(e.contains("≠ sent"), "{e}");
    assert!(e.contains("stages[0].requests.errors"), "{e}");
    let e = broken(|r| {
        let q = &mut r.stages[0].requests;
        q.errors.insert("timeout".into(), 3);
    });
    assert!(e.contains("do not sum to failed"), "{e}");
}

#[test]
fn a_count_near_two_to_the_sixty_four_cannot_wrap() {
    // ok + failed wraps to sent in u64 arithmetic: 2^64 - 1 + 2 = 1.
    let e = broken(|r| {
        let q = &mut r.stages[0].requests;
        q.sent = 1;
        q.ok = u64::MAX;
        q.failed = 2;
        q.errors.clear();
        q.errors.insert("timeout".into(), 2);
    });
    assert!(
        e.contains("stages[0].requests.ok = 18446744073709551615"),
        "{e}"
    );
    assert!(e.contains("≠ sent"), "{e}");
}

#[test]
fn ranges_and_shares_are_held() {
    let e = broken(|r| r.stages[0].throughput.goodput_ratio = 1.5);
    assert!(
        e.contains("stages[0].throughput.goodput_ratio = 1.5"),
        "{e}"
    );
    let e = broken(|r| r.stages[0].latency[LatencyMetric::Ttft].p50 = -3.0);
    assert!(e.contains("stages[0].latency.ttft_ms.p50 = -3"), "{e}");
    let e = broken(|r| r.stages[0].latency[LatencyMetric::E2e].p99 = 1e9);
    assert!(
        e.contains("stages[0].latency.e2e_ms.p99 = 1000000000: above p999"),
        "{e}"
    );
    let e = broken(|r| r.plan_hash = "<script>".into());
    assert!(e.contains("plan_hash = \"<script>\""), "{e}");
    let e = broken(|r| r.schema_version = 99);
    assert!(e.contains("schema_version = 99: unknown"), "{e}");
    let e = broken(|r| {
        r.passed = true;
        r.outcome = SlaOutcome::Fail;
    });
    assert!(e.contains("passed = true"), "{e}");
}

#[test]
fn a_truncated_or_miscounted_histogram_is_refused() {
    let e = broken(|r| {
        let h = r.stages[0].histograms.as_mut().unwrap();
        let text = h.get_mut(LatencyMetric::Ttft).unwrap();
        text.truncate(text.len() / 2);
    });
    assert!(e.contains("stages[0].histograms.ttft_ms = \""), "{e}");
    assert!(e.contains("does not decode"), "{e}");
    // A histogram from another stage: it decodes, but holds other samples than counted.
    let e = broken(|r| {
        let other = r.warmup.as_ref().unwrap().histograms.clone().unwrap();
        r.stages[0].histograms = Some(other);
    });
    assert!(e.contains("samples, its summary counts"), "{e}");
}

/// `r`'s first stage with latencies net of the client: its measured ones.
fn with_net(r: &mut Results) -> &mut crate::metrics::ClientNet {
    let s = &mut r.stages[0];
    let mut net = crate::metrics::ClientNet::default();
    for m in <crate::metrics::Net as crate::metrics::MetricSet>::metrics() {
        if let Some(d) = s.latency.get(m) {
            net.latency[m] = *d;
        }
    }
    s.client_net.insert(net)
}

#[test]
fn the_schema_three_figures_are_held_too() {
    let mut r = fixture("sim-quickstart.json");
    with_net(&mut r);
    validate(&r).unwrap();
    let e = broken(|r| {
        let ok = r.stages[0].requests.ok;
        with_net(r).latency[LatencyMetric::Ttft].count = ok + 1;
    });
    assert!(
        e.contains("stages[0].client_net.latency.ttft_ms.count"),
        "{e}"
    );
    let e = broken(|r| {
        r.stages[0].client.loop_delay_ms = Some(crate::metrics::LoopDelay {
            p50: 3.0,
            p99: 1.0,
            max: 4.0,
            samples: 10,
        });
        r.stages[0].client.others_percent = Some(-1.0);
    });
    assert!(e.contains("stages[0].client.loop_delay_ms.p99 = 1"), "{e}");
    assert!(e.contains("stages[0].client.others_percent = -1"), "{e}");
    let e = broken(|r| {
        r.sla[0].basis = Some(Basis::ClientMayHaveAdded {
            added_ms: -2.0,
            margin: f64::INFINITY,
        });
    });
    assert!(e.contains("sla[0].basis.added_ms = -2"), "{e}");
    assert!(e.contains("sla[0].basis.margin = inf"), "{e}");
}

/// A plausible window over the first stage of the quickstart result.
fn with_steady(r: &mut Results) -> &mut crate::metrics::SteadyState {
    let s = &mut r.stages[0];
    s.wall_time_s = s.wall_time_s.max(4.0);
    s.steady = Some(crate::metrics::SteadyState {
        from_s: 1.0,
        to_s: 3.0,
        ratio: 0.8,
        peak_in_flight: 4.0,
        mean_in_flight: 3.5,
        requests: crate::metrics::RequestCounts {
            sent: 2,
            ok: 2,
            ..Default::default()
        },
        latency: Default::default(),
        throughput: Default::default(),
    });
    s.steady.as_mut().unwrap()
}

#[test]
fn a_steady_window_outside_its_stage_or_miscounted_is_refused() {
    let mut r = fixture("sim-quickstart.json");
    with_steady(&mut r);
    validate(&r).unwrap();
    let e = broken(|r| with_steady(r).to_s = 0.5);
    assert!(
        e.contains("stages[0].steady.to_s = 0.5") && e.contains("not after"),
        "{e}"
    );
    let e = broken(|r| with_steady(r).to_s = 1e9);
    assert!(e.contains("after the stage's end"), "{e}");
    let e = broken(|r| with_steady(r).ratio = 1.5);
    assert!(e.contains("stages[0].steady.ratio = 1.5"), "{e}");
    let e = broken(|r| with_steady(r).requests.sent = u64::MAX / 2);
    assert!(e.contains("stages[0].steady.requests"), "{e}");
    let e = broken(|r| with_steady(r).latency[LatencyMetric::Ttft].count = 99);
    assert!(
        e.contains("stages[0].steady.latency.ttft_ms.count = 99"),
        "{e}"
    );
    let e = broken(|r| with_steady(r).mean_in_flight = -1.0);
    assert!(e.contains("stages[0].steady.mean_in_flight = -1"), "{e}");
}

#[test]
fn reasoning_counts_are_held() {
    let e = broken(|r| {
        let s = &mut r.stages[0];
        s.tokens.answer_starved = s.requests.ok + 1;
    });
    assert!(e.contains("stages[0].tokens.answer_starved"), "{e}");
    let e = broken(|r| {
        let t = &mut r.stages[0].tokens;
        t.reasoning = t.output + 1;
    });
    assert!(e.contains("more than the output tokens"), "{e}");
}

#[test]
fn labels_must_share_out_their_stage_and_be_nameable() {
    use crate::metrics::GroupSummary;
    use crate::protocol::Grouping;
    let split = |r: &mut Results, first: u64, label: &str| {
        let s = &mut r.stages[0];
        let mut a = s.clone();
        a.rounds.clear();
        a.groups.clear();
        a.requests.sent = first;
        let mut b = a.clone();
        b.requests.sent = s.requests.sent.saturating_sub(first);
        s.groups = vec![
            GroupSummary {
                by: Grouping::Model,
                label: label.into(),
                priority: None,
                summary: a,
            },
            GroupSummary {
                by: Grouping::Model,
                label: "other".into(),
                priority: None,
                summary: b,
            },
        ];
    };
    let mut r = fixture("sim-quickstart.json");
    split(&mut r, 1, "base");
    // The shares add up (each label's own counts are then checked as a stage's).
    let e = validate(&r)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(!e.contains("add up to"), "{e}");
    assert!(e.contains("stages[0].groups[0].summary.requests"), "{e}");
    let e = broken(|r| {
        split(r, 1, "base");
        r.stages[0].groups[1].summary.requests.sent += 5;
    });
    assert!(
        e.contains("stages[0].groups") && e.contains("add up to"),
        "{e}"
    );
    let e = broken(|r| split(r, 1, "<b>x</b>"));
    assert!(e.contains("stages[0].groups[0].label"), "{e}");
}

#[test]
fn payload_sums_past_any_run_are_refused() {
    let e = broken(|r| {
        let p = r.stages[0].payload.get_or_insert_with(Default::default);
        p.images = 2;
        p.image_pixels = u64::MAX;
        p.vision_images = 3;
    });
    assert!(
        e.contains("stages[0].payload.image_pixels = 18446744073709551615"),
        "{e}"
    );
    assert!(e.contains("stages[0].payload.vision_images = 3"), "{e}");
    let e = broken(|r| r.stages[0].tokens.inputs = u64::MAX);
    assert!(e.contains("stages[0].tokens.inputs"), "{e}");
}

#[test]
fn quality_counts_past_their_parts_are_refused() {
    let e = broken(|r| {
        r.stages[0].quality = Some(crate::metrics::Quality {
            scorer: Some("<b>x</b>".into()),
            checked: 10,
            scored: 11,
            correct: 12,
            accuracy: Some(1.5),
            agreement: Some(crate::metrics::AgreementTally {
                paired: 10,
                identical: 11,
                share: Some(1.1),
                ..Default::default()
            }),
            ..Default::default()
        });
    });
    for field in [
        "quality.scored = 11",
        "quality.correct = 12",
        "quality.accuracy",
        "quality.scorer",
        "quality.agreement.identical = 11",
        "quality.agreement.share",
    ] {
        assert!(e.contains(&format!("stages[0].{field}")), "{field}: {e}");
    }
}

#[test]
fn judge_figures_off_their_scale_or_sum_are_refused() {
    let e = broken(|r| {
        r.stages[0].quality = Some(crate::metrics::Quality {
            judge: Some(crate::metrics::JudgeTally {
                scale: 5,
                sampled: 3,
                counts: vec![1, 0, 0, 0, 2, 7],
                scored: 4,
                mean: Some(6.5),
                cost: Some(crate::metrics::JudgeCost {
                    total: -1.0,
                    currency: Some("U S\u{1b}D".into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    });
    for field in [
        "quality.judge.counts",
        "quality.judge.scored = 4",
        "quality.judge.mean",
        "quality.judge.cost.total",
        "quality.judge.cost.currency",
    ] {
        assert!(e.contains(&format!("stages[0].{field}")), "{field}: {e}");
    }
}

#[test]
fn speculative_figures_past_their_counts_are_refused() {
    let e = broken(|r| {
        r.stages[0].spec = Some(crate::metrics::DraftCounts {
            requests: u64::MAX,
            draft_tokens: 10,
            accepted_tokens: 11,
        });
        let spec = crate::telemetry::SpecStageSummary {
            source: crate::telemetry::SpecSource::Counters,
            drafts: Some(-1.0),
            draft_tokens: None,
            accepted_tokens: None,
            acceptance_rate: Some(1.5),
            acceptance_length: Some(0.5),
            acceptance_rate_per_position: vec![0.5, -0.1],
            counter_resets: 0,
            notes: Vec::new(),
        };
        let server = crate::telemetry::ServerStageSummary {
            spec: Some(spec),
            ..Default::default()
        };
        let stage = crate::telemetry::StageTelemetry {
            servers: vec![server],
            ..Default::default()
        };
        r.telemetry = Some(crate::telemetry::TelemetryReport {
            stages: vec![stage],
            ..Default::default()
        });
    });
    for field in [
        "stages[0].spec.requests",
        "stages[0].spec.accepted_tokens = 11",
        "servers[0].spec.drafts = -1",
        "servers[0].spec.acceptance_rate = 1.5",
        "servers[0].spec.acceptance_length = 0.5",
        "servers[0].spec.acceptance_rate_per_position[1]",
    ] {
        assert!(e.contains(field), "{field}: {e}");
    }
}
