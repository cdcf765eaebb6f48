//! Multi-turn sessions in the runner. A session is one unit of arrival: its first turn leaves
//! at the scheduled instant (open loop) or when its worker is free (closed loop); each later
//! turn leaves once the previous reply is complete and the think time is over, carrying the
//! conversation so far. A turn is due when its think time is over, so think time is never
//! latency. A failed turn ends its session (there is no reply to continue from); an interrupt
//! or the end of the drain time stops it between turns. A session's turns go on one
//! connection of their own while the server keeps it open and the route keeps the session on
//! one URL (sticky connections: `client::Held`).
//! An agentic data set's sessions are graphs of turns instead, run by `agent.rs`; sessions
//! the server keeps (`state="previous-response-id"`) by `kept.rs`.

use std::sync::Arc;

use super::send::{Body, StageShared, since};
use crate::client::Held;
use crate::dataset::{History, SessionState, TurnTokens};
use crate::plan::SessionRecipe;

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
    let first = turn_body(sh, &session, 0, &[]);
    Prepared::Chain { session, first }
}

fn turn_body(sh: &StageShared, session: &SessionRecipe, k: usize, replies: &[String]) -> Body {
    let server = sh
        .plan
        .session_plan(&sh.stage)
        .is_some_and(|s| s.history == History::Server);
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
    let Some(settings) = sh.plan.session_plan(&sh.stage).copied() else {
        return;
    };
    let think = settings.think_time.as_std();
    if settings.state == SessionState::PreviousResponseId {
        return super::kept::run(sh, session, first, scheduled_ns, think).await;
    }
    let mut replies = Vec::new();
    let mut body = first;
    let mut scheduled = scheduled_ns;
    // The session's connection between its turns (sticky, where the route allows).
    let mut held = Held::default();
    for k in 0..session.turns.len() {
        let recipe = session.turn(k);
        if k + 1 == session.turns.len() {
            held.last();
        }
        let at = (scheduled, k as u32);
        let Some(text) = sh.send_held(body, recipe, at, Some(&mut held)).await else {
            return;
        };
        if k + 1 == session.turns.len() {
            return;
        }
        if settings.history == History::Server {
            replies.push(text);
        }
        if !think.is_zero() && !sh.pause(think).await {
            return;
        }
        if sh.interrupt.is_cancelled() || sh.cancel.is_cancelled() {
            return;
        }
        body = turn_body(&sh, &session, k + 1, &replies);
        // Due now: the think time (at the runtime's timer precision) is over.
        scheduled = since(sh.t0);
    }
}
