//! What a stage plans to give an assertion to be decided on: the requests of a plain stage or
//! a sweep point (a session's turns counted, since every turn is a request), the rounds of a
//! stage run in rounds (judged across them), or the probes of a search (a rate search's
//! answer is judged on its answer probe, which sends about rate × probe length requests); and
//! one row of the table, an assertion's need against its stage's reach ([`AssertionNeed`]).

use crate::arrival::SearchAxis;
use crate::dataset::DatasetSource;
use crate::plan::{Load, Plan, StagePlan};
use crate::sla::Need;
use crate::stats::rounds_median;

/// One assertion on one stage (or one point of a sweep): what it needs, and what the stage
/// sends toward it.
#[derive(Debug, Clone, PartialEq)]
pub struct AssertionNeed {
    /// The stage as the scenario names it (a sweep's or search's stage, not its points).
    pub stage: String,
    /// The sweep point the row is about (`profile@10rps`), each judged on its own requests.
    pub point: Option<String>,
    /// The assertion as written.
    pub assertion: String,
    pub need: Need,
    /// What the stage (or point) sends toward it.
    pub reach: Reach,
    /// Judged on the stage's confidence sequence (`until-decided`), which needs more.
    pub sequential: bool,
    /// What the need counts: `requests`, or for a share of the answers, the answers it is
    /// of (`scored answers` for `accuracy`).
    pub counts: &'static str,
}

impl AssertionNeed {
    /// How what the stage sends stands against what the assertion needs to pass.
    pub fn standing(&self) -> Standing {
        match self.need {
            Need::Requests(n) => self.reach.standing(n),
            Need::Never => Standing::TooFew,
            Need::OnValue => Standing::Enough,
        }
    }

    /// The stage (or some of a search's answers) cannot send what the assertion needs to
    /// pass: a warning is due.
    pub fn short(&self) -> bool {
        matches!(self.standing(), Standing::TooFew | Standing::Below(_))
    }
}

/// What one stage (or one sweep point) sends toward an assertion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reach {
    /// This many requests at most (an `until-decided` stage's maximum); `sessions`: that many
    /// sessions send them (their turns counted).
    Requests { count: u64, sessions: Option<u64> },
    /// Bounded by time only (a closed loop for a duration, an agentic data set's tasks): the
    /// count is known only once it has run.
    Unknown,
    /// `rounds` rounds of `each` requests: decided across the rounds once there are `enough`
    /// (the sign-test interval of their median), on the pooled requests before that.
    Rounds {
        rounds: u32,
        each: Option<u64>,
        enough: u32,
    },
    /// A rate search's probes, each `probe_s` long at a rate between `from` and `to`: a probe
    /// at rate r sends about r × `probe_s` requests, and the answer is judged on one of them.
    RateSearch { from: f64, to: f64, probe_s: f64 },
    /// A concurrency search's closed-loop probes, `probe_s` each: counts unknown ahead.
    ClientSearch { probe_s: f64 },
    /// The answers an LLM judge scores toward `judge_score`: the stage's sample (`sample`,
    /// or every request when it sends fewer), and for a label (`share`, its weight's share of
    /// the stage's requests) about that share of it, `count`.
    Judged {
        count: u64,
        sample: u64,
        share: Option<f64>,
    },
}

/// How a reach stands against a need of `n` requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Standing {
    Enough,
    /// It cannot reach `n`: the assertion can fail but never pass.
    TooFew,
    /// A search whose probes under this rate (req/s) send fewer than `n`: an answer there
    /// cannot pass it.
    Below(f64),
    /// Not known ahead.
    Unknown,
}

impl Reach {
    /// What `stage` of `plan` sends toward each of its assertions.
    pub fn of(plan: &Plan, stage: &StagePlan, confidence: f64) -> Reach {
        if let Load::Search(spec) = &stage.load {
            let probe_s = spec.probe.as_secs_f64();
            return if spec.axis == SearchAxis::Rate {
                Reach::RateSearch {
                    from: spec.from.per_sec(),
                    to: spec.to.per_sec(),
                    probe_s,
                }
            } else {
                Reach::ClientSearch { probe_s }
            };
        }
        let each = requests(plan, stage);
        if stage.rounds >= 2 {
            return Reach::Rounds {
                rounds: stage.rounds,
                each,
                enough: rounds_enough(confidence),
            };
        }
        match each {
            Some(count) => Reach::Requests {
                count,
                sessions: plan.session_plan(stage).and_then(|_| stage.request_count()),
            },
            None => Reach::Unknown,
        }
    }

    /// How this reach stands against `n` requests needed.
    pub fn standing(&self, n: u64) -> Standing {
        match *self {
            Reach::Requests { count, .. } if count < n => Standing::TooFew,
            Reach::Requests { .. } => Standing::Enough,
            Reach::Rounds { rounds, enough, .. } if rounds >= enough => Standing::Enough,
            Reach::Rounds {
                rounds,
                each: Some(each),
                ..
            } if u64::from(rounds).saturating_mul(each) < n => Standing::TooFew,
            Reach::Rounds { each: Some(_), .. } => Standing::Enough,
            Reach::RateSearch { from, to, probe_s } => {
                // The rate whose probe sends `n` on average.
                let lowest = n as f64 / probe_s;
                if lowest > to {
                    Standing::TooFew
                } else if lowest > from {
                    Standing::Below(lowest)
                } else {
                    Standing::Enough
                }
            }
            Reach::Judged { count, .. } if count < n => Standing::TooFew,
            Reach::Judged { .. } => Standing::Enough,
            Reach::Rounds { each: None, .. } | Reach::Unknown | Reach::ClientSearch { .. } => {
                Standing::Unknown
            }
        }
    }
}

/// What a plain stage's (or sweep point's) LLM judge scores toward `judge_score` (on a label
/// with `on`): its sample of the stage's requests, split by the label's weight. `None` for
/// another metric, a stage without a judge, or a reach not counted in requests.
pub fn judged(
    plan: &Plan,
    stage: &StagePlan,
    reach: Reach,
    on: Option<&crate::protocol::LabelRef>,
) -> Option<Reach> {
    let Reach::Requests { count, .. } = reach else {
        return None;
    };
    let judge = plan
        .datasets
        .get(stage.dataset)?
        .quality
        .as_ref()?
        .judge
        .as_ref()?;
    let sample = count.min(u64::from(judge.sample));
    let share = on.and_then(|on| {
        let g = stage.groups.iter().find(|g| g.by == on.by)?;
        let total: u64 = g.labels.iter().map(|l| u64::from(l.weight)).sum();
        let mine = g.labels.iter().find(|l| l.name == on.name)?;
        (total > 0).then(|| f64::from(mine.weight) / total as f64)
    });
    let count = share.map_or(sample, |p| (sample as f64 * p).floor() as u64);
    Some(Reach::Judged {
        count,
        sample,
        share,
    })
}

/// The requests `stage` sends, every session's turns counted; `None` when only running it
/// tells (a closed loop bounded by time, an agentic data set's tasks).
fn requests(plan: &Plan, stage: &StagePlan) -> Option<u64> {
    let units = stage.request_count()?;
    let Some(session) = plan.session_plan(stage) else {
        return Some(units);
    };
    match &plan.datasets.get(stage.dataset)?.source {
        DatasetSource::Synthetic { .. } => {
            Some(units.saturating_mul(u64::from(session.turns.max(1))))
        }
        DatasetSource::Items { items, .. } if !items.is_empty() => {
            // Session i is item (first + i) mod len, and keeps at most `turns` of its turns.
            let most = session.turns.max(1) as usize;
            let turns: Option<Vec<u64>> = items
                .iter()
                .map(|it| match (&it.agent, it.turns.len()) {
                    (Some(_), _) => None,
                    (None, 0) => Some(1),
                    (None, k) => Some(k.min(most) as u64),
                })
                .collect();
            let turns = turns?;
            let len = turns.len() as u64;
            let whole: u64 = turns.iter().sum();
            let rest: u64 = (0..units % len)
                .map(|i| turns[((stage.first_item + i) % len) as usize])
                .sum();
            Some((units / len).saturating_mul(whole).saturating_add(rest))
        }
        _ => None,
    }
}

/// The fewest rounds whose median's sign-test interval reaches `confidence` (6 at 95 %).
fn rounds_enough(confidence: f64) -> u32 {
    (1..=64u32)
        .find(|&k| {
            let values = vec![0.0; k as usize];
            matches!(rounds_median(&values, confidence), Ok(Some(r)) if r.meets_requested)
        })
        .unwrap_or(64)
}
