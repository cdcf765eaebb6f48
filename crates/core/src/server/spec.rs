//! What a scenario's `server { … }` block says: the program to start (never a shell string),
//! its directory and environment, how to know it is ready, how long to wait, how to stop it,
//! and how much of its log to keep. Data only: the scenario reads it, `server::start` acts on
//! it.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Serialize;

use crate::units::Duration;

/// A server infermeter starts before the run and stops after it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub struct ServerSpec {
    /// The program and its arguments, passed as they are (no shell). The program `infermeter`
    /// is the running binary itself, so a scenario can start `infermeter sim` anywhere.
    pub command: Vec<String>,
    /// `restart` in place of `command`: the program restarts a server that runs elsewhere (a
    /// Kubernetes rollout, a remote host) and exits; the run waits for it, then for the
    /// server, and leaves the server running after the run.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub remote: bool,
    /// The directory it starts in, relative to the scenario's (default: infermeter's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Variables added to infermeter's environment for it, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvSetting>,
    /// How to know it is ready.
    pub ready: Readiness,
    /// The longest wait for it to be ready (default 600s: a large model loads for minutes).
    pub timeout: Duration,
    /// How it is stopped.
    pub stop: StopSpec,
    /// The most bytes of its output `server.log` keeps (the first half and the last lines).
    pub log_max: u64,
    /// `config` lines: every stage runs once on each (see [`ServerSpec::configured`]); none,
    /// every stage runs on the command as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<ServerConfig>,
}

/// One `config` line: what it changes of the base command.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ServerConfig {
    /// Its name, which the stages run on it carry (`steady@NAME`).
    pub name: String,
    /// Flags with their values: each replaces the same flag (and its values) in the base
    /// command, or is appended when the base has none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for it, replacing the base block's of the same name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvSetting>,
    /// `clients=N`: the load linked to the setting — every fixed closed loop (`arrival
    /// "concurrency"`, not a ramp or sweep) runs `N` clients on this configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
}

/// One `env` line.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct EnvSetting {
    pub name: String,
    pub value: EnvValue,
}

/// An environment variable's value: written in the scenario, or taken from infermeter's own
/// environment by name (a secret, which the scenario never holds and every output masks).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EnvValue {
    Value(String),
    FromEnv(String),
}

/// When the server counts as ready.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Readiness {
    /// The target's `/models` lists models (the model asked for, when the target names one):
    /// what `infermeter wait` waits for.
    Models,
    /// `GET` of this path at the server's root (the target URL without `/v1`) answers 2xx.
    Path(String),
    /// A line of its output contains this text.
    Log(String),
}

/// How the server is stopped: `signal` to its whole process group, then, after `grace`,
/// SIGKILL to whatever of the group is left.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct StopSpec {
    pub signal: StopSignal,
    pub grace: Duration,
}

/// The signals a server may be asked to stop with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum StopSignal {
    Sigterm,
    Sigint,
    Sighup,
    Sigquit,
}

impl StopSignal {
    /// Every signal, with its name as written (`SIGTERM`).
    pub const ALL: [(StopSignal, &'static str); 4] = [
        (StopSignal::Sigterm, "SIGTERM"),
        (StopSignal::Sigint, "SIGINT"),
        (StopSignal::Sighup, "SIGHUP"),
        (StopSignal::Sigquit, "SIGQUIT"),
    ];

    /// The signal called `name` (`SIGTERM` or `TERM`, any case).
    pub fn named(name: &str) -> Option<StopSignal> {
        let upper = name.to_ascii_uppercase();
        let full = if upper.starts_with("SIG") {
            upper
        } else {
            format!("SIG{upper}")
        };
        Self::ALL.iter().find(|(_, n)| *n == full).map(|(s, _)| *s)
    }

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("SIGTERM", |(_, n)| n)
    }

    /// Its number on this system.
    pub fn number(self) -> i32 {
        match self {
            StopSignal::Sigterm => libc::SIGTERM,
            StopSignal::Sigint => libc::SIGINT,
            StopSignal::Sighup => libc::SIGHUP,
            StopSignal::Sigquit => libc::SIGQUIT,
        }
    }
}

/// The defaults of what a block leaves out.
pub const DEFAULT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);
pub const DEFAULT_GRACE: std::time::Duration = std::time::Duration::from_secs(10);
pub const DEFAULT_LOG_MAX: u64 = 1024 * 1024;

/// The program name that means the running `infermeter` binary.
pub const SELF_PROGRAM: &str = "infermeter";

/// Where `program` (as a scenario writes it) is found: a path (with a `/`) relative to `base`,
/// the running binary for [`SELF_PROGRAM`], else the first executable file of that name on
/// `PATH`. `None` when there is none.
pub fn resolve_program(program: &str, base: &std::path::Path) -> Option<PathBuf> {
    if program == SELF_PROGRAM {
        return std::env::current_exe().ok();
    }
    if program.contains('/') {
        let path = base.join(program);
        return is_executable(&path).then_some(path);
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
