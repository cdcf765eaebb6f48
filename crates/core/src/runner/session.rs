//! Multi-turn sessions in the runner. A session is one unit of arrival: its first turn leaves
//! at the scheduled instant (open loop) or when its worker is free (closed loop); each later
//! turn leaves once the previous reply is complete and the think time is over, carrying the
//! conversation so far. A turn is due when its think time is over, so think time is never
//! latency. A failed turn ends its session (there is no reply to continue from); an interrupt
//! or the end of the drain time stops it between turns. A session's turns go on a connection
//! of their own to each URL they are routed to, while the server keeps it open (sticky
//! connections: `client::Held`, one per URL, so a session that a round-robin route moves
//! between URLs finds its connection to each again); they go back to the pools at its end.
//! A turn the server answers with tool calls is answered by the next turn with tool results,
//! after the tool time instead of the think time (`session_tools.rs`,
//! `dataset/session_tools.rs`).
//! An agentic data set's sessions are graphs of turns instead, run by `agent.rs`; sessions
//! the server keeps (`state="previous-response-id"`) by `kept.rs`.

use std::sync::Arc;

use super::send::{Body, StageShared, since};
use crate::client::Held;
use crate::dataset::{History, SessionState, TurnTokens, with_tool_results};
use crate::plan::SessionRecipe;
use crate::protocol::ToolCall;

use super::session_tools as tools;

/// A session ready to start: its first request's body, and its turns (a chain) or its task
/// (an agentic data set's item, run by `agent.rs`).
pub(super) enum Prepared {
    Chain { session: SessionRecipe, first: Body },
    Task { index: u64, item: u64, first: Body },
}

/// Computes session `index` and builds its first body (off the hot path).
pub(super) fn prepare(sh: &StageShared, index: u64) -> Prepared {
    if let Some(item) = super::agent::task_item(sh, index) {
        let first = super::agent::turn_body(sh, index, item, 0, 0);
        return Prepared::Task { index, item, first };
    }
    let session = sh.plan.session(&sh.stage, index);
    let first = turn_body(sh, &session, 0, (&[], &[]));
    Prepared::Chain { session, first }
}

fn turn_body(
    sh: &StageShared,
    session: &SessionRecipe,
    k: usize,
    (replies, answered): (&[String], &[Vec<ToolCall>]),
) -> Body {
    let history = sh
        .plan
        .session_plan(&sh.stage)
        .map_or(History::Dataset, |s| s.history);
    let server = history == History::Server;
    let mut recipe = session.turn(k);
    if server && k > 0 {
        // The planned count holds the data set's replies; the server's replies replace them.
        let planned: u32 = session.turns[..k]
            .iter()
            .map(|t: &TurnTokens| t.reply_tokens)
            .fold(0, u32::saturating_add);
        let received: usize = replies
            .iter()
            .map(|r| sh.factory.tokenizer().count(r))
            .sum();
        recipe.input_tokens = recipe
            .input_tokens
            .saturating_sub(planned)
            .saturating_add(received.min(u32::MAX as usize) as u32);
    }
    let prompt = sh.factory.session_prompt(
        sh.stage.dataset,
        session.item,
        &session.turns,
        k,
        server.then_some(replies),
    );
    let prompt = with_tool_results(prompt, k, answered, (history, session.index));
    if answered.iter().take(k).any(|c| !c.is_empty()) {
        // Calls and results are not the planned text: the prompt is counted as sent.
        recipe.input_tokens = tools::count(sh.factory.tokenizer(), &prompt);
    }
    sh.body_for(&recipe, prompt)
}

/// Runs a prepared session to its end; its first turn is due at `scheduled_ns`.
pub(super) async fn run(sh: Arc<StageShared>, prepared: Prepared, scheduled_ns: u64) {
    let (session, first) = match prepared {
        Prepared::Chain { session, first } => (session, first),
        Prepared::Task { index, item, first } => {
            return super::agent::run(sh, index, item, first, scheduled_ns).await;
        }
    };
    // The session's connections between its turns, one per URL.
    let mut held = sh.router.held();
    let kept = sh
        .plan
        .session_plan(&sh.stage)
        .is_some_and(|s| s.state == SessionState::PreviousResponseId);
    if kept {
        super::kept::run(&sh, &session, (first, scheduled_ns), &mut held).await;
    } else {
        turns(&sh, &session, (first, scheduled_ns), &mut held).await;
    }
    sh.router.release(&mut held);
}

/// Sends a chain session's turns, on its `held` connections.
async fn turns(
    sh: &Arc<StageShared>,
    session: &SessionRecipe,
    (first, scheduled_ns): (Body, u64),
    held: &mut [Held],
) {
    let Some(settings) = sh.plan.session_plan(&sh.stage).copied() else {
        return;
    };
    let mut replies = Vec::new();
    // The tool calls each turn was answered with (empty: a plain reply).
    let mut answered: Vec<Vec<ToolCall>> = Vec::new();
    let mut body = first;
    let mut scheduled = scheduled_ns;
    for k in 0..session.turns.len() {
        let recipe = session.turn(k);
        if k + 1 == session.turns.len() {
            held.iter_mut().for_each(Held::last);
        }
        let at = (scheduled, k as u32);
        let tool_result = answered.last().is_some_and(|c| !c.is_empty());
        let next = k + 1 < session.turns.len();
        let Some((text, calls)) = sh
            .send_turn(body, recipe, at, (Some(&mut *held), tool_result, next))
            .await
        else {
            return;
        };
        if k + 1 == session.turns.len() {
            return;
        }
        if settings.history == History::Server {
            replies.push(text);
        }
        answered.push(tools::answerable(calls, session.index, k));
        // The tool runs between a call and its result; a person thinks otherwise. Neither is
        // latency: the next turn is due when the pause is over.
        let wait = if answered[k].is_empty() {
            settings.think_time
        } else {
            settings.tool_pause(sh.stage.seed, session.index, k as u32 + 1)
        };
        if !wait.as_std().is_zero() && !sh.pause(wait.as_std()).await {
            return;
        }
        if sh.interrupt.is_cancelled() || sh.cancel.is_cancelled() {
            return;
        }
        body = turn_body(sh, session, k + 1, (&replies, &answered));
        // Due now: the think time (at the runtime's timer precision) is over.
        scheduled = since(sh.t0);
    }
}
