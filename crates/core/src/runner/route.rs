//! Where each request goes: the target's URLs, each with its own client (and so its own
//! connection pool), and the plan's route over them. A target with one URL (or the
//! simulator) is a router of one route whose requests name no URL. The choice is
//! [`Routes::pick`] of the stage's seed, the request's (or session's) global index and the
//! turn: the same in a rerun and on every shard. The session-affinity id, when the target
//! sends one, is drawn the same way, from the seed and the index. The clients are made here
//! (`make_router`), and every URL is asked for its model list before the clock starts
//! (`preflight_all`), an error naming which of several URLs failed.

use std::sync::Arc;

use super::error::RunError;
use super::target::preflight;
use crate::client::{Client, ClientConfig, ClientError, TokenCounter};
use crate::dataset::Tokenizer;
use crate::plan::{Plan, StagePlan};
use crate::protocol::{Routes, affinity_id};
use crate::server_info::ServerInfo;

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

    /// The same routes, each client with a connection pool of its own (a `--cpus` shard's).
    pub(super) fn with_own_pools(&self) -> Router {
        Router {
            routes: self
                .routes
                .iter()
                .map(|r| Route {
                    client: r.client.with_own_pool(),
                    base_url: r.base_url.clone(),
                })
                .collect(),
            table: self.table.clone(),
            affinity: self.affinity,
        }
    }

    /// A session's held connections, one per URL (see `session.rs`).
    pub(super) fn held(&self) -> Vec<crate::client::Held> {
        (0..self.routes.len())
            .map(|_| crate::client::Held::default())
            .collect()
    }

    /// Gives each of a session's held connections back to its URL's pool.
    pub(super) fn release(&self, held: &mut [crate::client::Held]) {
        for (route, h) in self.routes.iter().zip(held) {
            route.client.release(h);
        }
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

/// A preflight's error at URL `index`, saying which of several it was.
fn replica(router: &Router, index: usize, e: RunError) -> RunError {
    match router.all().len() {
        1 => e,
        count => RunError::Replica {
            index,
            count,
            source: Box::new(e),
        },
    }
}

/// One client (and pool) per URL, and the route over them.
pub(super) fn make_router(
    plan: &Plan,
    base_urls: Vec<String>,
    table: Option<crate::protocol::Routes>,
    tokenizer: &Arc<Tokenizer>,
) -> Result<Arc<Router>, RunError> {
    let routes = base_urls
        .into_iter()
        .map(|base_url| {
            let client = make_client(plan, &base_url, tokenizer)?;
            Ok(Route { client, base_url })
        })
        .collect::<Result<Vec<_>, RunError>>()?;
    let affinity = plan.target.request.affinity_header.is_some();
    Ok(Arc::new(Router::new(routes, table, affinity)))
}

/// The preflight of the first URL (which names the model when the plan does not), then of
/// every other with that model, each URL checked as `api`'s base: a dead replica found now is
/// named in the error rather than failing a share of the requests. `None` when interrupted
/// first.
pub(super) async fn preflight_all(
    router: &Router,
    known_model: Option<&str>,
    api: crate::protocol::Api,
    timeout: crate::units::Duration,
    interrupt: &tokio_util::sync::CancellationToken,
) -> Result<Option<(String, tokio::task::JoinHandle<ServerInfo>)>, RunError> {
    let first = router.first();
    let found = preflight(
        first.client.http(),
        &first.base_url,
        known_model,
        api,
        timeout,
        interrupt,
    )
    .await
    .map_err(|e| replica(router, 0, e))?;
    let Some((model, list)) = found else {
        return Ok(None);
    };
    for (index, route) in router.all().iter().enumerate().skip(1) {
        let http = route.client.http();
        let other = preflight(http, &route.base_url, Some(&model), api, timeout, interrupt).await;
        match other.map_err(|e| replica(router, index, e))? {
            // The model list read for the provenance is the first URL's.
            Some((_, theirs)) => theirs.abort(),
            None => return Ok(None),
        }
    }
    Ok(Some((model, list)))
}

struct TokenizerCounter(Arc<Tokenizer>);

impl TokenCounter for TokenizerCounter {
    fn count(&self, text: &str) -> usize {
        self.0.count(text)
    }
}

fn make_client(
    plan: &Plan,
    base_url: &str,
    tokenizer: &Arc<Tokenizer>,
) -> Result<Client, RunError> {
    let request = &plan.target.request;
    let api_key = match &request.api_key_env {
        Some(var) => Some(std::env::var(var).map_err(|_| ClientError::MissingApiKey(var.clone()))?),
        None => None,
    };
    let config = ClientConfig {
        url: crate::protocol::join(base_url, request.api.path()),
        headers: request.headers.clone(),
        api_key,
        timeout: request.timeout.as_std(),
        pool_size: 1024,
        api: request.api,
        stream: request.stream,
        max_event_bytes: usize::try_from(plan.target.run.max_event_bytes).unwrap_or(usize::MAX),
        server_root: Some(crate::protocol::server_root(base_url)),
        affinity_header: request.affinity_header.clone(),
        priority_header: request.priority_header.clone(),
    };
    Ok(Client::new(
        config,
        Arc::new(TokenizerCounter(tokenizer.clone())),
    )?)
}
