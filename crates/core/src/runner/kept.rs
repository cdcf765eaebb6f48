//! Sessions the server keeps (`session state="previous-response-id"`, the Responses API):
//! every turn asks the server to store its response (`"store":true`), and each turn after the
//! first sends only its new message with the previous response's id
//! (`"previous_response_id"`), where a resent session carries the whole history again.
//!
//! What the record says of such a turn: `planned_input_tokens` is the conversation the
//! server is to process (the previous turn's, its reply as received, the new message), which
//! the server's `usage.input_tokens` is checked against as for any turn; `sent_input_tokens`
//! the tokens the request itself carried; `request_bytes` its size. A turn whose response
//! carried no id a later turn can send back (none, one too long, one that is not printable
//! ASCII) fails as `response_id`, and its session ends there: there is nothing to continue.
//!
//! A turn answered with function calls is answered as an agent would, after the tool time:
//! the next turn sends, with the previous response's id, one `function_call_output` item per
//! usable call (the same rule and the same result text as a resent session's,
//! `session_tools.rs`), and nothing else: the calls are in the server's stored response.

use std::sync::Arc;

use super::send::{Body, StageShared, since};
use super::session_tools as tools;
use crate::client::Held;
use crate::dataset::{Prompt, tool_results};
use crate::metrics::{ErrorKind, IdProblem, RequestRecord};
use crate::plan::SessionRecipe;
use crate::protocol::{ResponseId, ToolCall, continued_body};

/// What the next turn needs of the one before it.
struct Before {
    /// The server's id for its response.
    id: Box<str>,
    /// The conversation the server was to process for it.
    planned: u32,
    /// Its reply's tokens, counted as the server's replies are under `history "server"`
    /// (a tool call's name and arguments included).
    reply: u32,
    /// The function calls it was answered with that the next turn answers (usable ones).
    calls: Vec<ToolCall>,
}

/// Runs a session the server keeps; its first turn (`first`, the whole prompt) is due at
/// `scheduled_ns`.
pub(super) async fn run(
    sh: &Arc<StageShared>,
    session: &SessionRecipe,
    (first, scheduled_ns): (Body, u64),
    held: &mut [Held],
) {
    let Some(settings) = sh.plan.session_plan(&sh.stage).copied() else {
        return;
    };
    let mut body = first.map(|(b, input, max, media)| (continued_body(b, None), input, max, media));
    let mut scheduled = scheduled_ns;
    // The prompt tokens the request carries: the whole prompt on the first turn.
    let mut sent = 0;
    // The turn about to be sent answers the previous one's tool calls.
    let mut answers_calls = false;
    let turns = session.turns.len();
    for k in 0..turns {
        let recipe = session.turn(k);
        let last = k + 1 == turns;
        if last {
            held.iter_mut().for_each(Held::last);
        }
        let planned = body.as_ref().map_or(0, |b| b.1);
        if k == 0 {
            sent = planned;
        }
        let mut id = None;
        let mut calls = Vec::new();
        let tool_result = k > 0 && answers_calls;
        let finish = |rec: &mut RequestRecord| {
            rec.sent_input_tokens = Some(sent);
            rec.tool_result = tool_result;
            if !last && rec.ok() {
                id = take_id(rec);
                calls = std::mem::take(&mut rec.tool_calls);
            }
        };
        let at = (scheduled, k as u32);
        let sent_body = sh.send_held_then(body, recipe, at, (Some(&mut *held), !last), finish);
        let Some(text) = sent_body.await else {
            return;
        };
        let Some(id) = id else {
            return;
        };
        if last {
            return;
        }
        let reply = sh.factory.tokenizer().count(&text).min(u32::MAX as usize) as u32;
        let calls = tools::answerable(calls, session.index, k);
        // The tool runs between a call and its result; a person thinks otherwise.
        let wait = if calls.is_empty() {
            settings.think_time
        } else {
            settings.tool_pause(sh.stage.seed, session.index, k as u32 + 1)
        }
        .as_std();
        if !wait.is_zero() && !sh.pause(wait).await {
            return;
        }
        if sh.interrupt.is_cancelled() || sh.cancel.is_cancelled() {
            return;
        }
        answers_calls = !calls.is_empty();
        let before = Before {
            id,
            planned,
            reply,
            calls,
        };
        (body, sent) = next_body(sh, session, k + 1, &before);
        // Due now: the think time (at the runtime's timer precision) is over.
        scheduled = since(sh.t0);
    }
}

/// The response's usable id, taken from the record; without one the turn fails as
/// `response_id_missing`, `…_too_long` or `…_unprintable` (never showing the id itself, which
/// is the server's text).
fn take_id(rec: &mut RequestRecord) -> Option<Box<str>> {
    let problem = match rec.response_id.take() {
        Some(ResponseId::Usable(id)) => return Some(id),
        None => IdProblem::Missing,
        Some(ResponseId::TooLong(_)) => IdProblem::TooLong,
        Some(ResponseId::Unprintable) => IdProblem::Unprintable,
    };
    rec.error = Some(ErrorKind::ResponseId(problem));
    None
}

/// Turn `k`'s new message alone: the last message of the turn's prompt (its user text, with
/// the data set's retrieved chunks where it has them), without the history the server keeps.
fn new_message(sh: &StageShared, session: &SessionRecipe, k: usize) -> Prompt {
    let whole = sh
        .factory
        .session_prompt(session.dataset, session.item, &session.turns, k, None);
    match whole {
        Prompt::Messages(mut ms) => Prompt::Messages(ms.pop().into_iter().collect()),
        text => text,
    }
}

/// Turn `k`'s body (k > 0) and the prompt tokens it carries: its new message (or, when the
/// previous turn was answered with calls, one `function_call_output` item per call, whose
/// texts are that message's), without this round's salt (the server's copy of the first turn
/// has it), stored and naming the previous response. Its planned input is the conversation
/// the server holds: the previous turn's, that turn's reply (its calls), this message.
fn next_body(sh: &StageShared, session: &SessionRecipe, k: usize, before: &Before) -> (Body, u32) {
    let mut recipe = session.turn(k);
    let prompt = match new_message(sh, session, k) {
        Prompt::Messages(ms) if !before.calls.is_empty() => {
            let text = ms.last().map_or("", |m| m.content.as_str());
            Prompt::Messages(tool_results(text, &before.calls))
        }
        prompt => prompt,
    };
    recipe.input_tokens = tools::count(sh.factory.tokenizer(), &prompt);
    match sh.body_salted(&recipe, prompt, false) {
        Ok((bytes, sent, max, media)) => {
            let planned = before
                .planned
                .saturating_add(before.reply)
                .saturating_add(sent);
            let bytes = continued_body(bytes, Some(&before.id));
            (Ok((bytes, planned, max, media)), sent)
        }
        Err(e) => (Err(e), 0),
    }
}
