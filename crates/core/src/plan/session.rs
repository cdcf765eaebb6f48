//! Multi-turn sessions in the plan: a dataset's session settings (read into the model's
//! `SessionPlan`), and the turns of session `i` of a stage, drawn on demand like request
//! recipes (synthetic turns from the stage's seed, ShareGPT turns from the sampled conversation).

use super::seed::{item_seed, recipe_rng};
use super::{Plan, PlanError, RequestRecipe, SessionPlan, StagePlan};
use crate::dataset::{DatasetSource, History, MAX_TURNS, TurnTokens};
use crate::scenario::{Dataset, DatasetKind};
use crate::units::Duration;

/// The turns of one session, computed on demand: `Plan::session(stage, index)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecipe {
    pub index: u64,
    /// Seed of the prompt text (synthetic) or the item index (ShareGPT).
    pub item: u64,
    pub turns: Vec<TurnTokens>,
    /// Tokens the dataset's context (shared prefix, retrieved chunks) adds to every turn.
    pub context_tokens: u32,
    /// The session's labels (every turn the same model and class).
    pub labels: crate::protocol::Labels,
    /// The stage's data set (a class's own data set is refused on a session stage).
    pub dataset: usize,
}

impl SessionRecipe {
    /// Turn `k` as a request: its input is the whole history under `history "dataset"` (the
    /// runner recounts it under `history "server"`).
    pub fn turn(&self, k: usize) -> RequestRecipe {
        let earlier: u32 = self.turns[..k.min(self.turns.len())]
            .iter()
            .map(|t| t.user_tokens.saturating_add(t.reply_tokens))
            .fold(0u32, u32::saturating_add);
        let t = self.turns.get(k).copied().unwrap_or(TurnTokens {
            user_tokens: 1,
            output_tokens: 1,
            reply_tokens: 1,
        });
        RequestRecipe {
            index: self.index,
            input_tokens: earlier
                .saturating_add(t.user_tokens)
                .saturating_add(self.context_tokens),
            output_tokens: t.output_tokens,
            item: self.item,
            labels: self.labels,
            dataset: self.dataset,
        }
    }
}

impl Plan {
    /// The stage's session settings, when its dataset has sessions.
    pub fn session_plan(&self, stage: &StagePlan) -> Option<&SessionPlan> {
        self.datasets.get(stage.dataset)?.session.as_ref()
    }

    /// How many requests `slice` sends of `stage`, when the plan says: its share of the
    /// stage's requests (open loop, or a closed loop bounded by count), times the turns of a
    /// synthetic session; `None` when the stage is bounded by time only or its sessions'
    /// lengths come from a data set.
    pub fn planned_requests(&self, stage: &StagePlan, slice: super::Slice) -> Option<u64> {
        let units = slice.share(stage.request_count()?);
        match self.session_plan(stage) {
            None => Some(units),
            Some(session) => match self.datasets.get(stage.dataset).map(|d| &d.source) {
                Some(DatasetSource::Synthetic { .. }) => {
                    Some(units.saturating_mul(u64::from(session.turns.max(1))))
                }
                _ => None,
            },
        }
    }

    /// Session `index` of `stage`. A one-turn synthetic session is request `index` itself.
    pub fn session(&self, stage: &StagePlan, index: u64) -> SessionRecipe {
        let d = self.datasets.get(stage.dataset);
        let turns_max = d.and_then(|d| d.session).map_or(1, |s| s.turns.max(1));
        let context_tokens = d.map_or(0, |d| d.context.extra_tokens());
        let mut item = item_seed(stage.seed, index);
        let turns = match d.map(|d| &d.source) {
            Some(DatasetSource::Synthetic {
                input_tokens,
                output_tokens,
            }) => {
                let mut rng = recipe_rng(stage.seed, index);
                (0..turns_max)
                    .map(|_| {
                        // Input first, then output, turn by turn: turn 0 is `request(index)`.
                        let user = input_tokens.sample(&mut rng);
                        let out = output_tokens.sample(&mut rng);
                        TurnTokens {
                            user_tokens: user,
                            output_tokens: out,
                            reply_tokens: out,
                        }
                    })
                    .collect()
            }
            Some(DatasetSource::Items { items, .. }) if !items.is_empty() => {
                item = stage.first_item.wrapping_add(index) % items.len() as u64;
                let it = &items[item as usize];
                if it.turns.is_empty() {
                    vec![TurnTokens {
                        user_tokens: it.input_tokens,
                        output_tokens: it.output_tokens,
                        reply_tokens: it.output_tokens,
                    }]
                } else {
                    it.turns.iter().take(turns_max as usize).copied().collect()
                }
            }
            _ => {
                let r = self.request(stage, index);
                item = r.item;
                vec![TurnTokens {
                    user_tokens: r.input_tokens.saturating_sub(context_tokens),
                    output_tokens: r.output_tokens,
                    reply_tokens: r.output_tokens,
                }]
            }
        };
        SessionRecipe {
            index,
            item,
            turns,
            context_tokens,
            labels: stage.labels(index),
            dataset: stage.dataset,
        }
    }
}

/// The plan's session settings of a dataset, checked against its source.
pub(super) fn session_plan(d: &Dataset) -> Result<Option<SessionPlan>, PlanError> {
    let bad = |detail: &str| PlanError::Session {
        dataset: d.name.value.clone(),
        detail: detail.to_string(),
    };
    // An agentic task is its sessions: every arrival runs one, as its trace says.
    if let DatasetKind::Agentic(_) | DatasetKind::AgenticSynthetic(_) = d.kind {
        if d.session.is_some() {
            return Err(bad(
                "an agentic data set's turns, tool waits, forks and joins come from its tasks: \
                 drop `session`",
            ));
        }
        return Ok(Some(SessionPlan {
            turns: MAX_TURNS,
            think_time: Duration::ZERO,
            history: History::Dataset,
            tool_time: None,
            tool_time_max: None,
            state: Default::default(),
        }));
    }
    let Some(s) = d.session else {
        return Ok(None);
    };
    let turns = match (&d.kind, s.turns) {
        (DatasetKind::Synthetic(_), Some(n)) => n,
        (DatasetKind::Synthetic(_), None) => {
            return Err(bad(
                "a synthetic session needs `turns=N` (e.g. session turns=4 think-time=\"2s\")",
            ));
        }
        (DatasetKind::ShareGpt(_), n) => n.unwrap_or(MAX_TURNS),
        _ => {
            return Err(bad(
                "sessions need a `synthetic` or `sharegpt` data set (their turns are known)",
            ));
        }
    };
    Ok(Some(SessionPlan {
        turns: turns.clamp(1, MAX_TURNS),
        think_time: s.think_time,
        history: s.history,
        tool_time: s.tool_time,
        tool_time_max: s.tool_time_max,
        state: s.state,
    }))
}

impl SessionPlan {
    /// The pause before turn `turn` of session `index` when it answers tool calls: the tool
    /// time, drawn uniformly from the stage's seed, the session and the turn when a range is
    /// given (the same on every run of the plan); the think time when no tool time is set.
    pub fn tool_pause(&self, stage_seed: u64, index: u64, turn: u32) -> Duration {
        let Some(lo) = self.tool_time else {
            return self.think_time;
        };
        let hi = self.tool_time_max.unwrap_or(lo).max(lo);
        let span = hi.as_nanos() - lo.as_nanos();
        if span == 0 {
            return lo;
        }
        let u = super::seed::tool_draw(stage_seed, index, turn);
        let ns = lo.as_nanos() + (u * span as f64) as u64;
        Duration(std::time::Duration::from_nanos(ns.min(hi.as_nanos())))
    }
}
