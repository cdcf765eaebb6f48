//! Why a stage is untrusted, as typed flags: each [`Flag`] says what happened, with its
//! numbers, and what it can distort ([`Distortion`]), so that a verdict can ask each flag
//! whether it could have produced that verdict, in that direction. `Validity::reasons` are
//! these flags rendered as sentences. See `docs/metrics.md` (validity) and `docs/sla.md`.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cause::LagCause;
use super::def::{MetricDef, Shape, Worse};

/// One reason a stage's numbers cannot be taken as they are, and where it was raised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Flag {
    #[serde(flatten)]
    pub kind: FlagKind,
    /// The round (from 1) of a stage run in rounds that raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// The shard of a merged run that raised it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
}

impl From<FlagKind> for Flag {
    fn from(kind: FlagKind) -> Flag {
        Flag {
            kind,
            round: None,
            shard: None,
        }
    }
}

/// What a flag says happened. Each variant's numbers are the ones its sentence shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "flag", rename_all = "snake_case")]
pub enum FlagKind {
    /// Requests were sent and none succeeded: the stage measured nothing.
    NothingSucceeded { sent: u64, errors: String },
    /// The client sent later than the schedule by more than the stage may be.
    SendLag {
        p99_ms: f64,
        limit_ms: f64,
        floor_ms: f64,
        ttft_share: f64,
        /// The p50 of the stage's first event: TTFT, or E2E for a pooling API (`whole`).
        ttft_p50_ms: f64,
        /// A pooling API's stage, whose answers come whole: `ttft_p50_ms` is its E2E p50.
        /// *Added in schema 3.*
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        whole: bool,
        /// What made it late, and the fix.
        cause: LagCause,
    },
    /// The client sent at less than the planned rate.
    RateShortfall { achieved_share: f64, min_share: f64 },
    /// A closed loop's clients held no request in flight for more than `max_share` of their
    /// time between their first and last sends (reading an answer, preparing and sending the
    /// next): the server had less load than planned, by this measured share.
    /// *Added in schema 3.*
    IdleClients {
        share: f64,
        max_share: f64,
        /// What kept the client, and the fix.
        cause: LagCause,
    },
    /// The client used nearly all of its cores. Raised by results written before 0.3 only:
    /// a busy CPU is now a cause of a measured effect, or a note.
    ClientCpu { cpu_percent: f64, cores: u32 },
    /// The hypervisor took time from the client's CPUs. Raised by results written before
    /// 0.3 only: steal is now a cause of a measured effect, or a note.
    Steal { share: f64, max_share: f64 },
    /// The server's prompt token counts disagree with the plan's.
    TokenMismatch { share: f64, max_share: f64 },
    /// The server's `usage.completion_tokens` was impossible on some requests.
    ImplausibleUsage { requests: u64, ok: u64 },
    /// With `ignore_eos`, outputs of another length than planned.
    OffPlanOutput {
        share: f64,
        requests: u64,
        exact: u64,
    },
    /// The server's prompt cache served prompts the plan meant it to compute.
    UnintendedCache {
        share: f64,
        cached: u64,
        prompt_tokens: u64,
        /// Distinct prompts of the data set, when the stage sent more requests than it has
        /// (`sent`), repeating them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        distinct_prompts: Option<u64>,
        sent: u64,
    },
    /// A GPU throttled during the stage.
    GpuThrottled {
        device: String,
        source: String,
        throttled_share: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clock_ratio_min: Option<f64>,
        reasons: Vec<String>,
    },
    /// A shard started too far from the agreed instant.
    ShardSkew {
        offset_ms: f64,
        clock_error_ms: f64,
        max_skew_ms: f64,
    },
    /// A shard ran without a coordinator.
    Uncoordinated,
    /// A coordinated shard recorded no agreed start for the stage.
    NoAgreedStart,
    /// Shards whose numbers are missing from a merged result.
    ShardsMissing { shards: Vec<u32>, of: u32 },
    /// A reason from a result written before flags were typed (schema 2): its sentence only.
    Other { reason: String },
}

/// What a flag can do to a stage's figures.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Distortion {
    /// The client added delay to what it measured (it sent late, or read late): what each
    /// metric's [`super::LateClient`] says a late client can do.
    ClientDelay,
    /// The server received less load than planned, which can only have spared it: every
    /// figure may look better than the planned load would have made it, and rates lower (or,
    /// spared an overload, higher).
    LoadShortfall,
    /// The server did less work than planned (its cache served prompts the plan meant it to
    /// compute): every figure may only look better.
    Flattering,
    /// The server's hardware ran slower than it can (a throttled GPU): every figure may only
    /// look worse.
    ServerSlowed,
    /// Output token counts are not the server's own: figures computed from them may be off
    /// either way.
    OutputCounts,
    /// The load or the sample was not the planned one: any figure, either way.
    Any,
}

/// Which ways a distortion can move a metric's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Moves {
    pub up: bool,
    pub down: bool,
}

impl Moves {
    fn toward(def: &MetricDef, worse: bool, better: bool) -> Moves {
        let (w, b) = (worse, better);
        match def.worse {
            Worse::Higher => Moves { up: w, down: b },
            Worse::Lower => Moves { up: b, down: w },
        }
    }
}

impl Distortion {
    /// Which ways it can move `def`'s value.
    pub fn moves(self, def: &MetricDef) -> Moves {
        // Measured before the first request (the server's start-up): no flag of the run can
        // have moved it.
        if def.late_client == super::LateClient::BeforeLoad {
            return Moves::default();
        }
        // The load, a warm cache or a slow GPU change when an answer comes, not what it says.
        let answers = def.late_client == super::LateClient::Answers;
        match self {
            Distortion::LoadShortfall | Distortion::Flattering | Distortion::ServerSlowed
                if answers =>
            {
                Moves::default()
            }
            Distortion::ClientDelay => {
                Moves::toward(def, def.client_can_worsen(), def.client_can_improve())
            }
            // Less load spares the server (better figures) and completes less per second; but
            // a rate is not only lowered by it: spared an overload that makes an engine preempt
            // and recompute, a server can complete more per second than the planned load would
            // have let it. So a rate's pass needs the planned load as much as a latency's.
            Distortion::LoadShortfall => {
                let rate = def.kind.shape() == Shape::Rate;
                Moves::toward(def, rate, true)
            }
            Distortion::Flattering => Moves::toward(def, false, true),
            Distortion::ServerSlowed => Moves::toward(def, true, false),
            Distortion::OutputCounts => Moves {
                up: def.from_output_tokens,
                down: def.from_output_tokens,
            },
            Distortion::Any => Moves {
                up: true,
                down: true,
            },
        }
    }

    /// What it is, for a sentence: "the client's delay".
    pub fn noun(self) -> &'static str {
        match self {
            Distortion::ClientDelay => "the client's own delay",
            Distortion::LoadShortfall => "a load short of the plan",
            Distortion::Flattering => "the server's prompt cache",
            Distortion::ServerSlowed => "the throttled GPU",
            Distortion::OutputCounts => "output counts that are not the server's",
            Distortion::Any => "a load or sample other than the planned one",
        }
    }
}

impl FlagKind {
    /// What this flag can distort. A late client of a closed loop also paces the load: its
    /// workers send their next request only once they have read the last, so where that
    /// shortfall was not measured (`paced_unmeasured`: a session stage, a result written
    /// before 0.3) the client's delay is a shortfall of load too; where it was, the shortfall
    /// is its own flag (`idle_clients`).
    pub fn distortions(&self, paced_unmeasured: bool) -> &'static [Distortion] {
        use Distortion as D;
        match self {
            FlagKind::SendLag { .. } | FlagKind::ClientCpu { .. } | FlagKind::Steal { .. } => {
                if paced_unmeasured {
                    &[D::ClientDelay, D::LoadShortfall]
                } else {
                    &[D::ClientDelay]
                }
            }
            FlagKind::RateShortfall { .. } | FlagKind::IdleClients { .. } => &[D::LoadShortfall],
            FlagKind::UnintendedCache { .. } => &[D::Flattering],
            FlagKind::GpuThrottled { .. } => &[D::ServerSlowed],
            FlagKind::ImplausibleUsage { .. } => &[D::OutputCounts],
            FlagKind::NothingSucceeded { .. }
            | FlagKind::TokenMismatch { .. }
            | FlagKind::OffPlanOutput { .. }
            | FlagKind::ShardSkew { .. }
            | FlagKind::Uncoordinated
            | FlagKind::NoAgreedStart
            | FlagKind::ShardsMissing { .. }
            | FlagKind::Other { .. } => &[D::Any],
        }
    }

    /// Its name in `results.json` (`send_lag`, …).
    pub fn name(&self) -> &'static str {
        match self {
            FlagKind::NothingSucceeded { .. } => "nothing_succeeded",
            FlagKind::SendLag { .. } => "send_lag",
            FlagKind::RateShortfall { .. } => "rate_shortfall",
            FlagKind::IdleClients { .. } => "idle_clients",
            FlagKind::ClientCpu { .. } => "client_cpu",
            FlagKind::Steal { .. } => "steal",
            FlagKind::TokenMismatch { .. } => "token_mismatch",
            FlagKind::ImplausibleUsage { .. } => "implausible_usage",
            FlagKind::OffPlanOutput { .. } => "off_plan_output",
            FlagKind::UnintendedCache { .. } => "unintended_cache",
            FlagKind::GpuThrottled { .. } => "gpu_throttled",
            FlagKind::ShardSkew { .. } => "shard_skew",
            FlagKind::Uncoordinated => "uncoordinated",
            FlagKind::NoAgreedStart => "no_agreed_start",
            FlagKind::ShardsMissing { .. } => "shards_missing",
            FlagKind::Other { .. } => "other",
        }
    }
}

impl fmt::Display for Flag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(round) = self.round {
            write!(f, "round {round}: ")?;
        }
        if let Some(shard) = self.shard {
            write!(f, "shard {shard}: ")?;
        }
        self.kind.fmt(f)
    }
}

impl fmt::Display for FlagKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlagKind::NothingSucceeded { sent, errors } => write!(
                f,
                "no request succeeded ({sent} sent; {errors}): the stage measured nothing"
            ),
            FlagKind::SendLag {
                p99_ms,
                limit_ms,
                floor_ms,
                ttft_share,
                ttft_p50_ms,
                whole,
                cause,
            } => write!(
                f,
                "send lag p99 {p99_ms:.2} ms exceeds {limit_ms:.2} ms (the larger of {floor_ms} \
                 ms and {:.0}% of {} p50 {ttft_p50_ms:.2} ms): the client could not keep to \
                 the schedule; {cause}",
                ttft_share * 100.0,
                if *whole { "E2E" } else { "TTFT" },
            ),
            FlagKind::RateShortfall {
                achieved_share,
                min_share,
            } => write!(
                f,
                "achieved {:.1}% of the planned sending rate (below {:.1}%)",
                achieved_share * 100.0,
                min_share * 100.0
            ),
            FlagKind::IdleClients {
                share,
                max_share,
                cause,
            } => write!(
                f,
                "the closed loop's clients held no request in flight for {:.1}% of their time \
                 (above {:.0}%): the server had that much less load than planned; {cause}",
                share * 100.0,
                max_share * 100.0
            ),
            FlagKind::ClientCpu { cpu_percent, cores } => write!(
                f,
                "client CPU at {cpu_percent:.0}% of {}: the client may be the \
                 bottleneck; give it more CPUs (`--cpus`) or split the load over shards \
                 (`--shard`)",
                crate::units::counted(*cores, "core", "cores")
            ),
            FlagKind::Steal { share, max_share } => write!(
                f,
                "the hypervisor stole {:.1}% of the client's CPU time ({:.0} ms a second per \
                 CPU, above {}%): the machine, not the server, may have stalled requests; use \
                 a dedicated host",
                share * 100.0,
                share * 1000.0,
                max_share * 100.0
            ),
            FlagKind::TokenMismatch { .. }
            | FlagKind::ImplausibleUsage { .. }
            | FlagKind::OffPlanOutput { .. }
            | FlagKind::UnintendedCache { .. }
            | FlagKind::GpuThrottled { .. } => self.fmt_server(f),
            FlagKind::ShardSkew { .. }
            | FlagKind::Uncoordinated
            | FlagKind::NoAgreedStart
            | FlagKind::ShardsMissing { .. } => self.fmt_shards(f),
            FlagKind::Other { reason } => f.write_str(reason),
        }
    }
}

// The sentences in three groups (the client's, the server's, the shards'), so that each
// match stays readable; `Display::fmt` above is the exhaustive one that picks the group.
impl FlagKind {
    /// What the server did to the figures.
    fn fmt_server(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlagKind::TokenMismatch { share, .. } => write!(
                f,
                "the server's prompt token counts differ from ours by > 5% on {:.0}% of \
                 requests: set the scenario's tokenizer to the served model's",
                share * 100.0
            ),
            FlagKind::ImplausibleUsage { requests, ok } => write!(
                f,
                "the server's usage.completion_tokens was implausible on {requests} of {ok} \
                 requests (above the max_tokens asked for, or under half the content chunks \
                 received); those counts were replaced by the server's timings or an estimate \
                 from the text"
            ),
            FlagKind::OffPlanOutput {
                share,
                requests,
                exact,
            } => write!(
                f,
                "{:.0}% of responses ({requests} of {exact}) had an output length other than \
                 the planned max_tokens although ignore_eos was sent: the server may not honour \
                 ignore_eos, so the load was not the planned one (set `ignore-eos #false` in \
                 the target to let the model stop)",
                share * 100.0
            ),
            FlagKind::UnintendedCache {
                share,
                cached,
                prompt_tokens,
                distinct_prompts,
                sent,
            } => {
                let repeats = distinct_prompts
                    .map(|d| format!("; the stage sent {sent} requests over {d} distinct prompts"))
                    .unwrap_or_default();
                write!(
                    f,
                    "the server served {:.0}% of prompt tokens ({cached} of {prompt_tokens}) from \
                     its prompt cache, though the plan's prompts share no prefix{repeats}: an \
                     earlier run's (or request's) prompts flattered TTFT; set `cache-salt #true` \
                     in the target (or `reset-cache`, where the server's endpoint drops all of \
                     its cache)",
                    share * 100.0
                )
            }
            FlagKind::GpuThrottled {
                device,
                source,
                throttled_share,
                clock_ratio_min,
                reasons,
            } => {
                let ratio = clock_ratio_min.map_or_else(|| "unknown".into(), |r| format!("{r:.2}"));
                let reasons = if reasons.is_empty() {
                    "none reported".to_string()
                } else {
                    reasons.join(", ")
                };
                write!(
                    f,
                    "GPU throttled during the stage (GPU {device} via {source}: {:.0}% of \
                     samples throttled, lowest clock ratio {ratio}, reasons: {reasons}); latency \
                     and throughput are suspect",
                    throttled_share * 100.0
                )
            }
            other => unreachable!("not a server flag: {other:?}"),
        }
    }

    /// How the shards of a distributed run lined up.
    fn fmt_shards(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlagKind::ShardSkew {
                offset_ms,
                clock_error_ms,
                max_skew_ms,
            } => write!(
                f,
                "started {offset_ms:+.3} ms from the agreed instant (clock error \
                 ±{clock_error_ms:.3} ms), beyond the {max_skew_ms} ms skew bound: the shards' \
                 schedules do not line up"
            ),
            FlagKind::Uncoordinated => f.write_str(
                "ran without a coordinator, so its schedule lines up with the other shards' only \
                 as well as their start times did",
            ),
            FlagKind::NoAgreedStart => f.write_str("no agreed start recorded for this stage"),
            FlagKind::ShardsMissing { shards, of } => {
                let list: Vec<String> = shards.iter().map(u32::to_string).collect();
                write!(
                    f,
                    "partial: no numbers from shard(s) {} of {of}: their share of the plan is not \
                     in these figures",
                    list.join(", ")
                )
            }
            other => unreachable!("not a shard flag: {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{CountMetric, LatencyMetric, Metric};

    fn moves(d: Distortion, m: Metric) -> (bool, bool) {
        let mv = d.moves(m.def());
        (mv.up, mv.down)
    }

    #[test]
    fn each_distortion_moves_the_metrics_it_can() {
        let ttft = Metric::Latency(LatencyMetric::Ttft);
        let itl = Metric::Latency(LatencyMetric::Itl);
        let errors = Metric::Count(CountMetric::ErrorRate);
        let output = Metric::Count(CountMetric::OutputThroughput);
        let goodput = Metric::Count(CountMetric::Goodput);
        // A late client only raises TTFT, moves ITL either way, lowers throughput.
        assert_eq!(moves(Distortion::ClientDelay, ttft), (true, false));
        assert_eq!(moves(Distortion::ClientDelay, itl), (true, true));
        assert_eq!(moves(Distortion::ClientDelay, output), (false, true));
        assert_eq!(moves(Distortion::ClientDelay, errors), (true, false));
        // Less load: latencies and errors down, rates down (or up, spared an overload),
        // goodput up.
        assert_eq!(moves(Distortion::LoadShortfall, ttft), (false, true));
        assert_eq!(moves(Distortion::LoadShortfall, output), (true, true));
        assert_eq!(moves(Distortion::LoadShortfall, goodput), (true, false));
        // What the answers say: no load, cache, GPU or client delay changes it.
        let accuracy = Metric::Count(CountMetric::Accuracy);
        for d in [
            Distortion::ClientDelay,
            Distortion::LoadShortfall,
            Distortion::Flattering,
            Distortion::ServerSlowed,
            Distortion::OutputCounts,
        ] {
            assert_eq!(moves(d, accuracy), (false, false), "{d:?}");
        }
        assert_eq!(moves(Distortion::Any, accuracy), (true, true));
        // A cache only flatters; a throttled GPU only hurts.
        assert_eq!(moves(Distortion::Flattering, ttft), (false, true));
        assert_eq!(moves(Distortion::Flattering, output), (true, false));
        assert_eq!(moves(Distortion::ServerSlowed, ttft), (true, false));
        // Token counts touch only what is computed from them.
        assert_eq!(moves(Distortion::OutputCounts, ttft), (false, false));
        let tpot = Metric::Latency(LatencyMetric::Tpot);
        assert_eq!(moves(Distortion::OutputCounts, tpot), (true, true));
    }

    #[test]
    fn flags_round_trip_through_json_with_their_scope() {
        let flag = Flag {
            kind: FlagKind::Steal {
                share: 0.3,
                max_share: 0.01,
            },
            round: Some(2),
            shard: None,
        };
        let json = serde_json::to_value(&flag).unwrap();
        assert_eq!(json["flag"], "steal");
        assert_eq!(json["round"], 2);
        assert_eq!(serde_json::from_value::<Flag>(json).unwrap(), flag);
        assert!(
            flag.to_string()
                .starts_with("round 2: the hypervisor stole 30.0%")
        );
        // A closed loop's late client paces its load too.
        assert_eq!(flag.kind.distortions(false), &[Distortion::ClientDelay]);
        assert!(
            flag.kind
                .distortions(true)
                .contains(&Distortion::LoadShortfall)
        );
    }
}
