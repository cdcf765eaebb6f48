//! The check of a session the server keeps against the target it runs on, once every node is
//! read: apart from `session.rs` because it reads the target, which holds the session spec.

use kdl::KdlNode;

use super::ctx::Ctx;
use super::model::{Endpoint, Target};

/// A session the server keeps (`state="previous-response-id"`) on a target whose API has no
/// `previous_response_id` (every API but `responses`), whose `body { }` sets the fields such a
/// session writes on every turn (`store`, `previous_response_id`), or whose route may send a
/// session's turns to different URLs (a server holds only the responses it gave): refused
/// where the state is written.
pub(crate) fn check_state(ctx: &mut Ctx<'_>, nodes: &[KdlNode], target: &Target) {
    let api = target.request.api;
    let clash = ["store", "previous_response_id"]
        .into_iter()
        .find(|k| target.request.extra_body.contains_key(*k));
    let moves = match &target.endpoint {
        Endpoint::Urls(r) => {
            r.urls.len() > 1 && r.policy != crate::protocol::RoutePolicy::BySession
        }
        _ => false,
    };
    if api.kind().keeps_responses() && clash.is_none() && !moves {
        return;
    }
    let states = nodes
        .iter()
        .filter(|n| n.name().value() == "dataset")
        .filter_map(KdlNode::children)
        .flat_map(|c| c.nodes().iter().filter(|n| n.name().value() == "session"))
        .filter_map(|n| n.entry("state"))
        .filter(|e| e.value().as_string() == Some("previous-response-id"));
    for entry in states {
        let span = ctx.trim(entry.span());
        if !api.kind().keeps_responses() {
            ctx.error(
                span,
                format!(
                    "`state=\"previous-response-id\"` needs the Responses API; the target speaks `{}`",
                    api.as_str()
                ),
                "only `api \"responses\"` has `previous_response_id`",
                Some(
                    "write api \"responses\" in the target, or drop state= (every turn then \
                     resends the history)"
                        .into(),
                ),
            );
        } else if let Some(key) = clash {
            ctx.error(
                span,
                format!("the target's `body` sets `{key}`, which this session sets on every turn"),
                "a session the server keeps writes `store` and `previous_response_id` itself",
                Some(format!("drop `{key}` from the target's body")),
            );
        } else {
            ctx.error(
                span,
                "a session the server keeps must stay on one URL, and the target's route may \
                 move its turns between URLs",
                "the next URL does not hold the previous response",
                Some(
                    "write route \"by-session\" in the target (a session's turns all go to \
                     one URL), or drop state= (every turn then resends the history)"
                        .into(),
                ),
            );
        }
    }
}
