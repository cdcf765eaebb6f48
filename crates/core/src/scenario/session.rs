//! `session turns=… think-time=… history=… state=… tool-time=…` inside a dataset: requests
//! become multi-turn chat sessions, each turn carrying the conversation so far (or, with
//! `state="previous-response-id"`, naming the server's stored copy of it) and answering the
//! previous turn's tool calls, when it made some. Synthetic data sets need `turns`; ShareGPT
//! data sets take their turns from the conversations (`turns` caps them). The state is
//! written here rather than in the target because it is how a session's turns travel, beside
//! `history`, which it constrains; the target's API is checked against it once every node is
//! read.

use kdl::KdlNode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ctx::{Ctx, NodeReader};
use crate::dataset::{History, MAX_TURNS, SessionState};
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
    /// The tool's time before a turn that answers tool calls, instead of the think time
    /// (`tool-time`); drawn uniformly up to `tool_time_max` when that is given. Not latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_time: Option<Duration>,
    /// `tool-time-max`: the upper bound of the tool time's uniform draw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_time_max: Option<Duration>,
    /// How later turns carry the conversation: resent whole, or kept by the server
    /// (`previous-response-id`, the Responses API only).
    #[serde(default, skip_serializing_if = "SessionState::is_resend")]
    pub state: SessionState,
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
    let (tool_time, tool_time_max) = tool_times(ctx, &mut r, node);
    let written_history = node.entry("history").is_some();
    let state = state(
        ctx,
        &mut r,
        node,
        written_history.then_some(history).flatten(),
    );
    r.finish(ctx);
    if !ok {
        return None;
    }
    let state = state?;
    Some(SessionSpec {
        turns,
        think_time: think_time?,
        // The server keeps its own replies: they are the history.
        history: match state {
            SessionState::PreviousResponseId => History::Server,
            SessionState::Resend => history?,
        },
        state,
        tool_time: tool_time?,
        tool_time_max: tool_time_max?,
    })
}

/// `tool-time="300ms" tool-time-max="2s"`: the tool's time before a tool-result turn, fixed
/// or uniform between the two; `None` (outer) after an error.
#[allow(clippy::type_complexity)]
fn tool_times(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    node: &KdlNode,
) -> (Option<Option<Duration>>, Option<Option<Duration>>) {
    let mut read = |ctx: &mut Ctx<'_>, key: &'static str| match r.prop(ctx, key) {
        Some(v) => ctx.duration(&v, key).map(|d| Some((d, v.span))),
        None if node.entry(key).is_some() => None,
        None => Some(None),
    };
    let min = read(ctx, "tool-time");
    let max = read(ctx, "tool-time-max");
    let strip = |d: Option<Option<(Duration, miette::SourceSpan)>>| d.map(|d| d.map(|d| d.0));
    match (&min, &max) {
        (Some(None), Some(Some((_, span)))) => {
            ctx.error(
                *span,
                "`tool-time-max` needs `tool-time`",
                "no lower bound",
                Some("write both: tool-time=\"200ms\" tool-time-max=\"1s\"".into()),
            );
            return (None, None);
        }
        (Some(Some((lo, _))), Some(Some((hi, span)))) if hi < lo => {
            ctx.error(
                *span,
                format!("`tool-time-max` ({hi}) is below `tool-time` ({lo})"),
                "below the lower bound",
                Some("make tool-time-max at least tool-time".into()),
            );
            return (None, None);
        }
        _ => {}
    }
    (strip(min), strip(max))
}

/// `state="resend"|"previous-response-id"`; `None` after an error. The server keeping the
/// conversation keeps its own replies, so a written `history="dataset"` contradicts it.
fn state(
    ctx: &mut Ctx<'_>,
    r: &mut NodeReader<'_>,
    node: &KdlNode,
    history: Option<History>,
) -> Option<SessionState> {
    let Some(v) = r.prop(ctx, "state") else {
        return node
            .entry("state")
            .is_none()
            .then_some(SessionState::Resend);
    };
    let state = match ctx.string(&v, "state").as_deref() {
        Some("resend") => SessionState::Resend,
        Some("previous-response-id") => SessionState::PreviousResponseId,
        Some(other) => {
            ctx.error(
                v.span,
                format!("unknown session state `{other}`"),
                "not a way to carry the conversation",
                Some(
                    "use state=\"resend\" (every turn resends the history) or \
                     state=\"previous-response-id\" (the Responses API keeps it)"
                        .into(),
                ),
            );
            return None;
        }
        None => return None,
    };
    if state == SessionState::PreviousResponseId && history == Some(History::Dataset) {
        ctx.error(
            v.span,
            "`state=\"previous-response-id\"` keeps the server's own replies",
            "the server holds the conversation, so the data set's replies are never sent",
            Some("drop history=\"dataset\" (or write history=\"server\")".into()),
        );
        return None;
    }
    Some(state)
}
