//! An agentic task's shape, as the plan keeps it: a root session and its subagents, each a
//! list of turns that fork and join others by their index in the task (see `agentic.rs` for
//! what a turn sends, `agentic_load.rs` for the trace file).

use serde::{Deserialize, Serialize};

/// The most sessions (the root and every subagent) one task may have.
pub const MAX_TASK_SESSIONS: usize = 256;
/// The most subagents one turn may fork.
pub const MAX_FORKS: usize = 64;
/// The deepest a subagent may be nested (the root is depth 0).
pub const MAX_DEPTH: usize = 8;
/// The longest tool wait before a turn, in milliseconds (one hour).
pub const MAX_WAIT_MS: u32 = 3_600_000;
/// The most tokens one turn's new text or reply may have.
pub const MAX_TURN_TOKENS: u32 = 1 << 22;

/// One task: `sessions[0]` is the root, the others its subagents (each forked by exactly one
/// turn of an earlier session of the task, so the sessions form a tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTask {
    pub sessions: Vec<AgentSession>,
}

/// One session of a task: its id as the trace names it, and its turns in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    pub id: String,
    pub turns: Vec<AgentTurn>,
}

/// One turn: the text it adds to the conversation, its lengths, the tool wait before it, and
/// the subagents it joins (before it is sent) and forks (once its reply is complete).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentTurn {
    /// The new text (a user message or a tool's result); `None`: synthetic text of
    /// `input_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// The recorded reply later turns carry; `None`: synthetic text of `reply_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    pub reply_tokens: u32,
    /// The tool's time before this turn, from the end of the previous turn's reply (or of the
    /// last joined subagent, whichever is later; a subagent's first turn: from its fork).
    #[serde(default)]
    pub wait_ms: u32,
    /// Sessions (indices into the task's) this turn waits for before it is sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub join: Vec<u16>,
    /// Sessions (indices into the task's) started when this turn's reply is complete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fork: Vec<u16>,
}

impl AgentTask {
    /// Every turn of every session.
    pub fn turn_count(&self) -> u64 {
        self.sessions.iter().map(|s| s.turns.len() as u64).sum()
    }

    /// Turn `k` of session `s`'s position among all the task's turns, sessions in the task's
    /// order (the root first, so a root's turn is its own number): what tells the turns of a
    /// task apart in its requests' trace ids (`protocol::TraceContext`), where a subagent's own
    /// turn number repeats the root's. Below 2^14: at most [`MAX_TASK_SESSIONS`] sessions of at
    /// most `dataset::MAX_TURNS` turns.
    pub fn turn_position(&self, s: usize, k: usize) -> u32 {
        let before: usize = self.sessions.iter().take(s).map(|x| x.turns.len()).sum();
        u32::try_from(before + k).unwrap_or(u32::MAX)
    }

    /// Input tokens of turn `k` of session `s`: the conversation so far and the new text.
    pub fn input_tokens(&self, s: usize, k: usize) -> u32 {
        let Some(session) = self.sessions.get(s) else {
            return 0;
        };
        let mut total = 0u32;
        for (j, t) in session.turns.iter().enumerate().take(k + 1) {
            total = total.saturating_add(t.input_tokens);
            if j < k {
                total = total.saturating_add(t.reply_tokens);
            }
        }
        total
    }
}
