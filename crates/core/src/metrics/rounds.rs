//! A stage run in rounds: the same requests N times, one summary each, folded into one summary
//! whose figures are the medians across rounds (with intervals across rounds, which capture
//! run-to-run variance that one run's order statistics cannot), whose counts are sums and whose
//! histograms are the union (for distributions and `compare`). Each round stays in
//! `StageSummary::rounds`.

use hdrhistogram::Histogram;

use super::dist::Dist;
use super::intervals::median_of_rounds;
use super::{
    ClientHealth, LatencyMetric, RequestCounts, SendLag, StageHistograms, StageSummary, Throughput,
    Tokens, Validity,
};
use crate::stats::rounds_median;

/// Folds the rounds of one stage (at least one) into its summary.
pub fn merge_rounds(rounds: Vec<StageSummary>, confidence: f64) -> StageSummary {
    if rounds.len() <= 1 {
        return rounds.into_iter().next().unwrap_or_default();
    }
    let dists = |f: &dyn Fn(&StageSummary) -> Dist| -> Dist {
        let d: Vec<Dist> = rounds.iter().map(f).collect();
        median_of_rounds(&d, confidence)
    };
    let first = &rounds[0];
    let mut requests = RequestCounts::default();
    let mut tokens = Tokens::default();
    for r in &rounds {
        requests.sent += r.requests.sent;
        requests.ok += r.requests.ok;
        requests.failed += r.requests.failed;
        requests.retried += r.requests.retried;
        for (k, v) in &r.requests.errors {
            *requests.errors.entry(k.clone()).or_default() += v;
        }
        tokens.add(&r.tokens);
    }
    let latency = super::Latency::from_fn(|m| dists(&|r| r.latency[m]));
    let throughput = throughput(&rounds);
    let mut notes: Vec<String> = Vec::new();
    for n in rounds.iter().flat_map(|r| &r.notes) {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    let merged = StageSummary {
        name: first.name.clone(),
        planned: first.planned.clone(),
        wall_time_s: rounds.iter().map(|r| r.wall_time_s).sum(),
        requests,
        latency,
        tokens,
        throughput,
        client: client(&rounds),
        validity: validity(&rounds),
        timeline: timeline(&rounds),
        profile: first.profile.clone(),
        per_turn: first.per_turn.clone(),
        per_url: first.per_url.clone(),
        per_depth: first.per_depth.clone(),
        warmup_end: None,
        histograms: union(&rounds),
        notes,
        // Each round's own attribution stays in its summary below.
        attribution: None,
        spec: super::DraftCounts::sum(rounds.iter().map(|r| r.spec.as_ref())),
        aborted: rounds.iter().find_map(|r| r.aborted.clone()),
        client_net: client_net(&rounds, confidence),
        until_decided: first.until_decided.clone(),
        payload: super::Payload::sum(rounds.iter().map(|r| r.payload.as_ref())),
        quality: super::Quality::sum(rounds.iter().map(|r| r.quality.as_ref()), confidence),
        // Each round found its own window; it stays in the round's summary below.
        steady: None,
        groups: group_rounds(&rounds, confidence),
        priority: None,
        server: None,
        rounds: rounds
            .into_iter()
            .map(|r| StageSummary {
                histograms: None,
                client_net: r.client_net.map(|n| super::ClientNet {
                    histograms: None,
                    ..n
                }),
                timeline: Vec::new(),
                per_turn: Vec::new(),
                per_url: Vec::new(),
                per_depth: Vec::new(),
                ..r
            })
            .collect(),
    };
    finish(merged)
}

/// The median of each rate over the rounds.
fn throughput(rounds: &[StageSummary]) -> Throughput {
    let median = |f: &dyn Fn(&StageSummary) -> f64| median(rounds, f);
    let first = &rounds[0];
    Throughput {
        requests_per_s: median(&|r| r.throughput.requests_per_s),
        output_tokens_per_s: median(&|r| r.throughput.output_tokens_per_s),
        input_tokens_per_s: median(&|r| r.throughput.input_tokens_per_s),
        inputs_per_s: first
            .throughput
            .inputs_per_s
            .map(|_| median(&|r| r.throughput.inputs_per_s.unwrap_or(0.0))),
        goodput_per_s: median(&|r| r.throughput.goodput_per_s),
        goodput_ratio: median(&|r| r.throughput.goodput_ratio),
        achieved_rate_per_s: median(&|r| r.throughput.achieved_rate_per_s),
    }
}

/// The whole-answer mark, and the priority check on the merged labels (each round's labels
/// are in the labels' own merged summaries, so the rounds' copies drop them).
fn finish(mut merged: StageSummary) -> StageSummary {
    let whole = merged.rounds.iter().any(|r| r.latency.is_whole());
    merged.mark_answered_whole(whole);
    let gates = merged.rounds[0].priority.as_ref().is_some_and(|p| p.gates);
    merged.priority = super::priority_check(&merged.groups, merged.pooled(), gates);
    for r in &mut merged.rounds {
        r.groups.clear();
    }
    merged
}

/// Each label's summaries across rounds, merged as the stage's are (in the first round's
/// order of labels).
fn group_rounds(rounds: &[StageSummary], confidence: f64) -> Vec<super::GroupSummary> {
    rounds[0]
        .groups
        .iter()
        .map(|g| {
            let on = crate::protocol::LabelRef {
                by: g.by,
                name: g.label.clone(),
            };
            let parts: Vec<StageSummary> = rounds
                .iter()
                .filter_map(|r| r.group(&on).cloned())
                .collect();
            super::GroupSummary {
                by: g.by,
                label: g.label.clone(),
                priority: g.priority,
                summary: merge_rounds(parts, confidence),
            }
        })
        .collect()
}

/// The median of a figure across rounds.
fn median(rounds: &[StageSummary], f: &dyn Fn(&StageSummary) -> f64) -> f64 {
    let values: Vec<f64> = rounds.iter().map(f).collect();
    rounds_median(&values, 0.95)
        .ok()
        .flatten()
        .map_or(0.0, |r| r.median)
}

/// The client's health across rounds: medians of its rates, the worst of its peaks.
fn client(rounds: &[StageSummary]) -> ClientHealth {
    let median = |f: &dyn Fn(&StageSummary) -> f64| median(rounds, f);
    ClientHealth {
        send_lag_ms: SendLag {
            p50: median(&|r| r.client.send_lag_ms.p50),
            p99: median(&|r| r.client.send_lag_ms.p99),
            max: rounds
                .iter()
                .map(|r| r.client.send_lag_ms.max)
                .fold(0.0, f64::max),
        },
        cpu_percent: median(&|r| r.client.cpu_percent),
        cores: rounds[0].client.cores,
        peak_rss_mb: rounds
            .iter()
            .map(|r| r.client.peak_rss_mb)
            .fold(0.0, f64::max),
        steal_percent: rounds
            .iter()
            .filter_map(|r| r.client.steal_percent)
            .reduce(f64::max),
        peak_in_flight: rounds
            .iter()
            .map(|r| r.client.peak_in_flight)
            .max()
            .unwrap_or(0),
        poll_idle: rounds.iter().all(|r| r.client.poll_idle),
        loop_delay_ms: loop_delay(rounds),
        closed_loop_idle_percent: median_of(rounds, |r| r.client.closed_loop_idle_percent),
        cpus_busy_percent: median_of(rounds, |r| r.client.cpus_busy_percent),
        others_percent: median_of(rounds, |r| r.client.others_percent),
        involuntary_switches_per_s: median_of(rounds, |r| r.client.involuntary_switches_per_s),
        run_queue: median_of(rounds, |r| r.client.run_queue.map(|q| q.mean)).map(|mean| {
            super::RunQueue {
                mean,
                max: rounds
                    .iter()
                    .filter_map(|r| r.client.run_queue.map(|q| q.max))
                    .max()
                    .unwrap_or(0),
            }
        }),
    }
}

/// The median across rounds of a figure every round has; `None` when one lacks it.
fn median_of(rounds: &[StageSummary], f: impl Fn(&StageSummary) -> Option<f64>) -> Option<f64> {
    if rounds.iter().any(|r| f(r).is_none()) {
        return None;
    }
    Some(median(rounds, &|r| f(r).unwrap_or(0.0)))
}

/// The loop's delay across rounds: the medians of its p50 and p99, the worst maximum.
fn loop_delay(rounds: &[StageSummary]) -> Option<super::LoopDelay> {
    let delays: Option<Vec<super::LoopDelay>> =
        rounds.iter().map(|r| r.client.loop_delay_ms).collect();
    let delays = delays?;
    Some(super::LoopDelay {
        p50: median(rounds, &|r| r.client.loop_delay_ms.map_or(0.0, |d| d.p50)),
        p99: median(rounds, &|r| r.client.loop_delay_ms.map_or(0.0, |d| d.p99)),
        max: delays.iter().map(|d| d.max).fold(0.0, f64::max),
        samples: delays.iter().map(|d| d.samples).sum(),
    })
}

/// The net latencies across rounds: each figure the median of the rounds' (as `latency`),
/// the histograms the union; `None` when a round has none.
fn client_net(rounds: &[StageSummary], confidence: f64) -> Option<super::ClientNet> {
    let nets: Option<Vec<&super::ClientNet>> =
        rounds.iter().map(|r| r.client_net.as_ref()).collect();
    let nets = nets?;
    Some(super::ClientNet {
        latency: super::PerMetric::from_fn(|m| {
            let d: Vec<super::Dist> = nets.iter().map(|n| n.latency[m]).collect();
            median_of_rounds(&d, confidence)
        }),
        histograms: super::ClientNet::union(rounds.iter().map(|r| r.client_net.as_ref())).and_then(
            |h| {
                let ok = rounds.iter().map(|r| r.requests.ok).sum();
                super::ClientNet::from_histograms(&h, confidence, ok).histograms
            },
        ),
        // Rates across rounds are judged on the rounds' own (each keeps its bound).
        served_s: None,
    })
}

/// Trusted when every round is; every round's flags, with its number.
fn validity(rounds: &[StageSummary]) -> Validity {
    let mut validity = Validity::default();
    for (i, r) in rounds.iter().enumerate() {
        for flag in r.validity.typed_flags() {
            validity.push(super::Flag {
                round: Some(i as u32 + 1),
                ..flag
            });
        }
        validity.trusted &= r.validity.trusted;
    }
    validity
}

/// The rounds' timelines one after another, each shifted past the previous round's seconds.
fn timeline(rounds: &[StageSummary]) -> Vec<super::TimelinePoint> {
    let mut timeline = Vec::new();
    let mut offset = 0.0;
    for r in rounds {
        timeline.extend(r.timeline.iter().map(|p| super::TimelinePoint {
            t_s: p.t_s + offset,
            ..p.clone()
        }));
        offset += r.wall_time_s.ceil();
    }
    timeline
}

/// The rounds' histograms added together; `None` when a round has none.
fn union(rounds: &[StageSummary]) -> Option<StageHistograms> {
    StageHistograms::try_from_fn(|metric| added(rounds, metric).ok_or(())).ok()
}

/// The rounds' histograms of `metric` added together, encoded.
fn added(rounds: &[StageSummary], metric: LatencyMetric) -> Option<String> {
    let mut total: Option<Histogram<u64>> = None;
    for r in rounds {
        let h = r.histogram(metric)?.ok()?;
        match total.as_mut() {
            Some(t) => t.add(&h).ok()?,
            None => total = Some(h),
        }
    }
    crate::stats::hist::encode(&total?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{GoodputSlo, PlannedLoad, RequestRecord, StageAggregator, StageClock};

    fn round(ttft_ms: u64) -> StageSummary {
        let mut agg = StageAggregator::new("s", PlannedLoad::default(), GoodputSlo::default());
        for i in 0..50u64 {
            let first = (ttft_ms + i % 5) * 1_000_000;
            agg.record(&RequestRecord {
                index: i,
                sent_ns: 1,
                first_token_ns: Some(first),
                first_answer_ns: Some(first),
                done_ns: first + 2_000_000,
                itl_us: vec![2_000],
                chunks: 2,
                output_tokens: 2,
                input_tokens: 10,
                ..RequestRecord::default()
            });
        }
        let clock = StageClock {
            wall_ns: 1_000_000_000,
            ..StageClock::default()
        };
        agg.finish(clock, &crate::metrics::ValidityRules::default())
    }

    #[test]
    fn rounds_fold_into_medians_sums_and_a_union() {
        let merged = merge_rounds(vec![round(40), round(50), round(45)], 0.95);
        assert_eq!(merged.rounds.len(), 3);
        assert_eq!(merged.requests.sent, 150);
        let ttft = |s: &StageSummary| s.latency[LatencyMetric::Ttft];
        assert_eq!(ttft(&merged).count, 150);
        // The middle round's p50, not the pooled one.
        assert_eq!(ttft(&merged).p50, ttft(&round(45)).p50);
        let union = merged.histogram(LatencyMetric::Ttft).unwrap().unwrap();
        assert_eq!(union.len(), 150);
        assert!(merged.rounds.iter().all(|r| r.histograms.is_none()));
        let iv = ttft(&merged).intervals.unwrap();
        assert_eq!(iv.method, crate::metrics::IntervalMethod::Rounds);
    }

    #[test]
    fn one_round_is_itself() {
        let r = round(40);
        assert_eq!(merge_rounds(vec![r.clone()], 0.95), r);
    }
}
