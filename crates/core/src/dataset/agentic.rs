//! Agentic tasks: a session as a graph of turns. A task is a root session and the subagent
//! sessions it forks; a turn may fork subagents (they start when its reply is complete and
//! run beside the session) and a later turn of the same session may join them (it waits until
//! they are done). Between turns the agent's tool runs for the turn's `wait_ms`. Each turn's
//! prompt is the session's conversation so far plus its new text, so turns share prefixes as
//! a real agent's do and a server's prefix cache can hit.
//!
//! The tasks ([`AgentTask`], in `agent_task.rs`) come from an `agentic` JSONL trace
//! ([`load_agentic`](super::load_agentic)); they are items of the plan, so its hash covers
//! them. Turn `k` of session `s` is built at send time by [`PromptFactory::agent_prompt`].

use super::agent_task::AgentTask;
use super::compose::domain_seed;
use super::{ChatMessage, Prompt, PromptFactory};
use super::{DatasetSource, ItemPrompt};

/// Seed domains of synthetic user texts and replies of agent turns.
const AGENT_USER_DOMAIN: u64 = 0x4167_5500_0000_0000;
const AGENT_REPLY_DOMAIN: u64 = 0x4167_5200_0000_0000;

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
        tool: None,
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
        reference: None,
    }
}
