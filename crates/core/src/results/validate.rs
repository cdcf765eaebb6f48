//! The one check of a loaded result: every command that reads a `results.json` (`report`,
//! `compare`, `merge`, a run's `baseline`, the coordinator receiving a shard's) goes through
//! [`validate`], so none of them takes a result whose numbers contradict each other on faith.
//! Counts add up (`ok + failed = sent`, error kinds sum to `failed`, with checked arithmetic
//! and no count past [`MAX_COUNT`], so nothing wraps), rates and latencies are finite and
//! non-negative, shares lie in 0..=1, percentiles are in order, every stored histogram decodes
//! and holds as many samples as its summary says, the plan hash is hex and the schema version
//! known; the figures schema 3 added (latencies net of the client, the client's health, each
//! verdict's rule) are held to the same rules. Each problem names its field as a JSON path
//! (`stages[2].requests.failed`) and the value found there.

use infermeter_words::error_chain;
use std::fmt;

use super::model::{RESULTS_SCHEMA_VERSION, Results};
use crate::metrics::{StageSummary, TurnSummary};
use crate::sla::{Basis, SlaOutcome};

/// No count in a result may exceed this (2^53): far beyond any run, and the largest integer
/// every JSON reader (JavaScript's numbers, Python's floats) holds exactly.
pub const MAX_COUNT: u64 = 1 << 53;

/// Problems listed at most; a result this broken needs no more to be refused.
const MAX_PROBLEMS: usize = 32;

/// One inconsistency in a result: where, what was there, and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// A JSON path into the file: `stages[2].requests.failed`.
    pub field: String,
    /// The value found there, as JSON writes it (cut when long).
    pub value: String,
    pub rule: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.field, self.value, self.rule)
    }
}

/// A result whose numbers do not hold together: every problem found (at most 32).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a consistent result: {}", shown(problems))]
pub struct Inconsistent {
    pub problems: Vec<Problem>,
}

fn shown(problems: &[Problem]) -> String {
    let list: Vec<String> = problems.iter().map(Problem::to_string).collect();
    list.join("; ")
}

/// Checks that `r` holds together (see the module's documentation); `Err` lists why not.
pub fn validate(r: &Results) -> Result<(), Inconsistent> {
    let mut c = Checker::default();
    c.top(r);
    if let Some(w) = &r.warmup {
        c.stage("warmup", w);
    }
    for (i, s) in r.stages.iter().enumerate() {
        c.stage(&format!("stages[{i}]"), s);
    }
    c.verdicts(r);
    c.shards(r);
    c.urls(r);
    if let Some(t) = &r.telemetry {
        c.telemetry_spec(t);
    }
    if c.problems.is_empty() {
        Ok(())
    } else {
        Err(Inconsistent {
            problems: c.problems,
        })
    }
}

#[derive(Default)]
struct Checker {
    problems: Vec<Problem>,
}

impl Checker {
    fn fail(
        &mut self,
        field: impl Into<String>,
        value: impl fmt::Display,
        rule: impl Into<String>,
    ) {
        if self.problems.len() < MAX_PROBLEMS {
            let mut value = value.to_string();
            if value.chars().count() > 48 {
                value = value.chars().take(40).collect::<String>() + "…";
            }
            self.problems.push(Problem {
                field: field.into(),
                value,
                rule: rule.into(),
            });
        }
    }

    fn count(&mut self, field: &str, n: u64) {
        if n > MAX_COUNT {
            self.fail(field, n, "beyond any run (at most 2^53)");
        }
    }

    /// A float that must be finite and at least 0.
    fn non_negative(&mut self, field: &str, v: f64) {
        if !v.is_finite() || v < 0.0 {
            self.fail(field, v, "must be a finite number, at least 0");
        }
    }

    fn share(&mut self, field: &str, v: f64) {
        if !(0.0..=1.0).contains(&v) {
            self.fail(field, v, "a share, must lie within 0..=1");
        }
    }

    fn at_most(&mut self, field: &str, n: u64, limit: u64, of: &str) {
        if n > limit {
            self.fail(field, n, format!("more than {of} ({limit})"));
        }
    }

    fn top(&mut self, r: &Results) {
        if !(1..=RESULTS_SCHEMA_VERSION).contains(&r.schema_version) {
            self.fail(
                "schema_version",
                r.schema_version,
                format!("unknown (this infermeter reads 1 to {RESULTS_SCHEMA_VERSION})"),
            );
        }
        let hash = &r.plan_hash;
        let hex = hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !(8..=64).contains(&hash.len()) || !hex {
            self.fail(
                "plan_hash",
                json(hash),
                "not a plan hash (8 to 64 lower-case hex digits)",
            );
        }
        if r.passed && (r.outcome != SlaOutcome::Pass || !r.complete) {
            self.fail(
                "passed",
                true,
                format!(
                    "a pass needs the outcome `pass` and a complete run (outcome `{}`, complete {})",
                    r.outcome.as_str(),
                    r.complete
                ),
            );
        }
    }

    fn verdicts(&mut self, r: &Results) {
        for (i, v) in r.sla.iter().enumerate() {
            let at = format!("sla[{i}]");
            for (name, x) in [("observed", v.observed), ("threshold", v.threshold)] {
                if !x.is_finite() {
                    self.fail(format!("{at}.{name}"), x, "must be a finite number");
                }
            }
            if let Some(basis) = &v.basis {
                self.basis(&format!("{at}.basis"), basis);
            }
            self.prefix_basis(&at, v, &r.stages);
            if v.passed != (v.outcome == SlaOutcome::Pass) {
                self.fail(
                    format!("{at}.passed"),
                    v.passed,
                    format!("disagrees with its outcome `{}`", v.outcome.as_str()),
                );
            }
        }
    }

    fn shards(&mut self, r: &Results) {
        let Some(s) = &r.shards else { return };
        if s.count == 0 {
            self.fail("shards.count", 0, "a run has one shard at least");
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, rec) in s.shards.iter().enumerate() {
            let at = format!("shards.shards[{i}]");
            if rec.index >= s.count {
                self.fail(
                    format!("{at}.index"),
                    rec.index,
                    format!("no such shard in a {}-shard run", s.count),
                );
            }
            if !seen.insert(rec.index) {
                self.fail(format!("{at}.index"), rec.index, "listed twice");
            }
            for (j, st) in rec.starts.iter().enumerate() {
                if !st.offset_ms.is_finite() {
                    self.fail(
                        format!("{at}.starts[{j}].offset_ms"),
                        st.offset_ms,
                        "must be finite",
                    );
                }
                self.non_negative(
                    &format!("{at}.starts[{j}].clock_error_ms"),
                    st.clock_error_ms,
                );
            }
        }
        for (i, m) in s.missing.iter().enumerate() {
            if *m >= s.count || seen.contains(m) {
                self.fail(
                    format!("shards.missing[{i}]"),
                    m,
                    "not a missing shard of this run",
                );
            }
        }
        if let Some(skew) = s.max_skew_ms {
            self.non_negative("shards.max_skew_ms", skew);
        }
    }

    fn stage(&mut self, at: &str, s: &StageSummary) {
        self.non_negative(&format!("{at}.wall_time_s"), s.wall_time_s);
        self.requests(at, s);
        self.latency(at, s);
        self.histograms(at, s);
        self.client_net(at, s);
        self.tokens(at, s);
        self.payload(at, s);
        self.quality(at, s);
        self.spec(at, s);
        self.rates(at, s);
        self.health(at, s);
        self.steady(at, s);
        self.until(at, s);
        self.groups(at, s);
        for (i, p) in s.timeline.iter().enumerate() {
            let at = format!("{at}.timeline[{i}]");
            self.non_negative(&format!("{at}.t_s"), p.t_s);
            for (name, n) in [
                ("sent", p.sent),
                ("completed", p.completed),
                ("failed", p.failed),
                ("output_tokens", p.output_tokens),
            ] {
                self.count(&format!("{at}.{name}"), n);
            }
            self.non_negative(&format!("{at}.ttft_p50_ms"), p.ttft_p50_ms);
            self.non_negative(&format!("{at}.e2e_p99_ms"), p.e2e_p99_ms);
            self.non_negative(&format!("{at}.in_flight"), p.in_flight);
        }
        for (i, t) in s.per_turn.iter().enumerate() {
            self.turn(&format!("{at}.per_turn[{i}]"), t, s.requests.sent);
        }
        for (i, round) in s.rounds.iter().enumerate() {
            self.stage(&format!("{at}.rounds[{i}]"), round);
        }
    }

    fn requests(&mut self, at: &str, s: &StageSummary) {
        let q = &s.requests;
        let at = format!("{at}.requests");
        for (name, n) in [
            ("sent", q.sent),
            ("ok", q.ok),
            ("failed", q.failed),
            ("retried", q.retried),
        ] {
            self.count(&format!("{at}.{name}"), n);
        }
        match q.ok.checked_add(q.failed) {
            Some(n) if n == q.sent => {}
            _ => self.fail(
                format!("{at}.failed"),
                q.failed,
                format!("ok ({}) + failed ≠ sent ({})", q.ok, q.sent),
            ),
        }
        let mut by_kind = Some(0u64);
        for (kind, n) in &q.errors {
            self.count(&format!("{at}.errors.{kind}"), *n);
            by_kind = by_kind.and_then(|sum| sum.checked_add(*n));
        }
        if by_kind != Some(q.failed) {
            let sum = by_kind.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string());
            self.fail(
                format!("{at}.errors"),
                sum,
                format!("the errors by kind do not sum to failed ({})", q.failed),
            );
        }
        self.at_most(&format!("{at}.retried"), q.retried, q.sent, "sent");
    }

    fn tokens(&mut self, at: &str, s: &StageSummary) {
        let t = &s.tokens;
        let ok = s.requests.ok;
        let at = format!("{at}.tokens");
        for (name, n) in [
            ("input", t.input),
            ("inputs", t.inputs),
            ("output", t.output),
            ("cached", t.cached),
            ("reasoning", t.reasoning),
        ] {
            self.count(&format!("{at}.{name}"), n);
        }
        // Per-request tallies: each counts some of the ok requests.
        for (name, n) in [
            ("from_usage", t.from_usage),
            ("from_tokenizer", t.from_tokenizer),
            ("from_timings", t.from_timings),
            ("from_tokenize", t.from_tokenize),
            ("mismatched", t.mismatched),
            ("estimated", t.estimated),
            ("tpot_estimated", t.tpot_estimated),
            ("implausible", t.implausible),
            ("off_plan_output", t.off_plan_output),
            ("cache_reported", t.cache_reported),
            ("reasoning_reported", t.reasoning_reported),
            ("answer_starved", t.answer_starved),
            ("tool_round_trips", t.tool_round_trips),
            ("tool_answers", t.tool_answers),
        ] {
            self.at_most(&format!("{at}.{name}"), n, ok, "the ok requests");
        }
        // Reasoning is part of the output: a count is kept only when it is not above it.
        self.at_most(
            &format!("{at}.reasoning"),
            t.reasoning,
            t.output,
            "the output tokens",
        );
        let sources = [
            t.from_usage,
            t.from_timings,
            t.from_tokenize,
            t.from_tokenizer,
        ]
        .into_iter()
        .try_fold(0u64, u64::checked_add);
        if sources.is_none_or(|n| n > ok) {
            let sum = sources.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string());
            self.fail(
                format!("{at}.from_usage"),
                t.from_usage,
                format!(
                    "the requests counted by each source ({sum}) exceed the ok requests ({ok})"
                ),
            );
        }
        if let Some(share) = t.cached_share {
            self.share(&format!("{at}.cached_share"), share);
        }
    }

    /// A stage's (or its window's) rates: finite and non-negative; the goodput ratio a share.
    fn throughput(&mut self, at: &str, t: &crate::metrics::Throughput) {
        for (name, v) in [
            ("requests_per_s", t.requests_per_s),
            ("output_tokens_per_s", t.output_tokens_per_s),
            ("input_tokens_per_s", t.input_tokens_per_s),
            ("goodput_per_s", t.goodput_per_s),
            ("achieved_rate_per_s", t.achieved_rate_per_s),
        ] {
            self.non_negative(&format!("{at}.{name}"), v);
        }
        if let Some(v) = t.inputs_per_s {
            self.non_negative(&format!("{at}.inputs_per_s"), v);
        }
        self.share(&format!("{at}.goodput_ratio"), t.goodput_ratio);
    }

    fn rates(&mut self, at: &str, s: &StageSummary) {
        self.throughput(&format!("{at}.throughput"), &s.throughput);
        let c = &s.client;
        let cl = format!("{at}.client");
        for (name, v) in [
            ("send_lag_ms.p50", c.send_lag_ms.p50),
            ("send_lag_ms.p99", c.send_lag_ms.p99),
            ("send_lag_ms.max", c.send_lag_ms.max),
            ("cpu_percent", c.cpu_percent),
            ("peak_rss_mb", c.peak_rss_mb),
        ] {
            self.non_negative(&format!("{cl}.{name}"), v);
        }
    }

    /// The client's health figures of schema 3: finite, non-negative, in order.
    fn health(&mut self, at: &str, s: &StageSummary) {
        let c = &s.client;
        let cl = format!("{at}.client");
        for (name, v) in [
            ("steal_percent", c.steal_percent),
            ("cpus_busy_percent", c.cpus_busy_percent),
            ("others_percent", c.others_percent),
            ("involuntary_switches_per_s", c.involuntary_switches_per_s),
            ("run_queue.mean", c.run_queue.map(|q| q.mean)),
        ] {
            if let Some(v) = v {
                self.non_negative(&format!("{cl}.{name}"), v);
            }
        }
        self.count(&format!("{cl}.peak_in_flight"), c.peak_in_flight);
        let Some(d) = c.loop_delay_ms else { return };
        let at = format!("{cl}.loop_delay_ms");
        for (name, v) in [("p50", d.p50), ("p99", d.p99), ("max", d.max)] {
            self.non_negative(&format!("{at}.{name}"), v);
        }
        self.count(&format!("{at}.samples"), d.samples);
        if d.p50 > d.p99 || d.p99 > d.max {
            self.fail(format!("{at}.p99"), d.p99, "p50 ≤ p99 ≤ max must hold");
        }
    }

    /// The figures a verdict's rule records are finite and in range.
    fn basis(&mut self, at: &str, basis: &Basis) {
        match basis {
            Basis::NetOfClient { added_ms } => {
                self.non_negative(&format!("{at}.added_ms"), *added_ms);
            }
            Basis::ClientMayHaveAdded { added_ms, margin } => {
                self.non_negative(&format!("{at}.added_ms"), *added_ms);
                if !margin.is_finite() {
                    self.fail(format!("{at}.margin"), margin, "must be a finite number");
                }
            }
            Basis::WithoutClientFailures { removed }
            | Basis::ClientFailuresMayExplain { removed } => {
                self.count(&format!("{at}.removed"), *removed);
            }
            Basis::CreditedServer {
                withheld_ms,
                credited,
            }
            | Basis::ClientMayHaveWithheld {
                withheld_ms,
                credited,
            } => {
                self.non_negative(&format!("{at}.withheld_ms"), *withheld_ms);
                self.non_negative(&format!("{at}.credited"), *credited);
            }
            _ => {}
        }
    }

    fn turn(&mut self, at: &str, t: &TurnSummary, stage_sent: u64) {
        for (name, n) in [("sent", t.sent), ("ok", t.ok), ("failed", t.failed)] {
            self.count(&format!("{at}.{name}"), n);
        }
        if t.ok.checked_add(t.failed) != Some(t.sent) {
            self.fail(
                format!("{at}.failed"),
                t.failed,
                format!("ok ({}) + failed ≠ sent ({})", t.ok, t.sent),
            );
        }
        self.at_most(&format!("{at}.sent"), t.sent, stage_sent, "the stage sent");
        self.non_negative(&format!("{at}.mean_input_tokens"), t.mean_input_tokens);
        if let Some(share) = t.cached_share {
            self.share(&format!("{at}.cached_share"), share);
        }
        for (m, d) in t.latency.iter() {
            self.dist(&format!("{at}.{}", m.key()), d);
            self.at_most(
                &format!("{at}.{}.count", m.key()),
                d.count,
                t.ok,
                "the turn's ok requests",
            );
        }
        let Some(h) = &t.histograms else { return };
        for (m, text) in h.iter() {
            let field = format!("{at}.histograms.{}", m.key());
            let want = t.latency.get(m).map_or(0, |d| d.count);
            self.histogram(field, text, want);
        }
    }
}

/// A string as JSON writes it, for a problem's value.
fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

mod groups;
mod latency;
mod payload;
mod quality;
mod spec;
mod steady;
mod until;
mod urls;

#[cfg(test)]
mod tests;
