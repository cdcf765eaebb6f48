//! The run's own server, when the scenario has a `server` block (docs/server.md): started and
//! waited for before the first request, watched during the run (its exit interrupts the run at
//! once), stopped after the last, and what happened recorded. `server.log` is written into the
//! run's directory beside results.json.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::results::Results;
use crate::scenario::{Endpoint, Scenario};
use crate::server::{Place, Running, Stopped, Target};

/// The server's log, in the run's directory.
pub const SERVER_LOG: &str = "server.log";

/// The scenario's server, started and ready, with the token the run is to stop on: `interrupt`'s
/// child, cancelled too when the server exits. `None` without a `server` block.
pub(super) async fn start(
    scenario: &Scenario,
    dir: &Path,
    interrupt: &CancellationToken,
) -> Result<Option<(Running, CancellationToken)>, Error> {
    let Some(spec) = &scenario.server else {
        return Ok(None);
    };
    let place = Place {
        base_dir: scenario.source.base_dir(),
        log: dir.join(SERVER_LOG),
        target: target(scenario),
    };
    let running = crate::server::start(spec, &place, interrupt).await?;
    let run_stop = interrupt.child_token();
    let (exited, stop) = (running.exited(), run_stop.clone());
    // A server that dies mid-run ends the run now, not after every request has timed out.
    tokio::spawn(async move {
        tokio::select! {
            () = exited.cancelled() => stop.cancel(),
            () = stop.cancelled() => {}
        }
    });
    Ok(Some((running, run_stop)))
}

/// Stops the server, if there is one.
pub(super) async fn finish(running: Option<(Running, CancellationToken)>) -> Option<Stopped> {
    let (running, run_stop) = running?;
    let stopped = running.finish().await;
    // Ends the watch above.
    run_stop.cancel();
    Some(stopped)
}

/// Where the server is to answer: the target's URLs, model and API key.
fn target(scenario: &Scenario) -> Target {
    let t = &scenario.target;
    let urls = match &t.endpoint {
        Endpoint::Url(u) => vec![u.value.clone()],
        Endpoint::Urls(r) => r.urls.iter().map(|u| u.url.clone()).collect(),
        Endpoint::Sim(_) => Vec::new(),
    };
    Target {
        urls,
        model: t.request.model.clone(),
        api_key: t
            .request
            .api_key_env
            .as_ref()
            .and_then(|v| std::env::var(v).ok()),
    }
}

/// What the server's stop means for the results: recorded in the provenance; a server that
/// exited during the run fails it (its error in `error`, never a pass). The failures, for the
/// run's outcome.
pub(super) fn record(results: &mut Results, stopped: Option<Stopped>) -> Vec<Error> {
    let Some(stopped) = stopped else {
        return Vec::new();
    };
    if let Some(p) = &mut results.provenance {
        p.started_server = Some(stopped.started);
    }
    let failures: Vec<Error> = stopped.failures.into_iter().map(Error::from).collect();
    if let Some(first) = failures.first() {
        results.passed = false;
        // One line, as `error` is shown in the summary's heading.
        let text = crate::error::chain(first).replace("\n  | ", " | ");
        results.error = Some(crate::redact::secrets(&text).into_owned());
    }
    failures
}
