//! The validity verdict: whether a stage's numbers can be trusted, and if not, why — as typed
//! flags (`flags.rs`) that say what each can distort — and notes worth reading beside them.
//! Rules on the client (send lag against what it distorts, with its cause; CPU, steal, keeping
//! to the schedule), on the server's answers (nothing succeeded, implausible or off-plan
//! counts, prompt counts that disagree) and on the workload (a prompt cache the plan did not
//! intend). See `docs/metrics.md`.

use super::cause::{LagInputs, lag_cause};
use super::dist::Dist;
use super::flags::{Flag, FlagKind};
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
    /// TTFT, or for a pooling API's stage (`whole`) E2E: when the answer begins.
    pub ttft: &'a Dist,
    pub whole: bool,
    pub client: &'a ClientHealth,
    /// An open-loop stage's pace: the span of its first turns' scheduled instants over the
    /// span of their actual sends, at most 1.
    pub pace: Option<f64>,
    pub cores: u32,
    pub steal_share: Option<f64>,
    pub poll_idle: bool,
    pub facts: StageFacts,
    /// Requests whose output length could be compared with the plan (exact counts).
    pub exact_counts: u64,
}

pub(super) fn judge(i: &Inputs<'_>, rules: &ValidityRules) -> Validity {
    let mut flags: Vec<FlagKind> = Vec::new();
    let sent = i.requests.sent;
    let ok = i.requests.ok;
    if sent > 0 && ok == 0 {
        flags.push(FlagKind::NothingSucceeded {
            sent,
            errors: i.errors.clone(),
        });
    }
    flags.extend(client_flags(i, rules));
    flags.extend(load_flags(i, rules));
    Validity::from_flags(flags.into_iter().map(Flag::from).collect())
}

/// The client's own health: late sends (with their cause), its rate, its CPU, steal.
fn client_flags(i: &Inputs<'_>, rules: &ValidityRules) -> Vec<FlagKind> {
    let mut flags = Vec::new();
    let lag = i.client.send_lag_ms.p99;
    let limit = rules.send_lag_limit_ms(i.ttft.p50);
    let cores = i.cores.max(1);
    let own_cores = i.client.cpu_percent / 100.0;
    if lag > limit {
        let cause = lag_cause(&LagInputs {
            host: i.client.host_load(),
            own_cores,
            cores,
            steal_share: i.steal_share,
            max_steal_share: rules.max_steal_share,
            send_lag_p99_ms: lag,
            poll_idle: i.poll_idle,
        });
        flags.push(FlagKind::SendLag {
            p99_ms: lag,
            limit_ms: limit,
            floor_ms: rules.max_send_lag_p99_ms,
            ttft_share: rules.max_send_lag_ttft_share,
            ttft_p50_ms: i.ttft.p50,
            whole: i.whole,
            cause,
        });
    }
    if let Some(ratio) = i.pace.filter(|r| *r < rules.min_rate_ratio) {
        flags.push(FlagKind::RateShortfall {
            achieved_share: ratio,
            min_share: rules.min_rate_ratio,
        });
    }
    if own_cores > rules.max_cpu_share * f64::from(cores) {
        flags.push(FlagKind::ClientCpu {
            cpu_percent: i.client.cpu_percent,
            cores: i.cores,
        });
    }
    if let Some(steal) = i.steal_share.filter(|s| *s > rules.max_steal_share) {
        flags.push(FlagKind::Steal {
            share: steal,
            max_share: rules.max_steal_share,
        });
    }
    flags
}

/// Whether the server's answers show the load was the planned one: token counts, output
/// lengths, and a prompt cache the plan did not intend.
fn load_flags(i: &Inputs<'_>, rules: &ValidityRules) -> Vec<FlagKind> {
    let mut flags = Vec::new();
    let (sent, ok) = (i.requests.sent, i.requests.ok);
    let t = i.tokens;
    if ok > 0 {
        let share = t.mismatched as f64 / ok as f64;
        if share > rules.max_token_mismatch_share {
            flags.push(FlagKind::TokenMismatch {
                share,
                max_share: rules.max_token_mismatch_share,
            });
        }
    }
    if t.implausible > 0 {
        flags.push(FlagKind::ImplausibleUsage {
            requests: t.implausible,
            ok,
        });
    }
    if i.facts.ignore_eos && i.exact_counts > 0 {
        let share = t.off_plan_output as f64 / i.exact_counts as f64;
        if share > rules.max_off_plan_output_share {
            flags.push(FlagKind::OffPlanOutput {
                share,
                requests: t.off_plan_output,
                exact: i.exact_counts,
            });
        }
    }
    if !i.facts.shares_prefixes
        && let Some(share) = t.cached_share
        && share > rules.max_unintended_cache_share
    {
        flags.push(FlagKind::UnintendedCache {
            share,
            cached: t.cached,
            prompt_tokens: (t.cached as f64 / share).round() as u64,
            distinct_prompts: repeated_prompts(i.facts, sent).map(|(d, _)| d),
            sent,
        });
    }
    flags
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
