//! Where each request goes: the target's URLs, each with its own client (and so its own
//! connection pool), and the plan's route over them. A target with one URL (or the
//! simulator) is a router of one route whose requests name no URL. The choice is
//! [`Routes::pick`] of the stage's seed, the request's (or session's) global index and the
//! turn: the same in a rerun and on every shard. The session-affinity id, when the target
//! sends one, is drawn the same way, from the seed and the index.

use crate::client::Client;
use crate::plan::StagePlan;
use crate::protocol::{Routes, affinity_id};

/// One URL of the target and the client that sends to it.
pub(super) struct Route {
    pub(super) client: Client,
    /// The API base (`…/v1`), as the target gave it (credentials and all: never shown).
    pub(super) base_url: String,
}

/// The target's routes and how requests are spread over them.
pub(super) struct Router {
    /// At least one.
    routes: Vec<Route>,
    /// The plan's route when the target lists several URLs.
    table: Option<Routes>,
    /// Requests carry a session-affinity id.
    affinity: bool,
}

/// Where one request goes and what it says about its session.
pub(super) struct Pick<'a> {
    pub(super) route: &'a Route,
    /// The URL's index, when the target lists several.
    pub(super) url: Option<u16>,
    pub(super) affinity: Option<String>,
}

impl Router {
    /// A router over `routes` (at least one, in the order of `table`'s URLs).
    pub(super) fn new(routes: Vec<Route>, table: Option<Routes>, affinity: bool) -> Router {
        debug_assert!(!routes.is_empty());
        Router {
            routes,
            table,
            affinity,
        }
    }

    /// The first URL: the one whose model list names the model, and whose server describes
    /// itself in the results.
    pub(super) fn first(&self) -> &Route {
        &self.routes[0]
    }

    pub(super) fn all(&self) -> &[Route] {
        &self.routes
    }

    /// Whether a session keeps one connection between its turns: when its turns all go to
    /// one URL (one URL, or `route "by-session"`). A session moved between URLs could not
    /// reuse a connection to another host.
    pub(super) fn sticky(&self) -> bool {
        self.routes.len() == 1
            || self
                .table
                .as_ref()
                .is_some_and(|t| t.policy == crate::protocol::RoutePolicy::BySession)
    }

    /// Request (or session) `index`'s turn `turn` in `stage`.
    pub(super) fn pick(&self, stage: &StagePlan, index: u64, turn: u32) -> Pick<'_> {
        let (route, url) = match &self.table {
            Some(t) if self.routes.len() > 1 => {
                let k = t.pick(stage.seed, index, turn).min(self.routes.len() - 1);
                (&self.routes[k], Some(k as u16))
            }
            _ => (self.first(), None),
        };
        Pick {
            route,
            url,
            affinity: self.affinity.then(|| affinity_id(stage.seed, index)),
        }
    }
}
