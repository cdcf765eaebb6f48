//! One stage of several shards → one summary: histograms added (exact: HDR buckets are
//! counts), counts and tokens summed, rates over the union of the shards' wall windows, every
//! shard's validity carried with its index, and the start skew and missing shards flagged.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::error::StageMergeError;
use crate::metrics::HistogramCodec;
use crate::metrics::{
    ClientHealth, ClientNet, Flag, FlagKind, LatencyMetric, Payload, PerMetric, RequestCounts,
    SendLag, StageHistograms, StageSummary, Throughput, TimelinePoint, Tokens, TurnHistograms,
    TurnSummary, Validity, dist, metric_dist,
};
use crate::results::ShardStart;

/// One shard's summary of the stage, with how its start went when it was coordinated.
pub(super) struct Part<'a> {
    pub index: u32,
    pub summary: &'a StageSummary,
    pub start: Option<&'a ShardStart>,
    pub coordinated: bool,
}

/// What a stage's merge is judged against.
pub(super) struct Rules<'a> {
    pub confidence: f64,
    pub max_skew_ms: f64,
    /// Shards whose result never came.
    pub missing: &'a [u32],
    /// Shards whose result came but has no such stage (they stopped before it).
    pub absent: Vec<u32>,
    pub count: u32,
}

/// Every latency metric's histogram, the shards' added together.
type Added = [Histogram<u64>; LatencyMetric::COUNT];

/// Merges `parts` (at least one); an error names a shard whose histograms cannot be read.
pub(super) fn merge_stage(
    parts: &[Part<'_>],
    rules: &Rules<'_>,
) -> Result<StageSummary, StageMergeError> {
    let first = parts[0].summary;
    let hists = added(parts)?;
    let (requests, tokens, good) = counts(parts)?;
    let requests_ok = requests.ok;
    let (lo_ms, wall_s) = window(parts);
    let throughput = throughput(parts, &requests, &tokens, good, wall_s);
    let client = client(parts, &hists[LatencyMetric::SendLag as usize]);
    let latency =
        PerMetric::from_fn(|m| metric_dist(m, &hists[m as usize], rules.confidence, requests.ok));
    let histograms = StageHistograms::encode(|m| &hists[m as usize]).map_err(|source| {
        StageMergeError::Encode {
            stage: first.name.clone(),
            source,
        }
    })?;
    let mut merged = StageSummary {
        name: first.name.clone(),
        planned: first.planned.clone(),
        wall_time_s: wall_s,
        requests,
        latency,
        tokens,
        throughput,
        client,
        validity: validity(parts, rules),
        timeline: timeline(parts, lo_ms),
        profile: first.profile.clone(),
        per_turn: per_turn(parts)?,
        per_url: super::slices::per_url(&shards(parts))?,
        per_depth: super::slices::per_depth(&shards(parts))?,
        warmup_end: first.warmup_end.clone(),
        histograms: Some(histograms),
        rounds: Vec::new(),
        notes: notes(parts),
        // A shard's attribution is its own requests' server timings beside its own client
        // figures; they are not kept whole, so the merge leaves it to each shard's result.
        attribution: None,
        spec: crate::metrics::DraftCounts::sum(parts.iter().map(|p| p.summary.spec.as_ref())),
        aborted: parts.iter().find_map(|p| p.summary.aborted.clone()),
        // Each request's net values are its own shard's, so they add as histograms do.
        client_net: ClientNet::union(parts.iter().map(|p| p.summary.client_net.as_ref()))
            .map(|h| ClientNet::from_histograms(&h, rules.confidence, requests_ok)),
        // A sharded stage cannot stop on its own numbers: `shard::slice` refuses the rule.
        until_decided: None,
        payload: Payload::sum(parts.iter().map(|p| p.summary.payload.as_ref())),
        quality: crate::metrics::Quality::sum(
            parts.iter().map(|p| p.summary.quality.as_ref()),
            rules.confidence,
        ),
        // Each shard found its own window from its own share of the load; the union of their
        // requests is not kept, so the merged stage has none (docs/metrics.md).
        steady: None,
        groups: groups(parts, rules)?,
        priority: None,
        server: None,
    };
    let gates = first.priority.as_ref().is_some_and(|p| p.gates);
    merged.priority = crate::metrics::priority_check(&merged.groups, merged.pooled(), gates);
    if let Some(mut point) = merged.profile.take() {
        point.assess(&merged);
        merged.profile = Some(point);
    }
    merged.mark_answered_whole(parts.iter().any(|p| p.summary.latency.is_whole()));
    Ok(merged)
}

/// Each label's summaries of the shards, merged as the stage's are: every shard draws the same
/// labels for the same request indices, so a label's requests are split between shards as
/// the stage's are.
fn groups(
    parts: &[Part<'_>],
    rules: &Rules<'_>,
) -> Result<Vec<crate::metrics::GroupSummary>, StageMergeError> {
    let mut out = Vec::new();
    for g in &parts[0].summary.groups {
        let on = crate::protocol::LabelRef {
            by: g.by,
            name: g.label.clone(),
        };
        let mine: Vec<Part<'_>> = parts
            .iter()
            .filter_map(|p| {
                Some(Part {
                    index: p.index,
                    summary: p.summary.group(&on)?,
                    start: p.start,
                    coordinated: p.coordinated,
                })
            })
            .collect();
        out.push(crate::metrics::GroupSummary {
            by: g.by,
            label: g.label.clone(),
            priority: g.priority,
            summary: merge_stage(&mine, rules)?,
        });
    }
    Ok(out)
}

/// The shards' histograms of every latency metric, added (exact: HDR buckets are counts).
fn added(parts: &[Part<'_>]) -> Result<Added, StageMergeError> {
    let mut hists: Added = std::array::from_fn(|_| empty());
    for metric in LatencyMetric::ALL {
        let mut total: Option<Histogram<u64>> = None;
        for p in parts {
            let h = decode(p, metric)?;
            match total.as_mut() {
                Some(t) => t.add(&h).map_err(|source| StageMergeError::Add {
                    shard: p.index,
                    key: metric.key(),
                    source,
                })?,
                None => total = Some(h),
            }
        }
        if let Some(total) = total {
            hists[metric as usize] = total;
        }
    }
    Ok(hists)
}

/// The shards' request counts and tokens summed, and their good requests; checked, so counts
/// near 2^64 are refused rather than wrapped.
fn counts(parts: &[Part<'_>]) -> Result<(RequestCounts, Tokens, u64), StageMergeError> {
    let mut requests = RequestCounts::default();
    let mut tokens = Tokens::default();
    let mut good = 0u64;
    for p in parts {
        let s = p.summary;
        let overflow = |field: &str| StageMergeError::Overflow {
            stage: s.name.clone(),
            field: field.to_string(),
        };
        let add = |total: &mut u64, n: u64, field: &str| -> Result<(), StageMergeError> {
            *total = total.checked_add(n).ok_or_else(|| overflow(field))?;
            Ok(())
        };
        add(&mut requests.sent, s.requests.sent, "requests.sent")?;
        add(&mut requests.ok, s.requests.ok, "requests.ok")?;
        add(&mut requests.failed, s.requests.failed, "requests.failed")?;
        for (k, v) in &s.requests.errors {
            add(
                requests.errors.entry(k.clone()).or_default(),
                *v,
                "requests.errors",
            )?;
        }
        add(&mut tokens.input, s.tokens.input, "tokens.input")?;
        add(&mut tokens.output, s.tokens.output, "tokens.output")?;
        add(&mut tokens.inputs, s.tokens.inputs, "tokens.inputs")?;
        add(
            &mut tokens.from_usage,
            s.tokens.from_usage,
            "tokens.from_usage",
        )?;
        add(
            &mut tokens.from_tokenizer,
            s.tokens.from_tokenizer,
            "tokens.from_tokenizer",
        )?;
        add(
            &mut tokens.mismatched,
            s.tokens.mismatched,
            "tokens.mismatched",
        )?;
        // Where the output counts came from: a merged stage keeps saying which are estimates.
        for (total, n, field) in [
            (
                &mut tokens.from_timings,
                s.tokens.from_timings,
                "tokens.from_timings",
            ),
            (
                &mut tokens.from_tokenize,
                s.tokens.from_tokenize,
                "tokens.from_tokenize",
            ),
            (
                &mut tokens.estimated,
                s.tokens.estimated,
                "tokens.estimated",
            ),
            (
                &mut tokens.tpot_estimated,
                s.tokens.tpot_estimated,
                "tokens.tpot_estimated",
            ),
        ] {
            add(total, n, field)?;
        }
        // The ratio was computed from these integers, so this recovers them exactly.
        let shard_good = (s.throughput.goodput_ratio * s.requests.sent as f64).round() as u64;
        add(&mut good, shard_good, "throughput.goodput_ratio")?;
    }
    Ok((requests, tokens, good))
}

/// The union of the shards' windows, on the agreed timeline when every start is known: its
/// start (ms on that timeline) and length (s).
fn window(parts: &[Part<'_>]) -> (f64, f64) {
    let starts: Option<Vec<f64>> = parts.iter().map(|p| p.start.map(|s| s.offset_ms)).collect();
    match &starts {
        Some(offsets) => {
            let lo = offsets.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = parts
                .iter()
                .zip(offsets)
                .map(|(p, o)| o + p.summary.wall_time_s * 1e3)
                .fold(f64::NEG_INFINITY, f64::max);
            (lo, ((hi - lo) / 1e3).max(0.0))
        }
        None => (
            0.0,
            parts
                .iter()
                .map(|p| p.summary.wall_time_s)
                .fold(0.0, f64::max),
        ),
    }
}

fn throughput(
    parts: &[Part<'_>],
    requests: &RequestCounts,
    tokens: &Tokens,
    good: u64,
    wall_s: f64,
) -> Throughput {
    let per_s = |n: u64| n as f64 / wall_s.max(1e-9);
    Throughput {
        requests_per_s: per_s(requests.ok),
        output_tokens_per_s: per_s(tokens.output),
        input_tokens_per_s: per_s(tokens.input),
        inputs_per_s: parts
            .iter()
            .any(|p| p.summary.throughput.inputs_per_s.is_some())
            .then(|| per_s(tokens.inputs)),
        goodput_per_s: per_s(good),
        goodput_ratio: if requests.sent == 0 {
            0.0
        } else {
            good as f64 / requests.sent as f64
        },
        achieved_rate_per_s: parts
            .iter()
            .map(|p| p.summary.throughput.achieved_rate_per_s)
            .sum(),
    }
}

/// The client's health: the merged send lag, the busiest shard's CPU, the highest peaks.
fn client(parts: &[Part<'_>], send_lag: &Histogram<u64>) -> ClientHealth {
    let lag = dist(send_lag);
    let first = &parts[0].summary.client;
    let busiest = parts
        .iter()
        .map(|p| &p.summary.client)
        .max_by(|a, b| a.cpu_percent.total_cmp(&b.cpu_percent))
        .unwrap_or(first);
    ClientHealth {
        send_lag_ms: SendLag {
            p50: lag.p50,
            p99: lag.p99,
            max: lag.max,
        },
        cpu_percent: busiest.cpu_percent,
        cores: busiest.cores,
        peak_rss_mb: parts
            .iter()
            .map(|p| p.summary.client.peak_rss_mb)
            .fold(0.0, f64::max),
        steal_percent: parts
            .iter()
            .filter_map(|p| p.summary.client.steal_percent)
            .reduce(f64::max),
        peak_in_flight: parts.iter().map(|p| p.summary.client.peak_in_flight).sum(),
        poll_idle: parts.iter().all(|p| p.summary.client.poll_idle),
        // The busiest shard's machine, as for its CPU; the worst loop delay of any shard.
        loop_delay_ms: parts
            .iter()
            .filter_map(|p| p.summary.client.loop_delay_ms)
            .max_by(|a, b| a.max.total_cmp(&b.max)),
        // The idlest shard's clients: what the merged load may have lacked at most.
        closed_loop_idle_percent: parts
            .iter()
            .filter_map(|p| p.summary.client.closed_loop_idle_percent)
            .reduce(f64::max),
        cpus_busy_percent: busiest.cpus_busy_percent,
        others_percent: busiest.others_percent,
        involuntary_switches_per_s: busiest.involuntary_switches_per_s,
        run_queue: busiest.run_queue,
    }
}

/// Every shard's notes once each (the same note from every shard is one note).
fn notes(parts: &[Part<'_>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in parts.iter().flat_map(|p| &p.summary.notes) {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// Each part's shard index and summary (what the slices' merge reads).
fn shards<'a>(parts: &[Part<'a>]) -> Vec<super::slices::Shard<'a>> {
    parts.iter().map(|p| (p.index, p.summary)).collect()
}

fn empty() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 86_400_000_000, 3).expect("valid histogram bounds")
}

fn decode(p: &Part<'_>, metric: LatencyMetric) -> Result<Histogram<u64>, StageMergeError> {
    match p.summary.histogram(metric) {
        Some(Ok(h)) => Ok(h),
        Some(Err(source)) => Err(StageMergeError::Unreadable {
            shard: p.index,
            stage: p.summary.name.clone(),
            key: metric.key(),
            source,
        }),
        None => Err(StageMergeError::NoHistograms {
            shard: p.index,
            stage: p.summary.name.clone(),
        }),
    }
}

/// Every shard's flags, by shard; then the skew, coordination and completeness of the set.
fn validity(parts: &[Part<'_>], rules: &Rules<'_>) -> Validity {
    let mut validity = Validity::default();
    for p in parts {
        let shard = Some(p.index);
        for flag in p.summary.validity.typed_flags() {
            validity.push(Flag { shard, ..flag });
        }
        let kind = match p.start {
            Some(s) if s.skew_bound_ms() > rules.max_skew_ms => Some(FlagKind::ShardSkew {
                offset_ms: s.offset_ms,
                clock_error_ms: s.clock_error_ms,
                max_skew_ms: rules.max_skew_ms,
            }),
            Some(_) => None,
            None if !p.coordinated => Some(FlagKind::Uncoordinated),
            None => Some(FlagKind::NoAgreedStart),
        };
        if let Some(kind) = kind {
            validity.push(Flag {
                shard,
                ..kind.into()
            });
        }
    }
    let lost: Vec<u32> = rules.missing.iter().chain(&rules.absent).copied().collect();
    if !lost.is_empty() {
        validity.push(
            FlagKind::ShardsMissing {
                shards: lost,
                of: rules.count,
            }
            .into(),
        );
    }
    validity
}

/// Per-second points on the union window: counts summed; each second's percentiles are the
/// highest of the shards' (per-second histograms are not kept, so they cannot be merged).
fn timeline(parts: &[Part<'_>], lo_ms: f64) -> Vec<TimelinePoint> {
    let mut out: Vec<TimelinePoint> = Vec::new();
    for p in parts {
        let shift = p.start.map_or(0, |s| {
            ((s.offset_ms - lo_ms) / 1e3).round().max(0.0) as usize
        });
        for (i, point) in p.summary.timeline.iter().enumerate() {
            let k = i + shift;
            if out.len() <= k {
                out.resize_with(k + 1, TimelinePoint::default);
            }
            let o = &mut out[k];
            // A plot's points: saturate rather than fail the merge.
            o.sent = o.sent.saturating_add(point.sent);
            o.completed = o.completed.saturating_add(point.completed);
            o.failed = o.failed.saturating_add(point.failed);
            o.output_tokens = o.output_tokens.saturating_add(point.output_tokens);
            o.in_flight += point.in_flight;
            o.ttft_p50_ms = o.ttft_p50_ms.max(point.ttft_p50_ms);
            o.e2e_p99_ms = o.e2e_p99_ms.max(point.e2e_p99_ms);
        }
    }
    for (i, o) in out.iter_mut().enumerate() {
        o.t_s = i as f64;
    }
    out
}

/// One turn index being merged: its counts, its input tokens, its histograms and its cached
/// tokens (when any shard's responses said) so far.
type TurnAcc = (TurnSummary, f64, Added, Option<f64>);

/// Sessions' turn indices, merged like the stage: histograms added, counts summed.
fn per_turn(parts: &[Part<'_>]) -> Result<Vec<TurnSummary>, StageMergeError> {
    let mut turns: BTreeMap<u32, TurnAcc> = BTreeMap::new();
    for p in parts {
        for t in &p.summary.per_turn {
            let entry = turns.entry(t.turn).or_insert_with(|| {
                let blank = TurnSummary {
                    turn: t.turn,
                    ..TurnSummary::default()
                };
                (blank, 0.0, std::array::from_fn(|_| empty()), None)
            });
            let overflow = || StageMergeError::Overflow {
                stage: p.summary.name.clone(),
                field: format!("per_turn[{}] counts", t.turn),
            };
            let sum = |a: u64, b: u64| a.checked_add(b).ok_or_else(overflow);
            entry.0.sent = sum(entry.0.sent, t.sent)?;
            entry.0.ok = sum(entry.0.ok, t.ok)?;
            entry.0.failed = sum(entry.0.failed, t.failed)?;
            let input = t.mean_input_tokens * t.ok as f64;
            entry.1 += input;
            if let Some(share) = t.cached_share {
                entry.3 = Some(entry.3.unwrap_or(0.0) + share * input);
            }
            // Summed weighted by the shard's ok requests here, divided by them all below.
            let weighted = |sum: Option<f64>, mean: Option<f64>| match mean {
                Some(m) => Some(sum.unwrap_or(0.0) + m * t.ok as f64),
                None => sum,
            };
            entry.0.mean_request_bytes = weighted(entry.0.mean_request_bytes, t.mean_request_bytes);
            entry.0.mean_sent_input_tokens =
                weighted(entry.0.mean_sent_input_tokens, t.mean_sent_input_tokens);
            for (m, _) in t.latency.iter() {
                let h = match t.histogram(m) {
                    Some(Ok(h)) => h,
                    _ => {
                        return Err(StageMergeError::TurnUnreadable {
                            shard: p.index,
                            stage: p.summary.name.clone(),
                            turn: t.turn,
                        });
                    }
                };
                entry.2[m as usize]
                    .add(&h)
                    .map_err(|source| StageMergeError::TurnAdd {
                        turn: t.turn,
                        source,
                    })?;
            }
        }
    }
    Ok(turns
        .into_values()
        .map(|(mut t, input, hists, cached)| {
            t.mean_input_tokens = if t.ok == 0 { 0.0 } else { input / t.ok as f64 };
            let ok = t.ok.max(1) as f64;
            t.mean_request_bytes = t.mean_request_bytes.map(|sum| sum / ok);
            t.mean_sent_input_tokens = t.mean_sent_input_tokens.map(|sum| sum / ok);
            t.cached_share = cached
                .filter(|_| input > 0.0)
                .map(|c| (c / input).clamp(0.0, 1.0));
            t.latency = PerMetric::from_fn(|m| dist(&hists[m as usize]));
            t.histograms = TurnHistograms::encode(|m| &hists[m as usize]).ok();
            t
        })
        .collect())
}
