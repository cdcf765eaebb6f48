//! Merging stage aggregators: with `--cpus N` each shard folds its own records into a partial
//! aggregator made by [`StageAggregator::empty_like`], and the stage's aggregator takes each
//! partial in with [`StageAggregator::merge`]. Every part merges exactly: integer sums, HDR
//! histograms of the same bounds (whose counts add), ranges by min and max, the per-second
//! timeline and the steady-state slices by their time index. So the stage's summary is the one
//! a single aggregator folding all the records gives (`merge_tests.rs` checks it on every part
//! of `results.json`), with two limits said where they apply: `Timeline::merge` (a second's
//! percentiles, when records come far out of order) and `SteadySlices::merge` (slices widened
//! by their memory bound).

use super::super::measure::absorb;
use super::super::timeline::Timeline;
use super::StageAggregator;

impl StageAggregator {
    /// An empty aggregator made as this one was (name, planned load, SLO, facts, quality,
    /// groups, priority gate, the steady-state window's bounds): a shard's partial, to be
    /// taken in by [`StageAggregator::merge`]. Its timeline keeps every second's percentiles
    /// open until merged, so that a second two shards completed requests in merges exactly; a
    /// partial is meant to live a short while (a shard hands it over once a second).
    pub fn empty_like(&self) -> StageAggregator {
        let mut a = StageAggregator::new(self.name.clone(), self.planned.clone(), self.slo)
            .with_facts(self.facts);
        a.quality = self.quality.as_ref().map(|q| super::super::Quality {
            scorer: q.scorer.clone(),
            ignore_eos: q.ignore_eos,
            ..super::super::Quality::default()
        });
        a.priority_gate = self.priority_gate;
        a.groups = self
            .groups
            .iter()
            .map(|g| g.empty_like(StageAggregator::empty_like))
            .collect();
        a.steady = self.steady.empty_like();
        a.timeline = Timeline::partial();
        a
    }

    /// Takes in `other`'s records, as if this aggregator had folded them too (see the module's
    /// note for what "exactly" covers). `other` should be made like this one (by
    /// [`StageAggregator::empty_like`], or by the same constructor calls); where its
    /// configuration differs, this one's stands and nothing panics: every record of `other`
    /// counts in the stage's figures as `other` counted it (its goodput by its own SLO), and a
    /// group of `other` that this one lacks (another grouping, other labels) is left out of
    /// the per-label rows, as is its quality tally when this one keeps none.
    pub fn merge(&mut self, other: StageAggregator) {
        let StageAggregator {
            name: _,
            planned: _,
            slo: _,
            facts: _,
            priority_gate: _,
            hists,
            net,
            net_recorded,
            served,
            counts,
            errors,
            tokens,
            good,
            pooled,
            whole,
            last_sent_ns,
            scheduled_range,
            sent_range,
            arrivals,
            timeline,
            turns,
            urls,
            depths,
            timings,
            spec,
            bursts,
            exact_counts,
            payload,
            quality,
            steady,
            groups,
        } = other;
        for (h, o) in self.hists.iter_mut().zip(&hists) {
            absorb(h, o);
        }
        for (h, o) in self.net.iter_mut().zip(&net) {
            if let (Some(h), Some(o)) = (h, o) {
                absorb(h, o);
            }
        }
        self.net_recorded += net_recorded;
        self.served.merge(&served);
        self.counts.merge(&counts);
        for (k, n) in errors {
            *self.errors.entry(k).or_default() += n;
        }
        self.tokens.add(&tokens);
        self.good += good;
        self.pooled |= pooled;
        self.whole |= whole;
        self.last_sent_ns = self.last_sent_ns.max(last_sent_ns);
        self.scheduled_range = span(self.scheduled_range, scheduled_range);
        self.sent_range = span(self.sent_range, sent_range);
        self.arrivals += arrivals;
        self.exact_counts += exact_counts;
        self.timeline.merge(timeline);
        self.turns.merge(&turns);
        self.urls.merge(&urls);
        self.depths.merge(&depths);
        self.timings.merge(&timings);
        self.spec.merge(&spec);
        self.bursts.merge(&bursts);
        self.payload.add(&payload);
        if let (Some(q), Some(o)) = (&mut self.quality, &quality) {
            q.add(o);
        }
        self.steady.merge(steady);
        for o in groups {
            if let Some(g) = self.groups.iter_mut().find(|g| g.group() == o.group()) {
                g.merge(o, StageAggregator::merge);
            }
        }
    }
}

/// The range holding both `a` and `b`.
fn span(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Option<(u64, u64)> {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        (a, b) => a.or(b),
    }
}
