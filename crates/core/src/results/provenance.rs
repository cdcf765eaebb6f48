//! Where a result came from: the build of infermeter, the command line (secrets masked), the
//! scenario's effective params, tags and file hash, wall-clock start and end, the host, and
//! what the server said about itself. Enough to rerun a shared baseline, or to tell why two
//! results differ. *Added in schema 2*; every field is optional to readers.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::server_info::ServerInfo;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Provenance {
    pub build: BuildInfo,
    /// The command line, one argument per item, with secrets masked (`***`): values of
    /// `--api-key`-like flags, of `NAME=VALUE` / `NAME: VALUE` arguments named like a key or
    /// token, and URL credentials. Empty when the run was started from the library.
    #[serde(default)]
    pub command_line: Vec<String>,
    /// Every declared param with its effective value (default or `--param` override).
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    /// The scenario's `tags`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The scenario file as given, and the SHA-256 of its bytes (hex).
    #[serde(default)]
    pub scenario_file: String,
    #[serde(default)]
    pub scenario_sha256: String,
    /// UTC wall-clock times, RFC 3339: the run's start (the same as `started_at`) and end.
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub ended_at: String,
    pub host: HostInfo,
    /// What the target said about itself; absent when nothing answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerInfo>,
    /// The server the scenario's `server` block started for the run; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_server: Option<StartedServer>,
    /// The infrastructure it ran on: the engine, its version and context length as the
    /// server said, the GPUs telemetry saw, and what the scenario's `infra` block declared
    /// (`results::infra`). *Added in schema 3.*
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub infra: super::Infra,
}

/// The build of infermeter that ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BuildInfo {
    pub version: String,
    /// The git commit it was built from, or `unknown` (built outside a git checkout).
    pub commit: String,
}

/// The machine the client ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostInfo {
    /// Absent with `--no-hostname`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// `model name` of /proc/cpuinfo; `unknown` elsewhere.
    pub cpu_model: String,
    /// CPUs available to the process.
    pub cpus: u32,
    /// Kernel name and release (`Linux 6.1.0-18-amd64`).
    pub kernel: String,
    /// `PRETTY_NAME` of /etc/os-release, else the OS family (`linux`, `macos`).
    pub os: String,
    /// `x86_64`, `aarch64`.
    pub arch: String,
}

/// What a run records of the server it started (`provenance.started_server` in results.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StartedServer {
    /// The program and its arguments as started, secrets masked.
    pub command: Vec<String>,
    /// The leader's process id (its process group's too).
    pub pid: u32,
    /// From the start to ready, in milliseconds.
    pub startup_ms: f64,
    /// How it stopped: `exited` (by itself, during the run), `stopped` (by the stop
    /// signal), `killed` (SIGKILL after the grace period), `left running` (a `restart`
    /// block's server, which runs elsewhere).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stopped: String,
}
