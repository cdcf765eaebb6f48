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
    /// Achieved over planned sending rate below this flags the run; so does a closed loop
    /// whose clients held no request in flight for more than `1 - min_rate_ratio` of their
    /// time (the same tolerance: a load within 1 % of the plan is the planned load).
    pub min_rate_ratio: f64,
    /// Client CPU above this share of the available cores is noted as a cause (it flags
    /// nothing by itself: only its measured effects do).
    pub max_cpu_share: f64,
    /// Share of requests whose token counts disagree with the server's above this flags the run.
    pub max_token_mismatch_share: f64,
    /// Share of the client's CPUs' time taken by the hypervisor (steal) above this is noted
    /// as a cause, and named as the cause of a measured effect (late sends, a closed loop's
    /// idle clients); it flags nothing by itself.
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
    /// The data set checks its answers (`quality`): the stage counts what they said, scored
    /// by this scorer when it names one.
    pub quality: Option<Option<&'static str>>,
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

/// The stage's validity, and notes on causes that had no measured effect (steal, a busy
/// client CPU): a cause flags nothing by itself, only the effects the client measured do.
pub(super) fn judge(i: &Inputs<'_>, rules: &ValidityRules) -> (Validity, Vec<String>) {
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
    let notes = cause_notes(i, rules, &flags);
    (
        Validity::from_flags(flags.into_iter().map(Flag::from).collect()),
        notes,
    )
}

/// What made the client late or idle, from the machine's figures.
fn cause(i: &Inputs<'_>, rules: &ValidityRules) -> crate::metrics::LagCause {
    lag_cause(&LagInputs {
        host: i.client.host_load(),
        own_cores: i.client.cpu_percent / 100.0,
        cores: i.cores.max(1),
        steal_share: i.steal_share,
        max_steal_share: rules.max_steal_share,
        send_lag_p99_ms: i.client.send_lag_ms.p99,
        poll_idle: i.poll_idle,
    })
}

/// Steal and a busy client CPU, when no effect of the client's was flagged: said once, as
/// what was seen and had no measured effect on what was sent.
fn cause_notes(i: &Inputs<'_>, rules: &ValidityRules, flags: &[FlagKind]) -> Vec<String> {
    let client_effect = flags.iter().any(|f| {
        matches!(
            f,
            FlagKind::SendLag { .. }
                | FlagKind::RateShortfall { .. }
                | FlagKind::IdleClients { .. }
        )
    });
    if client_effect {
        return Vec::new();
    }
    let mut seen = Vec::new();
    if let Some(steal) = i.steal_share.filter(|s| *s > rules.max_steal_share) {
        seen.push(format!(
            "the hypervisor stole {:.1}% of its CPU time",
            steal * 100.0
        ));
    }
    let cores = i.cores.max(1);
    if i.client.cpu_percent / 100.0 > rules.max_cpu_share * f64::from(cores) {
        seen.push(format!(
            "it used {:.0}% of {}",
            i.client.cpu_percent,
            crate::units::counted(cores, "core", "cores")
        ));
    }
    if seen.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "client: {}, with no measured effect (send lag p99 {:.2} ms{})",
        seen.join(" and "),
        i.client.send_lag_ms.p99,
        i.client
            .closed_loop_idle_percent
            .map(|p| format!(", clients idle {p:.2}% of their time"))
            .unwrap_or_default()
    )]
}

/// The client's own effects on the load: late sends, a rate short of the plan, a closed loop's
/// clients idle when they should have had a request in flight; each with its cause.
fn client_flags(i: &Inputs<'_>, rules: &ValidityRules) -> Vec<FlagKind> {
    let mut flags = Vec::new();
    let lag = i.client.send_lag_ms.p99;
    let limit = rules.send_lag_limit_ms(i.ttft.p50);
    let cause = cause(i, rules);
    if lag > limit {
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
    let max_idle = 1.0 - rules.min_rate_ratio;
    if let Some(idle) = i
        .client
        .closed_loop_idle_percent
        .map(|p| p / 100.0)
        .filter(|s| *s > max_idle)
    {
        flags.push(FlagKind::IdleClients {
            share: idle,
            max_share: max_idle,
            cause,
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
