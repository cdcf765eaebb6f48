//! An `until-decided` stage's final verdict where its whole confidence sequence is undecided:
//! the complete prefix's decision at the stop, read from the stage's record (so recomputed
//! from the file alone), with its rule saying so; and the validator's refusal of a file whose
//! verdict is not what its stage's prefix recorded.

use infermeter_core::metrics::{
    DecidedBy, GoodputSlo, LookOutcome, LookVerdict, PlannedLoad, PrefixLook, RequestRecord,
    StageAggregator, StageClock, StageSummary, UntilDecided, UntilStop, ValidityRules,
};
use infermeter_core::results::{RESULTS_SCHEMA_VERSION, Results, TargetInfo, validate};
use infermeter_core::sla::{
    Basis, Context, Policy, ScopedAssertion, SlaOutcome, SlaVerdict, Untrusted, judge, parse,
};

const MS: u64 = 1_000_000;
/// Undecided on the whole stage's sequence: 200 requests cannot bound a p95 this close.
const CLOSE: &str = "ttft.p95 < 99ms";
/// Plainly met on the whole stage.
const PLAIN: &str = "error_rate < 50%";

/// 200 requests every 50 ms, TTFTs spread over 60..100 ms, judged as an `until-decided`
/// stage that stopped at its 200 requests; `prefix` is what its last look recorded.
fn stage(prefix: Option<PrefixLook>) -> StageSummary {
    let mut agg = StageAggregator::new("main", PlannedLoad::default(), GoodputSlo::default());
    for i in 0..200u64 {
        let scheduled = i * 50 * MS;
        let first = scheduled + (60 + (i * 7) % 40) * MS;
        agg.record(&RequestRecord {
            index: i,
            scheduled_ns: scheduled,
            sent_ns: scheduled,
            first_token_ns: Some(first),
            first_answer_ns: Some(first),
            done_ns: first + 20 * MS,
            itl_us: vec![5_000; 4],
            chunks: 5,
            output_tokens: 5,
            input_tokens: 64,
            ..RequestRecord::default()
        });
    }
    let mut s = agg.finish(
        StageClock {
            wall_ns: 10_000 * MS,
            planned_span_ns: Some(199 * 50 * MS),
            cores: 2,
            ..StageClock::default()
        },
        &ValidityRules::default(),
    );
    s.until_decided = Some(UntilDecided {
        min_requests: Some(100),
        min_s: None,
        max_requests: Some(1000),
        max_s: None,
        tuned_for: 316,
        stopped: UntilStop::Decided,
        stopped_at_s: 9.0,
        stopped_at_requests: 180,
        looks: 9,
        pending: None,
        decided_by: Some(DecidedBy::Prefix),
        prefix,
    });
    s
}

fn look(expr: &str, outcome: LookOutcome) -> LookVerdict {
    LookVerdict {
        expr: expr.into(),
        outcome,
        observed: 97.0,
        low: Some(93.0),
        high: Some(98.5),
        confidence: 0.95,
    }
}

fn prefix(verdicts: Vec<LookVerdict>) -> Option<PrefixLook> {
    Some(PrefixLook {
        requests: 150,
        verdicts,
        stalled: false,
    })
}

fn verdicts(s: &StageSummary) -> Vec<SlaVerdict> {
    let cx = Context {
        policy: Policy {
            untrusted: Untrusted::Judge,
            ..Policy::default()
        },
        ..Context::default()
    };
    let a = [CLOSE, PLAIN].map(|e| ScopedAssertion::on(parse(e).unwrap(), "main"));
    judge(&a, std::slice::from_ref(s), &cx)
}

#[test]
fn the_prefix_decides_what_the_whole_stage_leaves_undecided() {
    let without = verdicts(&stage(None));
    assert_eq!(without[0].outcome, SlaOutcome::Inconclusive, "{without:?}");
    assert_eq!(without[1].outcome, SlaOutcome::Pass, "{without:?}");

    // The prefix passed the close one and (wrongly, say) failed the plain one: the close one
    // takes the prefix's decision; the plain one keeps the whole stage's.
    let s = stage(prefix(vec![
        look(CLOSE, LookOutcome::Pass),
        look(PLAIN, LookOutcome::Fail),
    ]));
    let v = verdicts(&s);
    assert_eq!(v[0].outcome, SlaOutcome::Pass, "{v:?}");
    assert!(v[0].passed);
    assert_eq!(v[0].basis, Some(Basis::Prefix { requests: 150 }));
    let i = v[0].interval.unwrap();
    assert_eq!((i.low, i.high, i.sequential), (93.0, 98.5, true));
    assert_eq!(v[0].observed, 97.0);
    assert!(v[0].more.is_none());
    let note = v[0].note.as_deref().unwrap();
    assert!(
        note.contains("decided on the first 150 requests in send order"),
        "{note}"
    );
    assert_eq!(v[1], without[1]);
    let json = serde_json::to_value(&v[0]).unwrap();
    assert_eq!(json["basis"]["rule"], "prefix");
    assert_eq!(json["basis"]["requests"], 150);

    // A failure too; an undecided prefix leaves it undecided.
    let v = verdicts(&stage(prefix(vec![look(CLOSE, LookOutcome::Fail)])));
    assert_eq!(v[0].outcome, SlaOutcome::Fail);
    let v = verdicts(&stage(prefix(vec![look(CLOSE, LookOutcome::Inconclusive)])));
    assert_eq!(v[0], without[0]);

    // On a stage found untrusted at its end (after the look), the prefix's decision may not
    // hold net of the client: the whole stage's verdict stands, whichever way the prefix went.
    for outcome in [LookOutcome::Fail, LookOutcome::Pass] {
        let mut s = stage(prefix(vec![look(CLOSE, outcome)]));
        s.validity.trusted = false;
        let v = verdicts(&s);
        assert_ne!(v[0].basis, Some(Basis::Prefix { requests: 150 }), "{v:?}");
        assert_ne!(v[0].outcome, SlaOutcome::Fail, "{v:?}");
    }
}

fn results(s: StageSummary) -> Results {
    let sla = verdicts(&s);
    let mut r = Results {
        schema_version: RESULTS_SCHEMA_VERSION,
        scenario: "t".into(),
        description: None,
        plan_hash: "0123456789abcdef".into(),
        seed: 1,
        passed: false,
        outcome: SlaOutcome::Pass,
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
        stages: Vec::new(),
        sla: Vec::new(),
        telemetry: None,
        provenance: None,
        configs: None,
        mlperf: None,
        shards: None,
    };
    r.stages = vec![s];
    r.sla = sla;
    r
}

fn problems(r: &Results) -> String {
    match validate(r) {
        Ok(()) => String::new(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_validator_holds_a_prefix_verdict_to_the_prefix_its_stage_recorded() {
    let good = results(stage(prefix(vec![look(CLOSE, LookOutcome::Pass)])));
    assert_eq!(problems(&good), "");

    let mut flipped = good.clone();
    flipped.sla[0].set_outcome(SlaOutcome::Fail);
    assert!(
        problems(&flipped).contains("sla[0].outcome"),
        "{}",
        problems(&flipped)
    );

    let mut longer = good.clone();
    longer.sla[0].basis = Some(Basis::Prefix { requests: 151 });
    assert!(
        problems(&longer).contains("sla[0].basis.requests"),
        "{}",
        problems(&longer)
    );

    let mut gone = good.clone();
    gone.stages[0].until_decided.as_mut().unwrap().prefix = None;
    assert!(
        problems(&gone).contains("no complete prefix"),
        "{}",
        problems(&gone)
    );

    let mut past = good.clone();
    let u = past.stages[0].until_decided.as_mut().unwrap();
    u.prefix.as_mut().unwrap().requests = 201;
    assert!(
        problems(&past).contains("stages[0].until_decided.prefix.requests"),
        "{}",
        problems(&past)
    );

    let mut stopped = good.clone();
    stopped.stages[0].until_decided.as_mut().unwrap().stopped = UntilStop::MaxReached;
    assert!(
        problems(&stopped).contains("until_decided.decided_by"),
        "{}",
        problems(&stopped)
    );

    let mut nan = good;
    let p = nan.stages[0]
        .until_decided
        .as_mut()
        .unwrap()
        .prefix
        .as_mut()
        .unwrap();
    p.verdicts[0].low = Some(99.0);
    assert!(problems(&nan).contains("above high"), "{}", problems(&nan));
}
