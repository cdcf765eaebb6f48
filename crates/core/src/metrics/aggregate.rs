//! Folds a stage's [`RequestRecord`]s into HDR histograms and counters as they arrive, then
//! produces the stage's [`StageSummary`]. Nothing is kept per request: the steady-state window
//! keeps time slices of bounded size (`steady_slices.rs`), so memory is the same for ten
//! thousand and ten million requests (the per-second timeline aside, a few bytes a second;
//! `docs/performance.md`, "Memory over time").

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::attribution::TimingsAcc;
use super::dist::Dist;
use super::histograms::HistogramCodec;
use super::histograms::StageHistograms;
use super::latency::{LatencyMetric, tpot_ns};
use super::measure::{dist, histogram, metric_dist, record, record_net};
use super::net::ClientNet;
use super::record::{ErrorKind, RequestRecord, TokenSource};
use super::stage_inputs::{GoodputSlo, StageClock};
use super::summary::*;
use super::timeline::Timeline;
use super::validity::{self, StageFacts, ValidityRules};

/// Accumulates one stage.
pub struct StageAggregator {
    name: String,
    planned: PlannedLoad,
    slo: GoodputSlo,
    /// One histogram per latency metric, indexed by it.
    hists: [Histogram<u64>; LatencyMetric::COUNT],
    /// The net histograms of the metrics that have a net measure (see `ClientNet`).
    net: [Option<Histogram<u64>>; LatencyMetric::COUNT],
    /// Requests recorded with a bound on the client's reads, so with net samples.
    net_recorded: u64,
    served: super::net::ServedSpan,
    counts: RequestCounts,
    errors: BTreeMap<ErrorKind, u64>,
    tokens: Tokens,
    good: u64,
    /// A pooling API's request was seen (it carries inputs): the stage has an inputs rate.
    pooled: bool,
    /// An answer came whole (a pooling API's, or a generation API's asked `stream #false`):
    /// the stage has no first token, and its streamed-only metrics are not written.
    whole: bool,
    last_sent_ns: u64,
    /// The first turns' scheduled and actual send instants, earliest and latest: whether the
    /// sends kept the planned pace.
    scheduled_range: Option<(u64, u64)>,
    sent_range: Option<(u64, u64)>,
    /// First turns sent (all requests, without sessions).
    arrivals: u64,
    timeline: Timeline,
    turns: super::turns::TurnAggregator,
    urls: super::urls::UrlAggregator,
    depths: super::depths::DepthAggregator,
    facts: StageFacts,
    timings: TimingsAcc,
    spec: super::DraftCounts,
    /// Responses read in one burst, for the stage's note.
    bursts: super::burst::BurstAcc,
    /// With `ignore_eos`, ok requests whose output count is exact (usage or timings), for
    /// the off-plan rule.
    exact_counts: u64,
    payload: super::Payload,
    /// What the answers said, when the data set checks them (`quality`).
    quality: Option<super::Quality>,
    /// What the requests give the steady-state window, by time slice.
    steady: super::steady_slices::SteadySlices,
    /// One aggregator per label of each of the stage's groups (`model`, `class`).
    groups: Vec<super::groups::GroupAcc<StageAggregator>>,
    /// `priority-inversion "fail"`: the priority check gates.
    priority_gate: bool,
}

impl StageAggregator {
    pub fn new(name: impl Into<String>, planned: PlannedLoad, slo: GoodputSlo) -> Self {
        StageAggregator {
            name: name.into(),
            planned,
            slo,
            hists: std::array::from_fn(|_| histogram()),
            net: std::array::from_fn(|i| LatencyMetric::ALL[i].spec().net.map(|_| histogram())),
            net_recorded: 0,
            served: Default::default(),
            counts: RequestCounts::default(),
            errors: BTreeMap::new(),
            tokens: Tokens::default(),
            good: 0,
            pooled: false,
            whole: false,
            last_sent_ns: 0,
            scheduled_range: None,
            sent_range: None,
            arrivals: 0,
            timeline: Timeline::default(),
            turns: Default::default(),
            urls: Default::default(),
            depths: Default::default(),
            facts: StageFacts::default(),
            timings: TimingsAcc::default(),
            spec: super::DraftCounts::default(),
            bursts: super::burst::BurstAcc::default(),
            exact_counts: 0,
            payload: Default::default(),
            quality: None,
            steady: Default::default(),
            groups: Vec::new(),
            priority_gate: false,
        }
    }

    /// Aggregates each label of `groups` apart too (set before the first record); with
    /// `priority_gate`, a priority inversion between the classes fails the gate.
    pub fn with_groups(mut self, groups: &[crate::protocol::Group], priority_gate: bool) -> Self {
        let (name, planned, slo, facts) = (&self.name, &self.planned, self.slo, self.facts);
        self.groups = groups
            .iter()
            .map(|g| {
                super::groups::GroupAcc::new(g, || {
                    StageAggregator::new(name.clone(), planned.clone(), slo).with_facts(facts)
                })
            })
            .collect();
        self.priority_gate = priority_gate;
        self
    }

    /// What the plan says about the stage's requests (see [`StageFacts`]).
    pub fn with_facts(mut self, facts: StageFacts) -> Self {
        self.facts = facts;
        self.quality = facts.quality.map(|scorer| super::Quality {
            scorer: scorer.map(String::from),
            ignore_eos: facts.ignore_eos,
            ..super::Quality::default()
        });
        self
    }

    pub fn record(&mut self, r: &RequestRecord) {
        self.record_with(r, None);
    }

    /// Records a request, and with `read` (a bound on how late the client read an event at an
    /// instant, ns) its net samples too: what the client may have added taken off.
    pub fn record_with(&mut self, r: &RequestRecord, read: Option<&dyn Fn(u64) -> u64>) {
        for g in &mut self.groups {
            if let Some(p) = g.part_of(r) {
                p.record_with(r, read);
            }
        }
        if let Some(read) = read {
            self.net_recorded += 1;
            for (m, h) in LatencyMetric::ALL.iter().zip(&mut self.net) {
                if let Some(h) = h {
                    record_net(h, m.measure_net(r, read), read);
                }
            }
        }
        self.served.record(r, read);
        self.counts.sent += 1;
        self.payload.record(r);
        if let Some(q) = &mut self.quality {
            q.record(r);
        }
        self.pooled |= r.inputs > 0;
        self.whole |= r.inputs > 0 || r.answered.is_some();
        if r.retries > 0 {
            self.counts.retried += 1;
        }
        self.turns.record(r);
        self.urls.record(r);
        self.depths.record(r);
        // A session's later turns follow its replies, not the schedule: only first turns
        // (every request, without sessions) measure the sending rate.
        if r.opens_arrival() {
            self.arrivals += 1;
            self.last_sent_ns = self.last_sent_ns.max(r.sent_ns);
            widen(&mut self.scheduled_range, r.scheduled_ns);
            widen(&mut self.sent_range, r.sent_ns);
        }
        for m in LatencyMetric::ALL {
            record(&mut self.hists[m as usize], m.measure(r));
        }
        self.timeline.sent(r.sent_ns);
        self.timeline.occupied(r.sent_ns, r.done_ns);
        let ttft = r.ttft_ns();
        if let Some(kind) = r.error {
            self.counts.failed += 1;
            *self.errors.entry(kind).or_default() += 1;
            self.timeline
                .completed(r.done_ns, false, 0, None, r.e2e_ns());
            self.keep(r, false);
            return;
        }
        self.counts.ok += 1;
        let e2e = r.e2e_ns();
        let max_gap_us = r.itl_us.iter().copied().max().map_or(0, u64::from);
        let out = r.output_tokens as u64;
        let tpot = tpot_ns(r);
        self.bursts.record(r.itl_us.len(), max_gap_us, tpot);
        self.tokens.input += r.input_tokens as u64;
        self.tokens.inputs += u64::from(r.inputs);
        self.tokens.output += out;
        self.count_tokens(r);
        if let Some(t) = &r.server_timings {
            self.timings.record(t, ttft);
            self.spec.record(t);
        }
        let slo = &self.slo;
        let within = |limit: Option<u64>, value: Option<u64>| match limit {
            None => true,
            Some(l) => value.is_some_and(|v| v <= l),
        };
        // A response that is only reasoning cut off by the budget is no answer, however fast.
        if !r.answer_starved()
            && within(slo.ttft_ns, ttft)
            && within(slo.tpot_ns, tpot.or(ttft.map(|_| 0)))
            && within(slo.itl_ns, Some(max_gap_us * 1_000))
            && within(slo.e2e_ns, Some(e2e))
        {
            self.good += 1;
            self.keep(r, true);
        } else {
            self.keep(r, false);
        }
        self.timeline.completed(r.done_ns, true, out, ttft, e2e);
    }

    /// Adds what the steady-state window needs of `r` to its slice.
    fn keep(&mut self, r: &RequestRecord, good: bool) {
        self.steady.record(r, good);
    }

    /// Where the counts came from, and what they say about the server and the cache.
    fn count_tokens(&mut self, r: &RequestRecord) {
        let t = &mut self.tokens;
        match r.token_source {
            TokenSource::Usage => t.from_usage += 1,
            TokenSource::Timings => t.from_timings += 1,
            TokenSource::Tokenize => t.from_tokenize += 1,
            TokenSource::Tokenizer => t.from_tokenizer += 1,
        }
        if r.token_source.is_estimate() {
            t.estimated += 1;
            if tpot_ns(r).is_some() {
                t.tpot_estimated += 1;
            }
        } else if self.facts.ignore_eos && r.planned_output_tokens > 0 {
            self.exact_counts += 1;
            if r.output_tokens != r.planned_output_tokens {
                t.off_plan_output += 1;
            }
        }
        if r.implausible_usage {
            t.implausible += 1;
        }
        if r.token_mismatch {
            t.mismatched += 1;
        }
        if let Some(c) = r.cached_tokens {
            t.cached += u64::from(c);
            t.cache_reported += 1;
        }
        if let Some(n) = r.reasoning_tokens {
            t.reasoning += u64::from(n);
            t.reasoning_reported += 1;
        }
        if r.answer_starved() {
            t.answer_starved += 1;
        }
        if r.tool_result {
            t.tool_round_trips += 1;
        }
        if r.calls > 0 {
            t.tool_answers += 1;
            t.tool_calls += u64::from(r.calls);
        }
    }

    /// Requests aggregated so far (for progress display).
    pub fn done(&self) -> u64 {
        self.counts.sent
    }
    pub fn failed(&self) -> u64 {
        self.counts.failed
    }
    /// Median TTFT so far in ms (0 before the first success).
    /// The median so far of when answers begin: TTFT, or E2E for a pooling API (answered
    /// whole), with its label.
    pub fn first_event_p50(&self) -> (&'static str, f64) {
        let m = if self.whole {
            LatencyMetric::E2e
        } else {
            LatencyMetric::Ttft
        };
        let h = self.histogram(m);
        let p50 = if h.is_empty() {
            0.0
        } else {
            h.value_at_quantile(0.5) as f64 / 1e3
        };
        (m.label(), p50)
    }

    fn histogram(&self, metric: LatencyMetric) -> &Histogram<u64> {
        &self.hists[metric as usize]
    }

    pub fn finish(mut self, clock: StageClock, rules: &ValidityRules) -> StageSummary {
        let mut s = self.summarize(&clock, rules);
        // Encoding fails only for a bucket count above i64::MAX, which no run reaches.
        s.histograms = StageHistograms::encode(|m| self.histogram(m)).ok();
        if let Some(net) = self.client_net_whole(rules.confidence, &clock) {
            s.client_net = Some(net);
        }
        s.timeline = std::mem::take(&mut self.timeline).finish();
        s.per_turn = std::mem::take(&mut self.turns).finish();
        s.per_url = std::mem::take(&mut self.urls).finish();
        s.per_depth = std::mem::take(&mut self.depths).finish();
        s.steady =
            super::steady::window(&s.timeline, clock.wall_ns, &self.steady, rules.confidence);
        s.mark_answered_whole(self.whole);
        let groups = std::mem::take(&mut self.groups);
        s.groups = groups
            .into_iter()
            .flat_map(|g| g.finish(|p| p.finish(clock, rules)))
            .collect();
        s.priority = super::groups::priority_check(&s.groups, s.pooled(), self.priority_gate);
        s
    }

    /// Each label's summary, by `summarise`, and the priority check on them.
    fn with_parts(
        &self,
        mut s: StageSummary,
        summarise: impl Fn(&StageAggregator) -> StageSummary,
    ) -> StageSummary {
        s.groups = self
            .groups
            .iter()
            .flat_map(|g| g.summaries(&summarise))
            .collect();
        s.priority = super::groups::priority_check(&s.groups, s.pooled(), self.priority_gate);
        s
    }

    /// The summary so far, without histograms, timeline or turns: what an `abort-on-fail`
    /// check reads while the stage runs (about once a second, on the collector's thread).
    pub fn snapshot(&self, clock: StageClock, rules: &ValidityRules) -> StageSummary {
        let s = self.summarize(&clock, rules);
        self.with_parts(s, |p| p.snapshot(clock, rules))
    }

    /// [`StageAggregator::snapshot`] with the histograms, for the confidence sequences an
    /// `until-decided` stage is judged on while it runs.
    pub fn snapshot_with_histograms(
        &self,
        clock: StageClock,
        rules: &ValidityRules,
    ) -> StageSummary {
        let mut s = self.summarize(&clock, rules);
        s.histograms = StageHistograms::encode(|m| self.histogram(m)).ok();
        // The net view's sequences too: a look judges a flagged stage's failures net of the
        // client as its final verdict will, or it could stop on an answer the verdict lacks.
        if let Some(net) = self.client_net_whole(rules.confidence, &clock) {
            s.client_net = Some(net);
        }
        s.mark_answered_whole(self.whole);
        self.with_parts(s, |p| p.snapshot_with_histograms(clock, rules))
    }

    /// Rates over the stage's wall time; the send rate over the sending time.
    fn throughput(&self, clock: &StageClock, tokens: &Tokens) -> Throughput {
        let wall_s = (clock.wall_ns as f64 / 1e9).max(1e-9);
        let sending_s = self.last_sent_ns as f64 / 1e9;
        let achieved = if self.arrivals > 1 && sending_s > 0.0 {
            self.arrivals as f64 / sending_s
        } else {
            self.arrivals as f64 / wall_s
        };
        Throughput {
            requests_per_s: self.counts.ok as f64 / wall_s,
            output_tokens_per_s: tokens.output as f64 / wall_s,
            input_tokens_per_s: tokens.input as f64 / wall_s,
            inputs_per_s: self.pooled.then(|| tokens.inputs as f64 / wall_s),
            goodput_per_s: self.good as f64 / wall_s,
            goodput_ratio: if self.counts.sent == 0 {
                0.0
            } else {
                self.good as f64 / self.counts.sent as f64
            },
            achieved_rate_per_s: achieved,
        }
    }

    fn client(&self, clock: &StageClock) -> ClientHealth {
        let lag = dist(self.histogram(LatencyMetric::SendLag));
        ClientHealth {
            send_lag_ms: SendLag {
                p50: lag.p50,
                p99: lag.p99,
                max: lag.max,
            },
            cpu_percent: clock.cpu_ns as f64 / clock.wall_ns.max(1) as f64 * 100.0,
            cores: clock.cores,
            peak_rss_mb: clock.peak_rss_bytes as f64 / (1024.0 * 1024.0),
            steal_percent: clock.steal_share.map(|s| s * 100.0),
            // Counted by the runner, which sees requests start and end.
            peak_in_flight: 0,
            poll_idle: clock.poll_idle,
            loop_delay_ms: clock.loop_delay,
            closed_loop_idle_percent: clock
                .closed_idle
                .filter(|(_, span)| *span > 0)
                .map(|(idle, span)| 100.0 * idle as f64 / span as f64),
            cpus_busy_percent: clock.host.busy_share.map(|s| s * 100.0),
            others_percent: clock.host.others_share.map(|s| s * 100.0),
            involuntary_switches_per_s: clock.host.involuntary_per_s,
            run_queue: clock
                .host
                .run_queue_mean
                .zip(clock.host.run_queue_max)
                .map(|(mean, max)| RunQueue { mean, max }),
        }
    }

    /// The net distributions with their histograms, once any request was recorded with a
    /// bound on its reads.
    fn client_net_whole(&self, confidence: f64, clock: &StageClock) -> Option<ClientNet> {
        (self.net_recorded > 0).then(|| {
            let hists = super::PerMetric::from_fn(|m| self.net[m as usize].clone());
            ClientNet {
                served_s: self.served.served_s(clock.planned_span_ns),
                ..ClientNet::from_histograms(&hists, confidence, self.counts.ok)
            }
        })
    }

    /// The net distributions, once any request was recorded with a bound on its reads.
    fn client_net(&self, confidence: f64, clock: &StageClock) -> Option<ClientNet> {
        (self.net_recorded > 0).then(|| ClientNet {
            latency: super::PerMetric::from_fn(|m| match &self.net[m as usize] {
                Some(h) => metric_dist(m, h, confidence, self.counts.ok),
                None => Dist::default(),
            }),
            histograms: None,
            served_s: self.served.served_s(clock.planned_span_ns),
        })
    }

    fn summarize(&self, clock: &StageClock, rules: &ValidityRules) -> StageSummary {
        let mut counts = self.counts.clone();
        counts.errors = self.errors.iter().map(|(k, v)| (k.key(), *v)).collect();
        let mut tokens = self.tokens.clone();
        tokens.cached_share = tokens.cache_share();
        let throughput = self.throughput(clock, &tokens);
        let client = self.client(clock);
        let latency = Latency::from_fn(|m| {
            metric_dist(m, self.histogram(m), rules.confidence, self.counts.ok)
        });
        let (validity, cause_notes) = validity::judge(
            &validity::Inputs {
                requests: &counts,
                errors: error_list(&counts.errors),
                tokens: &tokens,
                ttft: &latency[if self.whole {
                    LatencyMetric::E2e
                } else {
                    LatencyMetric::Ttft
                }],
                whole: self.whole,
                client: &client,
                pace: clock.planned_span_ns.and(self.pace()),
                cores: clock.cores,
                steal_share: clock.steal_share,
                poll_idle: clock.poll_idle,
                facts: self.facts,
                exact_counts: self.exact_counts,
            },
            rules,
        );
        let mut notes = validity::notes(self.facts, counts.sent, &tokens);
        notes.extend(cause_notes);
        notes.extend(self.bursts.note(&latency[LatencyMetric::Tpot]));
        let attribution = self
            .timings
            .finish(&latency[LatencyMetric::Ttft], &latency[LatencyMetric::Tpot]);
        let mean_output = tokens.output as f64 / counts.ok.max(1) as f64;
        notes.extend(
            attribution
                .as_ref()
                .and_then(|a| super::attribution::tpot_note(a, mean_output)),
        );
        StageSummary {
            name: self.name.clone(),
            planned: self.planned.clone(),
            wall_time_s: clock.wall_ns as f64 / 1e9,
            requests: counts,
            latency,
            tokens,
            throughput,
            client,
            validity,
            timeline: Vec::new(),
            profile: None,
            warmup_end: None,
            per_turn: Vec::new(),
            per_url: Vec::new(),
            per_depth: Vec::new(),
            histograms: None,
            notes,
            attribution,
            spec: (self.spec.requests > 0).then_some(self.spec),
            aborted: None,
            client_net: self.client_net(rules.confidence, clock),
            rounds: Vec::new(),
            until_decided: None,
            payload: self.payload.finish(),
            quality: self.quality.clone().map(|q| q.finish(rules.confidence)),
            steady: None,
            groups: Vec::new(),
            priority: None,
            server: None,
        }
    }
}

/// Stretches `range` to hold `v`.
fn widen(range: &mut Option<(u64, u64)>, v: u64) {
    *range = Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
}

impl StageAggregator {
    /// The sends' pace against the plan's over the same requests: the span of their scheduled
    /// instants over the span of their actual sends (first to last), at most 1. A constant
    /// lag keeps the pace; a client falling further behind does not.
    fn pace(&self) -> Option<f64> {
        let (s0, s1) = self.scheduled_range?;
        let (a0, a1) = self.sent_range?;
        let planned = s1.saturating_sub(s0);
        (self.arrivals > 1 && planned > 0).then(|| planned as f64 / (a1 - a0).max(planned) as f64)
    }
}

mod merge;

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "merge_tests.rs"]
mod merge_tests;

/// The errors by kind as one line ("timeout: 3, http_5xx: 1"), for the validity verdict.
fn error_list(errors: &std::collections::BTreeMap<String, u64>) -> String {
    if errors.is_empty() {
        return "no error recorded".to_string();
    }
    errors
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
