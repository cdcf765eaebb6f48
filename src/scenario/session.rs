//! `session turns=… think-time=… history=…` inside a dataset: requests become multi-turn chat
//! sessions, each turn carrying the conversation so far. Synthetic data sets need `turns`;
//! ShareGPT data sets take their turns from the conversations (`turns` caps them).

use kdl::KdlNode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ctx::{Ctx, NodeReader};
use crate::dataset::{History, MAX_TURNS};
use crate::units::Duration;

/// A dataset's `session` modifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionSpec {
    /// Synthetic: the number of turns of every session. ShareGPT: at most this many turns of
    /// each conversation (all of them, up to 64, when absent).
    pub turns: Option<u32>,
    /// Pause between a reply and the next turn (not counted as latency).
    pub think_time: Duration,
    /// What later turns carry as the assistant's earlier replies.
    pub history: History,
}

/// Parses `session turns=3 think-time="2s" history="server"`; `None` after an error.
pub(crate) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<SessionSpec> {
    let mut r = NodeReader::new(ctx, node);
    let mut ok = true;
    let turns = match r.prop(ctx, "turns") {
        Some(v) => match ctx.u32_at_least(&v, "turns", 1) {
            Some(n) if n > MAX_TURNS => {
                ctx.error(
                    v.span,
                    format!("`turns` is at most {MAX_TURNS}"),
                    "too many turns",
                    Some(format!("use turns={MAX_TURNS} or fewer")),
                );
                ok = false;
                None
            }
            Some(n) => Some(n),
            None => {
                ok = false;
                None
            }
        },
        None => {
            ok &= node.entry("turns").is_none();
            None
        }
    };
    let think_time = match r.prop(ctx, "think-time") {
        Some(v) => ctx.duration(&v, "think-time"),
        None if node.entry("think-time").is_some() => None,
        None => Some(Duration::ZERO),
    };
    let history = match r.prop(ctx, "history") {
        Some(v) => match ctx.string(&v, "history").as_deref() {
            Some("dataset") => Some(History::Dataset),
            Some("server") => Some(History::Server),
            Some(other) => {
                ctx.error(
                    v.span,
                    format!("unknown history `{other}`"),
                    "not a history source",
                    Some("use history=\"dataset\" or history=\"server\"".into()),
                );
                None
            }
            None => None,
        },
        None if node.entry("history").is_some() => None,
        None => Some(History::Dataset),
    };
    r.finish(ctx);
    if !ok {
        return None;
    }
    Some(SessionSpec {
        turns,
        think_time: think_time?,
        history: history?,
    })
}
