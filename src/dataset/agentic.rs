//! Agentic tasks: a session as a graph of turns. A task is a root session and the subagent
//! sessions it forks; a turn may fork subagents (they start when its reply is complete and
//! run beside the session) and a later turn of the same session may join them (it waits until
//! they are done). Between turns the agent's tool runs for the turn's `wait`. Each turn's
//! prompt is the session's conversation so far plus its new text, so turns share prefixes as
//! a real agent's do and a server's prefix cache can hit.
//!
//! The tasks come from an `agentic` JSONL trace ([`load_agentic`](super::load_agentic)) or
//! are generated ([`AgenticShape`]); either way they are items of the plan, so its hash covers
//! them. Turn `k` of session `s` is built at send time by
//! [`PromptFactory::agent_prompt`].

use serde::{Deserialize, Serialize};

use super::compose::domain_seed;
use super::{ChatMessage, Prompt, PromptFactory};
use super::{DatasetSource, ItemPrompt};

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

/// Seed domains of synthetic user texts and replies of agent turns.
const AGENT_USER_DOMAIN: u64 = 0x4167_5500_0000_0000;
const AGENT_REPLY_DOMAIN: u64 = 0x4167_5200_0000_0000;

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

impl PromptFactory {
    /// The task of item `item` of data set `dataset`, when it is an agentic one.
    pub fn agent_task(&self, dataset: usize, item: u64) -> Option<&AgentTask> {
        match self.datasets.get(dataset) {
            Some(DatasetSource::Items { items, .. }) => items.get(item as usize)?.agent.as_deref(),
            _ => None,
        }
    }

    /// Turn `k` of session `s` of the task in item `item`: the session's messages so far (user,
    /// assistant, …, user), with the data set's context. Synthetic texts are seeded by the
    /// item, the session and the turn, so every run and every turn sends the same prefix.
    pub fn agent_prompt(&self, dataset: usize, item: u64, s: usize, k: usize) -> Prompt {
        let turns = self
            .agent_task(dataset, item)
            .and_then(|t| t.sessions.get(s))
            .map_or(&[][..], |s| s.turns.as_slice());
        let key = self.keyed(dataset, item) ^ ((s as u64) << 48);
        let mut ms = Vec::with_capacity(2 * k + 1);
        for (j, t) in turns.iter().enumerate().take(k + 1) {
            let user = match &t.text {
                Some(text) => text.clone(),
                None => self.synthetic(
                    t.input_tokens,
                    domain_seed(AGENT_USER_DOMAIN ^ key, j as u64),
                ),
            };
            ms.push(message("user", user));
            if j == k {
                break;
            }
            let reply = match &t.reply {
                Some(text) => text.clone(),
                None => self.synthetic(
                    t.reply_tokens,
                    domain_seed(AGENT_REPLY_DOMAIN ^ key, j as u64),
                ),
            };
            ms.push(message("assistant", reply));
        }
        let context = self.contexts.get(dataset).copied().unwrap_or_default();
        self.with_context(Prompt::Messages(ms), &context, item)
    }
}

fn message(role: &str, content: String) -> ChatMessage {
    ChatMessage {
        role: role.into(),
        content,
    }
}

/// A task as a data set item: its root's first turn stands for it where a single prompt is
/// read (the plan's rendering, the item's lengths).
pub(super) fn task_item(task: AgentTask) -> super::DataItem {
    let first = task.sessions.first().and_then(|s| s.turns.first());
    let (input, output) = first.map_or((1, 1), |t| (t.input_tokens, t.output_tokens));
    let prompt = ItemPrompt::Text(first.and_then(|t| t.text.clone()).unwrap_or_default());
    super::DataItem {
        prompt,
        input_tokens: input,
        output_tokens: output,
        extra: Default::default(),
        images: Vec::new(),
        turns: Vec::new(),
        agent: Some(Box::new(task)),
    }
}
