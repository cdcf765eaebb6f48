//! The validity verdict: whether a stage's numbers can be trusted, and if not, why; and notes
//! worth reading beside them. Rules on the client (send lag against what it distorts, CPU,
//! steal, keeping to the schedule), on the server's answers (nothing succeeded, implausible or
//! off-plan counts, prompt counts that disagree) and on the workload (a prompt cache the plan
//! did not intend). See `docs/metrics.md`.

use super::dist::Dist;
use super::summary::{ClientHealth, RequestCounts, Tokens, Validity};

/// When a stage's numbers stop being trustworthy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValidityRules {
    /// Send lag p99 above this always passes (the absolute floor of the send-lag rule).
    pub max_send_lag_p99_ms: f64,
    /// Send lag p99 above this share of the stage's TTFT p50 (and above the floor) flags the
    /// client as the bottleneck: the lag is added to every latency it measures.
    pub max_send_lag_ttft_share: f64,
    /// Achieved over planned sending rate below this flags the run.
    pub min_rate_ratio: f64,
    /// Client CPU above this share of the available cores flags the run.
    pub max_cpu_share: f64,
    /// Share of requests whose token counts disagree with the server's above this flags the run.
    pub max_token_mismatch_share: f64,
    /// Share of the client's CPUs' time taken by the hypervisor (steal) above this flags the
    /// run: stolen time stalls the client at random, inflating every latency it measures.
    pub max_steal_share: f64,
    /// With `ignore_eos`, the share of responses whose output length is not the planned one
    /// above which the load is not the planned load.
    pub max_off_plan_output_share: f64,
    /// Share of prompt tokens served from the server's cache, in a stage whose plan shares no
    /// prefix between prompts, above which the stage is flagged.
    pub max_unintended_cache_share: f64,
    /// Confidence of the percentiles' intervals (0.95): how sure the numbers are, beside the
    /// verdict on whether they can be trusted at all.
    pub confidence: f64,
}

impl Default for ValidityRules {
    fn default() -> Self {
        ValidityRules {
            max_send_lag_p99_ms: 1.0,
            max_send_lag_ttft_share: 0.05,
            min_rate_ratio: 0.99,
            max_cpu_share: 0.9,
            max_token_mismatch_share: 0.05,
            max_steal_share: 0.01,
            max_off_plan_output_share: 0.1,
            max_unintended_cache_share: 0.1,
            confidence: 0.95,
        }
    }
}

impl ValidityRules {
    /// The send-lag p99 a stage may have: the floor, or a share of its TTFT p50 when larger.
    pub fn send_lag_limit_ms(&self, ttft_p50_ms: f64) -> f64 {
        self.max_send_lag_p99_ms
            .max(self.max_send_lag_ttft_share * ttft_p50_ms)
    }
}

/// What the plan says about a stage's requests that the records alone do not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StageFacts {
    /// `ignore_eos` is sent: every response should be exactly `max_tokens` long.
    pub ignore_eos: bool,
    /// The plan's prompts share prefixes on purpose (sessions, a shared prefix, trace prefix
    /// blocks), so prompt-cache hits are part of the workload.
    pub shares_prefixes: bool,
    /// Distinct prompts a file data set has: a stage sending more requests repeats them.
    pub distinct_prompts: Option<u64>,
}

/// What the validity rules read, gathered by the aggregator.
pub(super) struct Inputs<'a> {
    pub requests: &'a RequestCounts,
    pub errors: String,
    pub tokens: &'a Tokens,
    pub ttft: &'a Dist,
    pub client: &'a ClientHealth,
    pub planned_span_ns: Option<u64>,
    pub last_sent_ns: u64,
    pub cores: u32,
    pub steal_share: Option<f64>,
    pub poll_idle: bool,
    pub facts: StageFacts,
    /// Requests whose output length could be compared with the plan (exact counts).
    pub exact_counts: u64,
}

pub(super) fn judge(i: &Inputs<'_>, rules: &ValidityRules) -> Validity {
    let mut reasons = Vec::new();
    let sent = i.requests.sent;
    let ok = i.requests.ok;
    if sent > 0 && ok == 0 {
        reasons.push(format!(
            "no request succeeded ({sent} sent; {}): the stage measured nothing",
            i.errors
        ));
    }
    let lag = i.client.send_lag_ms.p99;
    let limit = rules.send_lag_limit_ms(i.ttft.p50);
    if lag > limit {
        // A mostly idle client's CPUs sleep between sends, and waking them is slow on VMs.
        let hint = if i.poll_idle {
            ""
        } else {
            " (idle CPUs sleep between sends; as root, --poll-idle keeps them polling)"
        };
        reasons.push(format!(
            "send lag p99 {lag:.2} ms exceeds {limit:.2} ms (the larger of {} ms and {:.0}% of \
             TTFT p50 {:.2} ms): the client could not keep to the schedule{hint}",
            rules.max_send_lag_p99_ms,
            rules.max_send_lag_ttft_share * 100.0,
            i.ttft.p50
        ));
    }
    if let Some(span) = i.planned_span_ns.filter(|s| *s > 0) {
        let ratio = span as f64 / i.last_sent_ns.max(span) as f64;
        if ratio < rules.min_rate_ratio {
            reasons.push(format!(
                "achieved {:.1}% of the planned sending rate (below {:.1}%)",
                ratio * 100.0,
                rules.min_rate_ratio * 100.0
            ));
        }
    }
    let cores = i.cores.max(1) as f64;
    if i.client.cpu_percent / 100.0 > rules.max_cpu_share * cores {
        reasons.push(format!(
            "client CPU at {:.0}% of {} core(s): the client may be the bottleneck",
            i.client.cpu_percent, i.cores
        ));
    }
    if let Some(steal) = i.steal_share.filter(|s| *s > rules.max_steal_share) {
        reasons.push(format!(
            "the hypervisor stole {:.1}% of the client's CPU time ({:.0} ms a second per CPU, \
             above {}%): the machine, not the server, may have stalled requests; use a \
             dedicated host",
            steal * 100.0,
            steal * 1000.0,
            rules.max_steal_share * 100.0
        ));
    }
    let t = i.tokens;
    if ok > 0 {
        let share = t.mismatched as f64 / ok as f64;
        if share > rules.max_token_mismatch_share {
            reasons.push(format!(
                "the server's prompt token counts differ from ours by > 5% on {:.0}% of requests: \
                 set the scenario's tokenizer to the served model's",
                share * 100.0
            ));
        }
    }
    if t.implausible > 0 {
        reasons.push(format!(
            "the server's usage.completion_tokens was implausible on {} of {ok} requests (above \
             the max_tokens asked for, or under half the content chunks received); those counts \
             were replaced by the server's timings or an estimate from the text",
            t.implausible
        ));
    }
    if i.facts.ignore_eos && i.exact_counts > 0 {
        let share = t.off_plan_output as f64 / i.exact_counts as f64;
        if share > rules.max_off_plan_output_share {
            reasons.push(format!(
                "{:.0}% of responses ({} of {}) had an output length other than the planned \
                 max_tokens although ignore_eos was sent: the server may not honour ignore_eos, \
                 so the load was not the planned one (set `ignore-eos #false` in the target to \
                 let the model stop)",
                share * 100.0,
                t.off_plan_output,
                i.exact_counts
            ));
        }
    }
    if !i.facts.shares_prefixes
        && let Some(share) = t.cached_share
        && share > rules.max_unintended_cache_share
    {
        let repeats = repeated_prompts(i.facts, sent)
            .map(|(d, n)| format!("; the stage sent {n} requests over {d} distinct prompts"))
            .unwrap_or_default();
        reasons.push(format!(
            "the server served {:.0}% of prompt tokens ({} of {}) from its prompt cache, though \
             the plan's prompts share no prefix{repeats}: an earlier run's (or request's) prompts \
             flattered TTFT; set `cache-salt #true` in the target (or `reset-cache`, where the \
             server's endpoint drops all of its cache)",
            share * 100.0,
            t.cached,
            (t.cached as f64 / share).round() as u64,
        ));
    }
    Validity {
        trusted: reasons.is_empty(),
        reasons,
    }
}

/// Notes that do not make the stage untrusted.
pub(super) fn notes(facts: StageFacts, sent: u64, tokens: &Tokens) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some((distinct, n)) = repeated_prompts(facts, sent) {
        notes.push(format!(
            "the stage sent {n} requests over {distinct} distinct prompts (each about {:.1} \
             times): a server's prompt cache serves the repeats",
            n as f64 / distinct as f64
        ));
    }
    if tokens.estimated > 0 {
        notes.push(format!(
            "output token counts of {} request(s) are estimates (no usage from the server: \
             {} by its /tokenize, {} by the scenario's tokenizer)",
            tokens.estimated, tokens.from_tokenize, tokens.from_tokenizer
        ));
    }
    notes
}

/// `(distinct, sent)` when the stage sent more requests than its data set has prompts.
fn repeated_prompts(facts: StageFacts, sent: u64) -> Option<(u64, u64)> {
    facts
        .distinct_prompts
        .filter(|d| *d > 0 && sent > *d)
        .map(|d| (d, sent))
}
