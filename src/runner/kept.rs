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

use std::sync::Arc;

use super::send::{Body, StageShared, since};
use crate::client::Held;
use crate::dataset::Prompt;
use crate::metrics::{ErrorKind, IdProblem, RequestRecord};
use crate::plan::SessionRecipe;
use crate::protocol::{ResponseId, continued_body};

/// What the next turn needs of the one before it.
struct Before {
    /// The server's id for its response.
    id: Box<str>,
    /// The conversation the server was to process for it.
    planned: u32,
    /// Its reply's tokens, counted as the server's replies are under `history "server"`.
    reply: u32,
}

/// Runs a session the server keeps; its first turn (`first`, the whole prompt) is due at
/// `scheduled_ns`.
pub(super) async fn run(
    sh: &Arc<StageShared>,
    session: &SessionRecipe,
    (first, scheduled_ns): (Body, u64),
    held: &mut [Held],
) {
    let Some(think) = sh
        .plan
        .session_plan(&sh.stage)
        .map(|s| s.think_time.as_std())
    else {
        return;
    };
    let mut body = first.map(|(b, input, max, media)| (continued_body(b, None), input, max, media));
    let mut scheduled = scheduled_ns;
    // The prompt tokens the request carries: the whole prompt on the first turn.
    let mut sent = 0;
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
        let finish = |rec: &mut RequestRecord| {
            rec.sent_input_tokens = Some(sent);
            if !last && rec.ok() {
                id = take_id(rec);
            }
        };
        let at = (scheduled, k as u32);
        let sent_body = sh.send_held_then(body, recipe, at, Some(&mut *held), finish);
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
        if !think.is_zero() && !sh.pause(think).await {
            return;
        }
        if sh.interrupt.is_cancelled() || sh.cancel.is_cancelled() {
            return;
        }
        let before = Before { id, planned, reply };
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

/// Turn `k`'s body (k > 0) and the prompt tokens it carries: its new message, without this
/// round's salt (the server's copy of the first turn has it), stored and naming the previous
/// response. Its planned input is the conversation the server holds: the previous turn's,
/// that turn's reply, this message.
fn next_body(sh: &StageShared, session: &SessionRecipe, k: usize, before: &Before) -> (Body, u32) {
    let mut recipe = session.turn(k);
    let prompt = new_message(sh, session, k);
    let t = sh.factory.tokenizer();
    recipe.input_tokens = match &prompt {
        Prompt::Messages(ms) => ms.iter().map(|m| t.count(&m.content)).sum::<usize>(),
        Prompt::Text(text) => t.count(text),
    }
    .min(u32::MAX as usize) as u32;
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
