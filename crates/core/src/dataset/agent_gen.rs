//! Synthetic agentic tasks (`agentic tasks=N { … }`): the same tasks a trace holds, drawn from
//! a seed and a shape (turns per session, how often a turn forks, how many subagents, how
//! deep, tool waits and lengths). A session that forks on turn `k` joins its subagents on
//! turn `k + 1` (the agent waits for what it delegated); subagents may fork in turn, down to
//! `depth`, within the task's [`MAX_TASK_SESSIONS`]. Texts are synthetic, seeded per task,
//! session and turn, so turns share prefixes as a trace's do.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::agent_task::{
    AgentSession, AgentTask, AgentTurn, MAX_DEPTH, MAX_FORKS, MAX_TASK_SESSIONS, MAX_TURN_TOKENS,
    MAX_WAIT_MS,
};
use super::agentic::task_item;
use super::{DataItem, LengthDist, MAX_TURNS};

/// The most tasks a shape may generate (requests cycle through them).
pub const MAX_GENERATED_TASKS: u32 = 10_000;

/// The most turns a shape may generate, over all its tasks (2^20), counted at their most
/// ([`AgenticShape::max_turns`]): the plan holds every turn (about 250 bytes each, with the
/// hash's pass over them), so this keeps `plan`, `validate` and `run` within some 300 MiB
/// for every shape the scenario accepts. Without it the widest shape (10,000 tasks of 256
/// sessions of 64 turns: 164 million turns) took more than 20 GiB.
pub const MAX_GENERATED_TURNS: u64 = 1 << 20;

/// The limits of a shape's distributions: the largest value each may draw (the generator
/// clamps to them; the scenario refuses a distribution that can draw more), and what it is.
pub const SHAPE_LIMITS: [(&str, u32, &str); 5] = [
    ("turns", MAX_TURNS, "turns a session may have"),
    ("fan-out", MAX_FORKS as u32, "subagents one turn may fork"),
    (
        "tool-ms",
        MAX_WAIT_MS,
        "milliseconds a tool may take (an hour)",
    ),
    (
        "input-tokens",
        MAX_TURN_TOKENS,
        "tokens a turn's new text may have",
    ),
    (
        "output-tokens",
        MAX_TURN_TOKENS,
        "tokens a turn's output may have",
    ),
];

/// The shape of generated agentic tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgenticShape {
    /// Distinct tasks generated; arrivals take them in turn.
    pub tasks: u32,
    /// Turns of every session (root and subagents), at most 64.
    pub turns: LengthDist,
    /// The chance (0..=1) that a turn other than its session's last forks subagents.
    pub fork_chance: f64,
    /// Subagents a forking turn starts, at most 64.
    pub fan_out: LengthDist,
    /// How deep subagents nest (0: none; at most 8).
    pub depth: u32,
    /// The tool's time before every turn but a session's first, in milliseconds.
    pub tool_ms: LengthDist,
    /// The new text of every turn, in tokens.
    pub input_tokens: LengthDist,
    /// Every turn's output (and reply) length, in tokens.
    pub output_tokens: LengthDist,
}

impl AgenticShape {
    /// The most sessions (the root and its subagents) one task can have: each session's
    /// turns but its last may fork `fan-out` subagents, down to `depth`, within
    /// [`MAX_TASK_SESSIONS`]; 1 when nothing forks.
    pub fn max_sessions(&self) -> u64 {
        let turns = u64::from(self.turns.bounds().1.min(MAX_TURNS));
        let fan = u64::from(self.fan_out.bounds().1).clamp(1, MAX_FORKS as u64);
        let cap = MAX_TASK_SESSIONS as u64;
        if self.fork_chance <= 0.0 || turns < 2 {
            return 1;
        }
        let per = (turns - 1) * fan;
        let (mut level, mut total) = (1u64, 1u64);
        for _ in 0..self.depth.min(MAX_DEPTH as u32) {
            level = level.saturating_mul(per);
            total = total.saturating_add(level);
            if total >= cap {
                return cap;
            }
        }
        total
    }

    /// The most turns the shape can generate over all its tasks: tasks × sessions per task ×
    /// turns per session, each at its most (what `plan` holds, whatever the seed draws).
    pub fn max_turns(&self) -> u64 {
        let turns = u64::from(self.turns.bounds().1.min(MAX_TURNS));
        u64::from(self.tasks.min(MAX_GENERATED_TASKS))
            .saturating_mul(self.max_sessions())
            .saturating_mul(turns)
    }

    /// The distributions, named as the scenario writes them (for checking them).
    pub fn lengths(&self) -> [(&'static str, &LengthDist); 5] {
        [
            ("turns", &self.turns),
            ("fan-out", &self.fan_out),
            ("tool-ms", &self.tool_ms),
            ("input-tokens", &self.input_tokens),
            ("output-tokens", &self.output_tokens),
        ]
    }
}

/// The shape's tasks as data set items, from `seed`.
pub fn generate_agentic(shape: &AgenticShape, seed: u64) -> Vec<DataItem> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x4167_656E_7469_6300);
    (0..shape.tasks.min(MAX_GENERATED_TASKS))
        .map(|t| task_item(task(shape, t, &mut rng)))
        .collect()
}

fn task(shape: &AgenticShape, t: u32, rng: &mut ChaCha8Rng) -> AgentTask {
    let mut sessions: Vec<AgentSession> = Vec::new();
    // Sessions to generate, breadth first: their index and depth.
    let mut queue = std::collections::VecDeque::from([(0usize, 0u32)]);
    sessions.push(AgentSession {
        id: format!("task{t}"),
        turns: Vec::new(),
    });
    while let Some((s, depth)) = queue.pop_front() {
        let n = shape.turns.sample(rng).clamp(1, MAX_TURNS) as usize;
        let mut turns: Vec<AgentTurn> = Vec::with_capacity(n);
        for k in 0..n {
            let output = shape.output_tokens.sample(rng).clamp(1, MAX_TURN_TOKENS);
            let mut turn = AgentTurn {
                text: None,
                input_tokens: shape.input_tokens.sample(rng).clamp(1, MAX_TURN_TOKENS),
                output_tokens: output,
                reply: None,
                reply_tokens: output,
                wait_ms: if k == 0 {
                    0
                } else {
                    shape.tool_ms.sample(rng).min(MAX_WAIT_MS)
                },
                join: turns.last().map(|p| p.fork.clone()).unwrap_or_default(),
                fork: Vec::new(),
            };
            let room = MAX_TASK_SESSIONS.saturating_sub(sessions.len());
            if k + 1 < n
                && depth < shape.depth.min(MAX_DEPTH as u32)
                && room > 0
                && rng.random_bool(shape.fork_chance.clamp(0.0, 1.0))
            {
                let m = (shape.fan_out.sample(rng) as usize)
                    .clamp(1, MAX_FORKS)
                    .min(room);
                for _ in 0..m {
                    let c = sessions.len();
                    turn.fork.push(c as u16);
                    sessions.push(AgentSession {
                        id: format!("task{t}-sub{c}"),
                        turns: Vec::new(),
                    });
                    queue.push_back((c, depth + 1));
                }
            }
            turns.push(turn);
        }
        sessions[s].turns = turns;
    }
    AgentTask { sessions }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> AgenticShape {
        AgenticShape {
            tasks: 50,
            turns: LengthDist::Uniform { min: 2, max: 6 },
            fork_chance: 0.5,
            fan_out: LengthDist::Uniform { min: 1, max: 3 },
            depth: 2,
            tool_ms: LengthDist::Fixed { value: 40 },
            input_tokens: LengthDist::Uniform { min: 8, max: 64 },
            output_tokens: LengthDist::Fixed { value: 16 },
        }
    }

    fn tasks(shape: &AgenticShape, seed: u64) -> Vec<AgentTask> {
        generate_agentic(shape, seed)
            .into_iter()
            .map(|i| *i.agent.unwrap())
            .collect()
    }

    #[test]
    fn forks_are_joined_on_the_next_turn_within_depth() {
        let s = shape();
        let ts = tasks(&s, 3);
        assert_eq!(ts.len(), 50);
        assert_eq!(ts, tasks(&s, 3), "the same seed, the same tasks");
        let mut forks = 0;
        for t in &ts {
            // Every subagent is forked by exactly one turn and joined by the next one.
            let mut parent = vec![0usize; t.sessions.len()];
            for (i, session) in t.sessions.iter().enumerate() {
                assert!((2..=6).contains(&session.turns.len()));
                assert_eq!(session.turns[0].wait_ms, 0);
                assert!(session.turns.last().unwrap().fork.is_empty());
                for (k, turn) in session.turns.iter().enumerate() {
                    assert!(k == 0 || turn.wait_ms == 40);
                    for &c in &turn.fork {
                        forks += 1;
                        parent[c as usize] += 1;
                        assert!(usize::from(c) > i);
                        assert!(session.turns[k + 1].join.contains(&c));
                    }
                }
            }
            assert!(parent[1..].iter().all(|&p| p == 1));
            // Depth: a subagent of a subagent of a subagent would be depth 3.
            let mut depth = vec![0u32; t.sessions.len()];
            for (i, session) in t.sessions.iter().enumerate() {
                for turn in &session.turns {
                    for &c in &turn.fork {
                        depth[c as usize] = depth[i] + 1;
                    }
                }
            }
            assert!(depth.iter().all(|&d| d <= 2));
        }
        assert!(forks > 0);
    }

    #[test]
    fn the_most_turns_bound_what_is_generated() {
        let s = shape();
        // Uniform 2..6 turns, up to 3 subagents per forking turn, depth 2: 1 + 15 + 225,
        // within a task's 256 sessions.
        assert_eq!(s.max_sessions(), 241);
        assert_eq!(s.max_turns(), 50 * 241 * 6);
        let drawn: u64 = tasks(&s, 3).iter().map(AgentTask::turn_count).sum();
        assert!(drawn <= s.max_turns(), "{drawn}");
        let flat = AgenticShape {
            fork_chance: 0.0,
            ..shape()
        };
        assert_eq!(flat.max_turns(), 50 * 6);
        let widest = AgenticShape {
            tasks: MAX_GENERATED_TASKS,
            turns: LengthDist::Fixed { value: 64 },
            fork_chance: 1.0,
            fan_out: LengthDist::Fixed { value: 64 },
            depth: 8,
            ..shape()
        };
        assert_eq!(widest.max_turns(), 10_000 * 256 * 64);
        assert!(widest.max_turns() > MAX_GENERATED_TURNS);
    }

    #[test]
    fn a_wide_shape_stays_within_a_task_s_sessions() {
        let wide = AgenticShape {
            tasks: 3,
            turns: LengthDist::Fixed { value: 64 },
            fork_chance: 1.0,
            fan_out: LengthDist::Fixed { value: 64 },
            depth: 8,
            ..shape()
        };
        for t in tasks(&wide, 1) {
            assert_eq!(t.sessions.len(), MAX_TASK_SESSIONS);
        }
        let flat = AgenticShape {
            depth: 0,
            ..shape()
        };
        assert!(tasks(&flat, 1).iter().all(|t| t.sessions.len() == 1));
    }
}
