//! A server from start to stop: [`start`] spawns the block's program (no shell) as the leader
//! of a process group of its own, its output pumped into `server.log`, and waits until it is
//! ready, it exits, the timeout passes or the run is interrupted; [`Running::stop`] asks the
//! group to stop, waits the grace period for every process of it to go, and kills what is left.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::error::ServerError;
use super::group::Group;
use super::log::{Log, pump};
use super::ready::{Last, Target, port_free, until_ready};
use super::spec::{EnvValue, Readiness, ServerSpec, StopSpec, resolve_program};
use crate::results::StartedServer;

/// Where a server starts and what it is judged against.
#[derive(Debug, Clone)]
pub struct Place {
    /// The scenario's directory: a relative program path and `cwd` are from there.
    pub base_dir: PathBuf,
    /// Its log (`server.log` in the run's directory).
    pub log: PathBuf,
    /// Whether the log is continued (a restart within the run) rather than begun afresh.
    pub append: bool,
    /// Which server this is, said in the log after its pid (a configuration's name).
    pub label: Option<String>,
    pub target: Target,
}

/// A server that is ready.
pub struct Running {
    group: Group,
    log: Arc<Log>,
    /// Cancelled when the leader exits.
    exited: CancellationToken,
    /// What the run watches to end early: `exited`, or for a `restart` program (which exits
    /// by design) nothing; a server elsewhere that dies shows in its answers.
    watch: CancellationToken,
    /// A `restart` program's: the server runs elsewhere and is left running.
    remote: bool,
    status: Arc<OnceLock<String>>,
    tasks: Vec<JoinHandle<()>>,
    stop: StopSpec,
    pub started: StartedServer,
}

/// What stopping found: the server's failure (it exited during the run) and the log's.
pub struct Stopped {
    pub started: StartedServer,
    pub failures: Vec<ServerError>,
}

/// Starts the server and waits until it is ready. On any failure the server is stopped (its
/// whole group) before the error returns, with the server's last lines in it.
pub async fn start(
    spec: &ServerSpec,
    place: &Place,
    interrupt: &CancellationToken,
) -> Result<Running, ServerError> {
    // A server restarted elsewhere answers there already, by design.
    if !spec.remote {
        port_free(&place.target).await?;
    }
    let ready_text = match &spec.ready {
        Readiness::Log(t) => Some(t.clone()),
        _ => None,
    };
    let log = Arc::new(Log::create(
        &place.log,
        spec.log_max,
        ready_text,
        place.append,
    )?);
    let began = Instant::now();
    let mut running = spawn(spec, &place.base_dir, log)?;
    if let Some(label) = &place.label {
        running.log.note(label);
    }
    if spec.remote {
        return restarted(spec, place, running, began, interrupt).await;
    }
    let last: Last = Arc::new(Mutex::new(String::from("no probe was answered yet")));
    let failed = tokio::select! {
        () = until_ready(&spec.ready, &place.target, &running.log, &last) => None,
        () = running.exited.cancelled() => Some(Failed::Exited),
        () = tokio::time::sleep(spec.timeout.as_std()) => Some(Failed::Timeout),
        () = interrupt.cancelled() => Some(Failed::Interrupted),
    };
    let Some(failed) = failed else {
        running.started.startup_ms = began.elapsed().as_secs_f64() * 1e3;
        return Ok(running);
    };
    let why = last.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let stopped = running.stop().await;
    let lines = stopped.last;
    Err(match failed {
        Failed::Exited => ServerError::ExitedEarly {
            status: stopped.status,
            last: lines,
        },
        Failed::Timeout => ServerError::NotReady {
            waited: began.elapsed(),
            why,
            last: lines,
        },
        Failed::Interrupted => ServerError::Interrupted,
    })
}

/// A `restart` program runs to completion (exit 0), then the server it restarted is waited
/// for, all within the block's timeout; the start-up is the whole of it.
async fn restarted(
    spec: &ServerSpec,
    place: &Place,
    mut running: Running,
    began: Instant,
    interrupt: &CancellationToken,
) -> Result<Running, ServerError> {
    let deadline = tokio::time::Instant::from_std(began + spec.timeout.as_std());
    let mut failed = tokio::select! {
        () = running.exited.cancelled() => None,
        () = tokio::time::sleep_until(deadline) => Some(Failed::Timeout),
        () = interrupt.cancelled() => Some(Failed::Interrupted),
    };
    let status = running.status.get().cloned().unwrap_or_default();
    let last: Last = Arc::new(Mutex::new(format!(
        "the restart program was still running ({})",
        spec.command.first().map_or("", String::as_str)
    )));
    if failed.is_none() {
        if status != "exit code 0" {
            let stopped = running.stop().await;
            return Err(ServerError::RestartFailed {
                status,
                last: stopped.last,
            });
        }
        running
            .log
            .note("the restart program finished; waiting for the server");
        failed = tokio::select! {
            () = until_ready(&spec.ready, &place.target, &running.log, &last) => None,
            () = tokio::time::sleep_until(deadline) => Some(Failed::Timeout),
            () = interrupt.cancelled() => Some(Failed::Interrupted),
        };
    }
    let Some(failed) = failed else {
        running.started.startup_ms = began.elapsed().as_secs_f64() * 1e3;
        running.remote = true;
        running.watch = CancellationToken::new();
        return Ok(running);
    };
    let why = last.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let stopped = running.stop().await;
    Err(match failed {
        Failed::Timeout | Failed::Exited => ServerError::NotReady {
            waited: began.elapsed(),
            why,
            last: stopped.last,
        },
        Failed::Interrupted => ServerError::Interrupted,
    })
}

/// Why a start failed.
enum Failed {
    Exited,
    Timeout,
    Interrupted,
}

/// Spawns the program as a group leader, its output pumped into `log`, its exit watched.
fn spawn(spec: &ServerSpec, base: &Path, log: Arc<Log>) -> Result<Running, ServerError> {
    let (program, args) = spec.command.split_first().ok_or(ServerError::NotFound {
        program: String::new(),
    })?;
    let path = resolve_program(program, base).ok_or_else(|| ServerError::NotFound {
        program: program.clone(),
    })?;
    let mut cmd = tokio::process::Command::new(&path);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = &spec.cwd {
        cmd.current_dir(base.join(dir));
    }
    for e in &spec.env {
        match &e.value {
            EnvValue::Value(v) => cmd.env(&e.name, v),
            // Unset in infermeter's environment: the server does not get it either.
            EnvValue::FromEnv(var) => match std::env::var_os(var) {
                Some(v) => cmd.env(&e.name, v),
                None => cmd.env_remove(&e.name),
            },
        };
    }
    let mut child = cmd.spawn().map_err(|source| ServerError::Spawn {
        program: program.clone(),
        source,
    })?;
    let pid = child.id().unwrap_or_default();
    // Registered at once, so that no error path below leaves the group running.
    let group = Group::new(pid as i32);
    log.note(&format!("started pid {pid}, process group {pid}"));
    let mut tasks = Vec::new();
    if let Some(out) = child.stdout.take() {
        let log = log.clone();
        tasks.push(tokio::spawn(async move { pump(out, &log).await }));
    }
    if let Some(err) = child.stderr.take() {
        let log = log.clone();
        tasks.push(tokio::spawn(async move { pump(err, &log).await }));
    }
    let exited = CancellationToken::new();
    let status = Arc::new(OnceLock::new());
    let (done, said) = (exited.clone(), status.clone());
    tasks.push(tokio::spawn(async move {
        let text = match child.wait().await {
            Ok(s) => describe(s),
            Err(e) => format!("cannot be waited for: {e}"),
        };
        let _ = said.set(text);
        done.cancel();
    }));
    Ok(Running {
        group,
        log,
        watch: exited.clone(),
        remote: false,
        exited,
        status,
        tasks,
        stop: spec.stop,
        started: StartedServer {
            command: crate::redact::command_line(&spec.command),
            pid,
            startup_ms: 0.0,
            stopped: String::new(),
        },
    })
}

/// `exit code 1`, `killed by signal 9`.
fn describe(s: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => s.to_string(),
    }
}

/// What [`Running::stop`] found, before it is judged.
struct Ended {
    /// The server had exited by itself before it was asked to stop.
    by_itself: bool,
    status: String,
    last: Vec<String>,
    how: &'static str,
    log: Result<(), ServerError>,
}

impl Running {
    /// Cancelled when the server's leader process exits (never for a `restart` program's).
    pub fn exited(&self) -> CancellationToken {
        self.watch.clone()
    }

    /// Stops the server after a run: a server that had exited by itself during it is a
    /// failure of the run ([`ServerError::Died`]), with its last lines.
    pub async fn finish(self) -> Stopped {
        let mut started = self.started.clone();
        let remote = self.remote;
        let ended = self.stop().await;
        started.stopped = if remote { "left running" } else { ended.how }.into();
        let mut failures = Vec::new();
        if ended.by_itself && !remote {
            failures.push(ServerError::Died {
                status: ended.status,
                last: ended.last,
            });
        }
        failures.extend(ended.log.err());
        Stopped { started, failures }
    }

    /// The stop signal to the group, the grace period for every process of it to go,
    /// SIGKILL to what is left; then the log is completed.
    async fn stop(mut self) -> Ended {
        let by_itself = self.exited.is_cancelled();
        let grace = self.stop.grace.as_std();
        let mut how = if by_itself { "exited" } else { "stopped" };
        if self.group.alive() {
            let sig = self.stop.signal;
            self.log.note(&format!(
                "sending {} to the server's process group",
                sig.name()
            ));
            self.group.signal(sig.number());
        }
        if !self.gone_within(grace).await {
            self.log.note(&format!(
                "still running {}s after the stop signal: killing it",
                grace.as_secs_f64()
            ));
            self.group.signal(libc::SIGKILL);
            how = "killed";
            // SIGKILL cannot be caught: only an unreaped zombie is left, briefly.
            self.gone_within(Duration::from_secs(5)).await;
        }
        self.group.release();
        // The pipes close once every process holding them is gone; one that left the group
        // (a daemon) may hold them longer, and the log does not wait for it.
        for task in std::mem::take(&mut self.tasks) {
            let aborter = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), task)
                .await
                .is_err()
            {
                aborter.abort();
            }
        }
        let status = self
            .status
            .get()
            .cloned()
            .unwrap_or_else(|| "still running".into());
        Ended {
            by_itself,
            status,
            last: self.log.last_lines(),
            how,
            log: self.log.finish(),
        }
    }

    /// Whether the leader has exited and no process of the group is left within `limit`.
    async fn gone_within(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.exited.is_cancelled() && !self.group.alive() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
