//! SLA evaluation: stage scoping, units, empty metrics and baselines.

use infermeter_core::metrics::{Dist, LatencyMetric, StageSummary};
use infermeter_core::results::{RESULTS_SCHEMA_VERSION, Results, TargetInfo};
use infermeter_core::sla::{Assertion, ScopedAssertion, SlaOutcome, evaluate, parse};

fn dist(p95: f64) -> Dist {
    Dist {
        intervals: None,
        count: 100,
        p50: p95 / 2.0,
        p90: p95 * 0.9,
        p95,
        p99: p95 * 1.2,
        p999: p95 * 1.5,
        max: p95 * 2.0,
        min: 1.0,
        mean: p95 / 1.8,
    }
}

fn stage(name: &str, ttft_p95: f64, failed: u64) -> StageSummary {
    let mut s = StageSummary {
        name: name.into(),
        ..Default::default()
    };
    s.latency[LatencyMetric::Ttft] = dist(ttft_p95);
    s.latency[LatencyMetric::E2e] = dist(ttft_p95 * 10.0);
    s.requests.sent = 200;
    s.requests.ok = 200 - failed;
    s.requests.failed = failed;
    s.throughput.output_tokens_per_s = 2500.0;
    s.throughput.requests_per_s = 20.0;
    s.throughput.goodput_ratio = 0.97;
    s.client.send_lag_ms.p99 = 0.4;
    s
}

fn a(expr: &str) -> Assertion {
    parse(expr).unwrap()
}

fn results(stages: Vec<StageSummary>) -> Results {
    Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario: "t".into(),
        description: None,
        plan_hash: "h".into(),
        seed: 1,
        passed: true,
        outcome: infermeter_core::sla::SlaOutcome::Pass,
        sla_policy: Default::default(),
        compare_tolerances: Default::default(),
        interrupted: false,
        error: None,
        complete: true,
        infermeter_version: "0".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        target: TargetInfo {
            endpoint: "sim".into(),
            api: infermeter_core::protocol::Api::CHAT,
            stream: true,
            model: "m".into(),
            tokenizer: "cl100k_base".into(),
            cache_salt: None,
            routes: None,
            affinity_header: None,
            priority_header: None,
            network: None,
        },
        warmup: None,
        searches: Vec::new(),
        frontiers: Vec::new(),
        stages,
        sla: vec![],
        telemetry: None,
        provenance: None,
        configs: None,
        mlperf: None,
        shards: None,
    }
}

#[test]
fn scenario_level_assertions_give_one_verdict_per_stage() {
    let stages = [stage("low", 150.0, 0), stage("high", 260.0, 4)];
    let v = evaluate(
        &[ScopedAssertion::everywhere(a("ttft.p95 < 200ms"))],
        &stages,
        None,
    );
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].stage.as_deref(), Some("low"));
    assert!(v[0].passed);
    assert_eq!(v[0].observed, 150.0);
    assert_eq!(v[0].threshold, 200.0);
    assert_eq!(v[0].unit(), "ms");
    assert_eq!(v[1].stage.as_deref(), Some("high"));
    assert!(!v[1].passed);
    assert_eq!(v[1].observed, 260.0);
    assert!((v[1].relative_margin().unwrap() - 0.3).abs() < 1e-9);
}

#[test]
fn stage_scoped_assertions_only_see_their_stage() {
    let stages = [stage("low", 150.0, 0), stage("high", 260.0, 4)];
    let v = evaluate(
        &[
            ScopedAssertion::on(a("error_rate < 1%"), "high"),
            ScopedAssertion::on(a("ttft.p95 < 1s"), "missing"),
        ],
        &stages,
        None,
    );
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].stage.as_deref(), Some("high"));
    assert_eq!(v[0].observed, 2.0, "4 failed of 200 sent is 2 %");
    assert_eq!(v[0].unit(), "%");
    assert!(!v[0].passed);
    assert!(!v[1].passed);
    assert!(v[1].note.as_deref().unwrap().contains("did not run"));
}

#[test]
fn units_are_converted_before_comparing() {
    let stages = [stage("s", 150.0, 0)];
    let pass = |e: &str| evaluate(&[ScopedAssertion::everywhere(a(e))], &stages, None)[0].passed;
    assert!(pass("ttft.p95 < 0.2s"));
    assert!(!pass("ttft.p95 < 0.1s"));
    assert!(pass("ttft.p95 > 149000us"));
    assert!(pass("e2e.max <= 3s"), "max = 2 × 1500 ms");
    assert!(pass("ttft.p99.9 == 225ms"));
    assert!(pass("output_throughput > 2000 tok/s"));
    assert!(!pass("request_throughput >= 50 req/s"));
    assert!(pass("goodput > 90%"));
    assert!(!pass("goodput > 98%"));
    assert!(pass("send_lag.p99 < 1ms"));
    assert!(pass("error_rate == 0%"));
}

#[test]
fn a_metric_without_samples_fails_and_says_so() {
    let stages = [stage("s", 150.0, 0)];
    let v = evaluate(
        &[ScopedAssertion::everywhere(a("ttfa.p95 < 1s"))],
        &stages,
        None,
    );
    assert!(!v[0].passed);
    assert_eq!(v[0].observed, 0.0);
    assert!(v[0].note.as_deref().unwrap().contains("no ttfa samples"));

    let mut idle = stage("idle", 0.0, 0);
    idle.requests.sent = 0;
    let v = evaluate(
        &[ScopedAssertion::everywhere(a("error_rate < 1%"))],
        &[idle],
        None,
    );
    assert!(
        !v[0].passed,
        "an error rate over zero requests is not a pass"
    );
}

#[test]
fn baseline_thresholds_use_the_same_stage_of_the_baseline() {
    let base = results(vec![stage("low", 100.0, 0), stage("high", 200.0, 0)]);
    let stages = [stage("low", 105.0, 0), stage("high", 250.0, 0)];
    let v = evaluate(
        &[ScopedAssertion::everywhere(a("ttft.p95 < baseline * 1.10"))],
        &stages,
        Some(base.baseline()),
    );
    assert!(v[0].passed);
    assert!((v[0].threshold - 110.0).abs() < 1e-9);
    assert!(!v[1].passed);
    assert!((v[1].threshold - 220.0).abs() < 1e-9);

    let none = evaluate(
        &[ScopedAssertion::everywhere(a("ttft.p95 < baseline"))],
        &stages,
        None,
    );
    assert!(!none[0].passed);
    assert_eq!(none[0].outcome, SlaOutcome::Inconclusive);
    assert_eq!(
        none[0].note.as_deref(),
        Some("no baseline given, so the threshold is unknown")
    );

    // A stage the baseline lacks: undecided, saying so (not failed against a threshold of 0).
    let other = results(vec![stage("other", 1.0, 0)]);
    let v = evaluate(
        &[ScopedAssertion::everywhere(a("ttft.p95 < baseline"))],
        &stages,
        Some(other.baseline()),
    );
    assert_eq!(v[0].outcome, SlaOutcome::Inconclusive);
    let note = v[0].note.as_deref().unwrap();
    assert!(
        note.contains("the baseline has no stage `low` (it has `other`)"),
        "{note}"
    );
}

#[test]
fn a_stage_that_measured_nothing_fails_every_assertion_and_gets_an_implicit_one() {
    let mut dead = stage("dead", 0.0, 0);
    dead.requests.sent = 10;
    dead.requests.ok = 0;
    dead.requests.failed = 10;
    dead.requests.errors.insert("http_400".into(), 10);
    dead.validity.trusted = false;
    dead.validity.reasons.push("no request succeeded".into());
    let v = evaluate(
        &[ScopedAssertion::everywhere(a("error_rate < 100%"))],
        std::slice::from_ref(&dead),
        None,
    );
    // Untrusted would make it inconclusive; nothing measured makes it a failure.
    assert_eq!(v[0].outcome, SlaOutcome::Fail);
    assert!(v[0].note.as_deref().unwrap().contains("measured nothing"));
    let implicit = infermeter_core::sla::nothing_measured(std::slice::from_ref(&dead));
    assert_eq!(implicit.len(), 1);
    assert_eq!(
        implicit[0].assertion,
        parse(infermeter_core::sla::NOTHING_MEASURED).unwrap()
    );
    assert_eq!(implicit[0].outcome, SlaOutcome::Fail);
    assert!(
        implicit[0]
            .note
            .as_deref()
            .unwrap()
            .contains("http_400: 10")
    );
    assert!(infermeter_core::sla::nothing_measured(&[stage("fine", 1.0, 0)]).is_empty());
}

#[test]
fn an_sla_on_estimated_output_counts_says_so() {
    let mut s = stage("s", 10.0, 0);
    s.latency[LatencyMetric::Tpot] = s.latency[LatencyMetric::Ttft];
    s.tokens.estimated = 3;
    let v = evaluate(
        &[
            ScopedAssertion::everywhere(a("tpot.p95 < 1s")),
            ScopedAssertion::everywhere(a("ttft.p95 < 1s")),
        ],
        &[s],
        None,
    );
    assert!(v[0].note.as_deref().unwrap().contains("are estimates"));
    assert!(v[1].note.is_none(), "TTFT does not rest on token counts");
}

#[test]
fn an_untrusted_stage_is_inconclusive_unless_the_policy_judges_it() {
    use infermeter_core::sla::{Context, Policy, SlaOutcome, Untrusted, judge};
    let mut s = stage("s", 150.0, 0);
    s.validity.trusted = false;
    s.validity.reasons = vec!["send lag p99 3 ms exceeds 1 ms".into()];
    let a = [ScopedAssertion::everywhere(a("ttft.p95 < 1s"))];
    let v = &judge(&a, std::slice::from_ref(&s), &Context::default())[0];
    assert_eq!(v.outcome, SlaOutcome::Inconclusive);
    assert!(!v.passed);
    let note = v.note.as_deref().unwrap();
    assert!(
        note.contains("stage untrusted (other)") && note.contains("say pass"),
        "{note}"
    );
    let judged = Context {
        policy: Policy {
            untrusted: Untrusted::Judge,
            ..Policy::default()
        },
        ..Context::default()
    };
    assert_eq!(judge(&a, &[s], &judged)[0].outcome, SlaOutcome::Pass);
}

#[test]
fn the_gate_fails_on_a_failure_else_follows_the_policy_for_undecided_ones() {
    use infermeter_core::sla::{InconclusiveAs, SlaOutcome, SlaVerdict, gate};
    let v = |o: SlaOutcome| SlaVerdict {
        assertion: parse("error_rate < 1%").unwrap(),
        stage: None,
        observed: 0.0,
        threshold: 0.0,
        passed: o == SlaOutcome::Pass,
        outcome: o,
        interval: None,
        more: None,
        basis: None,
        note: None,
        gates: true,
        unobserved: false,
    };
    let (p, f, i) = (SlaOutcome::Pass, SlaOutcome::Fail, SlaOutcome::Inconclusive);
    let g = |vs: &[SlaOutcome], as_: InconclusiveAs| {
        gate(&vs.iter().map(|o| v(*o)).collect::<Vec<_>>(), as_).outcome
    };
    assert_eq!(g(&[p, p], InconclusiveAs::Inconclusive), p);
    assert_eq!(g(&[p, i], InconclusiveAs::Inconclusive), i);
    assert_eq!(
        g(&[f, i], InconclusiveAs::Pass),
        f,
        "a failure is never let through"
    );
    assert_eq!(g(&[p, i], InconclusiveAs::Pass), p);
    assert_eq!(g(&[p, i], InconclusiveAs::Fail), f);
    assert_eq!(g(&[], InconclusiveAs::Inconclusive), p);
}
