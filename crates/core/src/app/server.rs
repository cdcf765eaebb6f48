//! The run's own server, when the scenario has a `server` block (docs/server.md): started and
//! waited for before the first request, watched during the run (its exit interrupts the run at
//! once), stopped after the last, and what happened recorded. `server.log` is written into the
//! run's directory beside results.json.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::metrics::StageServer;
use crate::plan::{Plan, StagePlan};
use crate::results::{Results, StartedServer};
use crate::runner::{ServerSwitch, SwitchFuture, Switched};
use crate::scenario::{Endpoint, Scenario};
use crate::server::{Place, Running, ServerSpec, Stopped, Target};

/// The server's log, in the run's directory.
pub const SERVER_LOG: &str = "server.log";

/// The run's server: the one running now (with the watch that ends the run should it exit),
/// and what each start and stage recorded. Shared with the runner, which asks it before each
/// stage to have the stage's configuration running ([`ServerSwitch`]).
pub(super) struct Servers {
    spec: ServerSpec,
    place: Place,
    /// The run's own stop: `interrupt`'s child, cancelled too when a server exits by itself
    /// or a restart fails. The runner's interrupt.
    pub run_stop: CancellationToken,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    current: Option<Generation>,
    /// Every start, in order (its `stopped` set once stopped).
    starts: Vec<Start>,
    /// Each stage's configuration, by the stage's name, in order.
    stages: Vec<(String, StageServer)>,
    /// The next stage is the first on the server just started.
    fresh: bool,
    failures: Vec<Error>,
}

struct Generation {
    running: Running,
    config: Option<String>,
    /// Cancelled before the server is stopped on purpose: its exit then ends nothing.
    disarm: CancellationToken,
}

/// One start of the server, as recorded.
struct Start {
    config: Option<String>,
    started: StartedServer,
}

/// What the run's servers left: the first start (`provenance.started_server`), each stage's
/// configuration, and the failures (a server that exited during the run, a restart that
/// failed).
pub(super) struct ServersDone {
    first: Option<StartedServer>,
    stages: Vec<(String, StageServer)>,
    failures: Vec<Error>,
}

/// The scenario's server, started (on the first stage's configuration) and ready. `None`
/// without a `server` block.
pub(super) async fn start(
    scenario: &Scenario,
    plan: &Plan,
    dir: &Path,
    interrupt: &CancellationToken,
) -> Result<Option<Arc<Servers>>, Error> {
    let Some(spec) = &scenario.server else {
        return Ok(None);
    };
    let servers = Arc::new(Servers {
        spec: spec.clone(),
        place: Place {
            base_dir: scenario.source.base_dir(),
            log: dir.join(SERVER_LOG),
            append: false,
            label: None,
            target: target(scenario),
        },
        run_stop: interrupt.child_token(),
        state: tokio::sync::Mutex::new(State::default()),
    });
    let first = plan.stages.first().and_then(|s| s.server.clone());
    let mut state = servers.state.lock().await;
    let generation = servers.launch(first, false, interrupt).await?;
    state.starts.push(Start {
        config: generation.config.clone(),
        started: generation.running.started.clone(),
    });
    state.current = Some(generation);
    state.fresh = true;
    drop(state);
    Ok(Some(servers))
}

impl Servers {
    /// Starts the server on `config`, ready, with the watch that ends the run if it exits.
    async fn launch(
        &self,
        config: Option<String>,
        append: bool,
        interrupt: &CancellationToken,
    ) -> Result<Generation, Error> {
        let spec = self.spec.configured(config.as_deref());
        let place = Place {
            append,
            label: config.as_ref().map(|c| format!("server configuration {c}")),
            ..self.place.clone()
        };
        let running = crate::server::start(&spec, &place, interrupt).await?;
        let disarm = CancellationToken::new();
        let (exited, stop, off) = (running.exited(), self.run_stop.clone(), disarm.clone());
        // A server that dies mid-run ends the run now, not after every request has timed out.
        tokio::spawn(async move {
            tokio::select! {
                () = exited.cancelled() => stop.cancel(),
                () = stop.cancelled() => {}
                () = off.cancelled() => {}
            }
        });
        Ok(Generation {
            running,
            config,
            disarm,
        })
    }

    /// The stage's configuration running: the server kept, or stopped and started again.
    async fn switch(&self, stage: &StagePlan) -> Switched {
        let mut state = self.state.lock().await;
        let same = state
            .current
            .as_ref()
            .is_some_and(|g| g.config == stage.server);
        let how = if same {
            Switched::Kept
        } else {
            if let Some(old) = state.current.take() {
                old.disarm.cancel();
                state.stopped(old.running.finish().await);
            }
            match self
                .launch(stage.server.clone(), true, &self.run_stop)
                .await
            {
                Ok(g) => {
                    state.starts.push(Start {
                        config: g.config.clone(),
                        started: g.running.started.clone(),
                    });
                    state.current = Some(g);
                    state.fresh = true;
                    Switched::Restarted
                }
                Err(e) => {
                    state.failures.push(e);
                    self.run_stop.cancel();
                    return Switched::Failed;
                }
            }
        };
        state.record(stage);
        how
    }

    /// Stops the server that is running, and gives what the run's servers left.
    pub(super) async fn finish(&self) -> ServersDone {
        let mut state = self.state.lock().await;
        if let Some(g) = state.current.take() {
            let stopped = g.running.finish().await;
            state.stopped(stopped);
        }
        // Ends the watches.
        self.run_stop.cancel();
        let state = std::mem::take(&mut *state);
        ServersDone {
            first: state.starts.into_iter().next().map(|s| s.started),
            stages: state.stages,
            failures: state.failures,
        }
    }
}

impl State {
    /// A server stopped: its start's record completed, its failure kept.
    fn stopped(&mut self, stopped: Stopped) {
        if let Some(s) = self
            .starts
            .iter_mut()
            .rev()
            .find(|s| s.started.pid == stopped.started.pid)
        {
            s.started.stopped = stopped.started.stopped;
        }
        self.failures
            .extend(stopped.failures.into_iter().map(Error::from));
    }

    /// The stage runs on the latest start.
    fn record(&mut self, stage: &StagePlan) {
        let (Some(config), Some(start)) = (&stage.server, self.starts.last()) else {
            return;
        };
        let restarted = std::mem::take(&mut self.fresh);
        self.stages.push((
            stage.name.clone(),
            StageServer {
                config: config.clone(),
                command: start.started.command.clone(),
                pid: start.started.pid,
                startup_ms: start.started.startup_ms,
                restarted,
            },
        ));
        debug_assert_eq!(start.config.as_ref(), Some(config));
    }
}

impl ServerSwitch for Servers {
    fn before<'a>(&'a self, stage: &'a StagePlan) -> SwitchFuture<'a> {
        Box::pin(self.switch(stage))
    }
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

/// What the servers' stops mean for the results: recorded in the provenance and on each
/// stage; a server that exited during the run, or a restart that failed, fails it (its error
/// in `error`, never a pass). The failures, for the run's outcome.
pub(super) fn record(results: &mut Results, done: Option<ServersDone>) -> Vec<Error> {
    let Some(done) = done else {
        return Vec::new();
    };
    if let Some(p) = &mut results.provenance {
        p.started_server = done.first;
    }
    for stage in &mut results.stages {
        // A search's probes are named for their load; their group is the search stage's.
        let group = stage.profile.as_ref().map(|p| p.point.group.as_str());
        stage.server = done
            .stages
            .iter()
            .find(|(name, _)| *name == stage.name || Some(name.as_str()) == group)
            .map(|(_, s)| s.clone());
    }
    let failures = done.failures;
    if let Some(first) = failures.first() {
        results.passed = false;
        // One line, as `error` is shown in the summary's heading.
        let text = crate::error::chain(first).replace("\n  | ", " | ");
        results.error = Some(crate::redact::secrets(&text).into_owned());
    }
    failures
}

/// A distributed run (`--shard`, `coordinate`, `k8s`) of a scenario with a `server` block is
/// refused: every shard would start a server of its own (on its own machine, or several on one
/// port), and the run would measure none of them as the scenario says.
pub(super) fn refuse_distributed(scenario: &Scenario, how: &str) -> Result<(), Error> {
    if scenario.server.is_none() {
        return Ok(());
    }
    Err(Error::usage(
        format!(
            "{how}: the scenario has a `server` block, and each shard would start a server of \
             its own"
        ),
        "start the server outside infermeter and leave out the `server` block (the target's URL \
         then names it), or run the scenario unsharded",
    ))
}
