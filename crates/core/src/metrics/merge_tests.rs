//! Merging stage aggregators (`aggregate/merge.rs`): folding records into one aggregator and
//! folding any split of them into partials merged into one must give the same summary, every
//! field of `results.json` compared (issue #41, "a collector per core").

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;

use super::*;
use crate::metrics::{QualityMark, ServerTimings};
use crate::protocol::{Group, Grouping, Label};

/// Records in the test stage: 250 a second over 8 s.
const N: usize = 2_000;
const MS: u64 = 1_000_000;

/// The failures drawn: several kinds, client-side ones among them.
const ERRORS: [ErrorKind; 6] = [
    ErrorKind::Timeout,
    ErrorKind::Http(503),
    ErrorKind::Http(429),
    ErrorKind::StreamBroken,
    ErrorKind::Empty,
    ErrorKind::Cancelled,
];

/// What the answers' checks found, drawn.
fn quality(rng: &mut ChaCha8Rng) -> Option<QualityMark> {
    rng.random_bool(0.8).then(|| QualityMark {
        correct: rng.random_bool(0.7).then(|| rng.random_bool(0.6)),
        empty: rng.random_bool(0.05),
        cut: rng.random_bool(0.1),
        repetitive: rng.random_bool(0.05),
        refusal: rng.random_bool(0.03),
        off_band: rng.random_bool(0.5).then(|| rng.random_bool(0.2)),
        clipped: rng.random_bool(0.02),
        agrees: rng.random_bool(0.3).then(|| rng.random_bool(0.8)),
    })
}

/// llama.cpp's timings with draft counts, on some responses.
fn timings(rng: &mut ChaCha8Rng, out: u32) -> Option<ServerTimings> {
    rng.random_bool(0.6).then(|| {
        let draft = rng.random_range(0..200u64);
        ServerTimings {
            prompt_n: Some(rng.random_range(10..500)),
            prompt_ms: Some(rng.random_range(1.0..80.0)),
            predicted_n: Some(u64::from(out)),
            predicted_ms: Some(rng.random_range(5.0..900.0)),
            cache_n: Some(rng.random_range(0..100)),
            draft_n: Some(draft),
            draft_n_accepted: Some(rng.random_range(0..=draft + 5)),
        }
    })
}

/// A response's gaps between chunks (µs); one response in 20 is read in one burst (every gap
/// under 100 µs).
fn gaps(rng: &mut ChaCha8Rng) -> Vec<u32> {
    let burst = rng.random_bool(0.05);
    (0..rng.random_range(0..30))
        .map(|_| {
            if burst {
                rng.random_range(1..90)
            } else {
                rng.random_range(1_000..40_000)
            }
        })
        .collect()
}

/// One request of the stage, varied in every way the aggregator reads.
fn record(rng: &mut ChaCha8Rng, i: u64) -> RequestRecord {
    let scheduled = i * 4 * MS + rng.random_range(0..3 * MS);
    let lag = if rng.random_bool(0.05) {
        rng.random_range(0..40 * MS)
    } else {
        rng.random_range(0..200_000)
    };
    let sent = scheduled + lag;
    let first = sent + rng.random_range(5 * MS..300 * MS);
    let gaps = gaps(rng);
    let done = first + gaps.iter().map(|g| u64::from(*g) * 1_000).sum::<u64>() + 1;
    let out = gaps.len() as u32 + 1;
    let mut labels = crate::protocol::Labels::default();
    labels.set(Grouping::Model, rng.random_range(0..2));
    if rng.random_bool(0.9) {
        labels.set(Grouping::Class, rng.random_range(0..3));
    }
    let error = rng
        .random_bool(0.08)
        .then(|| ERRORS[rng.random_range(0..ERRORS.len())]);
    RequestRecord {
        index: i,
        turn: rng.random_range(0..5),
        depth: if rng.random_bool(0.15) {
            rng.random_range(1..4)
        } else {
            0
        },
        scheduled_ns: scheduled,
        sent_ns: sent,
        done_ns: if error.is_some() {
            sent + rng.random_range(MS..500 * MS)
        } else {
            done
        },
        first_token_ns: error.is_none().then_some(first),
        first_answer_ns: error
            .is_none()
            .then_some(first + rng.random_range(0..2 * MS)),
        chunks: out,
        itl_us: gaps,
        input_tokens: rng.random_range(50..2_000),
        output_tokens: out,
        planned_input_tokens: 40,
        planned_output_tokens: if rng.random_bool(0.9) { out } else { 64 },
        token_source: match rng.random_range(0..10) {
            0 => TokenSource::Tokenizer,
            1 => TokenSource::Tokenize,
            2 => TokenSource::Timings,
            _ => TokenSource::Usage,
        },
        token_mismatch: rng.random_bool(0.03),
        implausible_usage: rng.random_bool(0.02),
        retries: u32::from(rng.random_bool(0.03)),
        error,
        url: rng.random_bool(0.95).then(|| rng.random_range(0..3)),
        cached_tokens: rng.random_bool(0.7).then(|| rng.random_range(0..40)),
        task_ns: rng.random_bool(0.1).then(|| done - scheduled + 5 * MS),
        reasoning_tokens: rng.random_bool(0.3).then(|| rng.random_range(0..out)),
        server_timings: timings(rng, out),
        request_bytes: if rng.random_bool(0.9) {
            rng.random_range(200..90_000)
        } else {
            0
        },
        images: if rng.random_bool(0.1) { 2 } else { 0 },
        image_pixels: rng.random_range(0..1 << 20),
        image_bytes: rng.random_range(0..1 << 16),
        labels,
        tool_result: rng.random_bool(0.1),
        calls: if rng.random_bool(0.1) { 2 } else { 0 },
        quality: quality(rng),
        ..RequestRecord::default()
    }
}

/// The stage's records in the order they complete, as the collector folds them.
fn records() -> Vec<RequestRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let mut rs: Vec<RequestRecord> = (0..N as u64).map(|i| record(&mut rng, i)).collect();
    rs.sort_by_key(|r| r.done_ns);
    rs
}

fn label(name: &str, priority: Option<i64>) -> Label {
    Label {
        name: name.to_string(),
        weight: 1,
        priority,
        dataset: None,
    }
}

fn groups() -> Vec<Group> {
    vec![
        Group {
            by: Grouping::Model,
            labels: vec![label("base", None), label("lora", None)],
        },
        Group {
            by: Grouping::Class,
            labels: vec![
                label("chat", Some(0)),
                label("batch", Some(5)),
                label("bulk", Some(9)),
            ],
        },
    ]
}

/// The stage's aggregator, configured as a run's with every part switched on.
fn stage() -> StageAggregator {
    let slo = GoodputSlo {
        ttft_ns: Some(200 * MS),
        tpot_ns: Some(30 * MS),
        itl_ns: Some(35 * MS),
        e2e_ns: Some(900 * MS),
    };
    let facts = StageFacts {
        quality: Some(Some("exact")),
        ignore_eos: true,
        shares_prefixes: false,
        distinct_prompts: Some(500),
    };
    StageAggregator::new("merged", PlannedLoad::default(), slo)
        .with_facts(facts)
        .with_groups(&groups(), true)
}

/// How late the client read at an instant (ns): a bound, so that the net figures are kept.
fn read(at: u64) -> u64 {
    at % 700_000
}

fn fold<'a>(agg: &mut StageAggregator, rs: impl IntoIterator<Item = &'a RequestRecord>) {
    for r in rs {
        agg.record_with(r, Some(&read));
    }
}

fn clock() -> StageClock {
    StageClock {
        wall_ns: 9_000_000_000,
        planned_span_ns: Some(8_000_000_000),
        cpu_ns: 2_000_000_000,
        cores: 2,
        ..StageClock::default()
    }
}

/// What results.json and the live checks read of an aggregator: its snapshots and its
/// finished summary, as JSON.
fn written(agg: StageAggregator) -> [Value; 3] {
    let rules = ValidityRules::default();
    let json = |s: &StageSummary| serde_json::to_value(s).expect("a summary serializes");
    [
        json(&agg.snapshot(clock(), &rules)),
        json(&agg.snapshot_with_histograms(clock(), &rules)),
        json(&agg.finish(clock(), &rules)),
    ]
}

/// The first place two JSON values differ, as a path.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys = x.keys().chain(y.keys());
            keys.filter_map(|k| match (x.get(k), y.get(k)) {
                (Some(v), Some(w)) => first_difference(v, w, &format!("{path}.{k}")),
                _ => Some(format!("{path}.{k}: present on one side only")),
            })
            .next()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, &format!("{path}[{i}]"))),
        _ => (a != b).then(|| format!("{path}: {a} against {b}")),
    }
}

fn assert_same(single: &[Value; 3], merged: StageAggregator, split: &str) {
    let merged = written(merged);
    for (what, (a, b)) in ["snapshot", "snapshot_with_histograms", "finish"]
        .iter()
        .zip(single.iter().zip(&merged))
    {
        if let Some(d) = first_difference(a, b, what) {
            panic!("{split}: {d}");
        }
    }
}

/// The one aggregator's summary, checked to have every part the merge must carry.
fn single(rs: &[RequestRecord]) -> [Value; 3] {
    let mut agg = stage();
    fold(&mut agg, rs);
    let out = written(agg);
    let s = &out[2];
    for part in [
        "timeline",
        "per_turn",
        "per_url",
        "per_depth",
        "groups",
        "histograms",
        "attribution",
        "spec",
        "payload",
        "quality",
        "client_net",
        "steady",
        "priority",
    ] {
        assert!(!s[part].is_null(), "the stage has no {part}");
    }
    assert!(s["timeline"].as_array().expect("points").len() >= 8);
    assert!(s["requests"]["errors"].as_object().expect("errors").len() >= 5);
    assert!(s["notes"].to_string().contains("burst"), "{}", s["notes"]);
    out
}

/// Folds the records split by `shard` (record index to partial) into that many partials made
/// by `empty_like`, merged into a fresh stage aggregator in order.
fn split(rs: &[RequestRecord], parts: usize, shard: impl Fn(usize) -> usize) -> StageAggregator {
    let mut main = stage();
    let mut partials: Vec<StageAggregator> = (0..parts).map(|_| main.empty_like()).collect();
    for (i, r) in rs.iter().enumerate() {
        partials[shard(i)].record_with(r, Some(&read));
    }
    for p in partials {
        main.merge(p);
    }
    main
}

#[test]
fn any_split_merges_to_the_single_aggregators_summary() {
    let rs = records();
    let want = single(&rs);
    assert_same(&want, split(&rs, 2, |i| i % 2), "round-robin, 2");
    assert_same(&want, split(&rs, 3, |i| i % 3), "round-robin, 3");
    assert_same(&want, split(&rs, 2, |i| usize::from(i >= N / 2)), "halves");
    assert_same(
        &want,
        split(&rs, 2, |i| usize::from(i < 1_300)),
        "halves, later first",
    );
    assert_same(&want, split(&rs, 2, |_| 0), "one partial empty");
    assert_same(&want, split(&rs, 2, |_| 1), "the other one empty");
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let draws: Vec<usize> = (0..N)
        .map(|_| match rng.random_range(0..10) {
            0 => 0,
            1..4 => 1,
            _ => 2,
        })
        .collect();
    assert_same(&want, split(&rs, 3, |i| draws[i]), "random, uneven");
}

#[test]
fn partials_taken_in_as_the_collector_does_merge_exactly() {
    let rs = records();
    let want = single(&rs);

    // One shard hands over a fresh partial every 37 records.
    let mut main = stage();
    for chunk in rs.chunks(37) {
        let mut p = main.empty_like();
        fold(&mut p, chunk);
        main.merge(p);
    }
    assert_same(&want, main, "every 37 records");

    // The stage folds some records itself first, then takes partials in.
    let mut main = stage();
    fold(&mut main, &rs[..500]);
    for chunk in rs[500..].chunks(37) {
        let mut p = main.empty_like();
        fold(&mut p, chunk);
        main.merge(p);
    }
    assert_same(&want, main, "records, then partials");

    // Three shards fold the records dealt to them; each hands its partial over after 37 of
    // its own, so the stage takes the shards' seconds in interleaved.
    let mut main = stage();
    let mut shards: Vec<(StageAggregator, usize)> =
        (0..3).map(|_| (main.empty_like(), 0)).collect();
    for (i, r) in rs.iter().enumerate() {
        let (p, n) = &mut shards[(i * 7 / 3) % 3];
        p.record_with(r, Some(&read));
        *n += 1;
        if *n == 37 {
            let full = std::mem::replace(p, main.empty_like());
            *n = 0;
            main.merge(full);
        }
    }
    for (p, _) in shards {
        main.merge(p);
    }
    assert_same(&want, main, "three shards, partials interleaved");

    // Partials merged into a partial first, then into the stage.
    let mut main = stage();
    let mut outer = main.empty_like();
    for chunk in rs.chunks(401) {
        let mut p = outer.empty_like();
        fold(&mut p, chunk);
        outer.merge(p);
    }
    main.merge(outer);
    assert_same(&want, main, "partials of a partial");
}

#[test]
fn steady_slices_widened_at_different_times_merge_to_the_same_width() {
    let rs = records();
    // 16 slices at most: the single aggregator doubles twice over 8 s, a partial holding
    // only the first second's records never.
    let narrow = |mut agg: StageAggregator| {
        agg.steady = super::super::steady_slices::SteadySlices::with_limits(16, usize::MAX);
        agg
    };
    let mut one = narrow(stage());
    fold(&mut one, &rs);
    let width = one.steady.width_ns();
    let want = written(one);
    let mut main = narrow(stage());
    let mut early = main.empty_like();
    let mut late = main.empty_like();
    fold(&mut early, rs.iter().filter(|r| r.done_ns < 1_000_000_000));
    fold(&mut late, rs.iter().filter(|r| r.done_ns >= 1_000_000_000));
    assert!(early.steady.width_ns() < late.steady.width_ns());
    main.merge(early);
    main.merge(late);
    assert_eq!(main.steady.width_ns(), width);
    assert_same(&want, main, "slices of two widths");
}

#[test]
fn an_empty_like_aggregator_is_configured_as_its_model() {
    let fresh = written(stage());
    let copy = stage().empty_like();
    assert_eq!(written(copy), fresh);
    let mut main = stage();
    main.merge(stage().empty_like());
    assert_eq!(written(main), fresh, "merging nothing changes nothing");
}

/// A partial made otherwise than the stage's aggregator: the stage's configuration stands,
/// every record counts in its totals, and the rows of a group it lacks are left out.
#[test]
fn a_partial_configured_otherwise_keeps_the_stages_configuration() {
    let rs = records();
    let (a, b) = rs.split_at(N / 2);
    let mut main = stage();
    fold(&mut main, a);
    let mut other = StageAggregator::new("other", PlannedLoad::default(), GoodputSlo::default())
        .with_groups(&groups()[..1], false);
    fold(&mut other, b);
    let mut only_a = stage();
    fold(&mut only_a, a);
    main.merge(other);
    let rules = ValidityRules::default();
    let s = main.finish(clock(), &rules);
    let only_a = only_a.finish(clock(), &rules);
    assert_eq!(s.name, "merged");
    assert_eq!(s.requests.sent, N as u64);
    // The model group is the same group: it took the other half in; the class group is not.
    let sent = |s: &StageSummary, by: Grouping| -> u64 {
        s.groups
            .iter()
            .filter(|g| g.by == by)
            .map(|g| g.summary.requests.sent)
            .sum()
    };
    assert_eq!(sent(&s, Grouping::Model), N as u64);
    assert_eq!(sent(&s, Grouping::Class), sent(&only_a, Grouping::Class));
    // The other kept no quality tally: the stage's is its own half's.
    assert_eq!(s.quality, only_a.quality);
}

/// A merged timeline keeps a second's percentiles open for `timeline::MERGE_OPEN_S` seconds
/// behind the newest: a partial's requests completed earlier still count in their second, but
/// not in its percentiles, as a straggler does in one aggregator.
#[test]
fn a_partial_far_behind_the_newest_second_counts_as_stragglers() {
    let ok = |done_s: u64| RequestRecord {
        scheduled_ns: done_s * 1_000_000_000,
        sent_ns: done_s * 1_000_000_000,
        done_ns: done_s * 1_000_000_000 + 50 * MS,
        first_token_ns: Some(done_s * 1_000_000_000 + 20 * MS),
        output_tokens: 1,
        ..RequestRecord::default()
    };
    let lag = super::super::timeline::MERGE_OPEN_S as u64;
    let mut main = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
    for done_s in [lag + 5, 4, 5] {
        let mut p = main.empty_like();
        p.record(&ok(done_s));
        main.merge(p);
    }
    let s = main.finish(clock(), &ValidityRules::default());
    let point = |t: usize| (s.timeline[t].completed, s.timeline[t].ttft_p50_ms);
    assert_eq!(point(4), (1, 0.0), "more than the lag behind: a straggler");
    assert_eq!(point(5).0, 1);
    assert!(
        (point(5).1 - 20.0).abs() < 0.2,
        "within it: in the percentiles"
    );
    assert!((point(lag as usize + 5).1 - 20.0).abs() < 0.2);
}
