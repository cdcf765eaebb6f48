//! The server a stage ran on, when the scenario's `server` block has configurations
//! (docs/server.md, "Server settings as an axis"): which, its command line, its start-up time,
//! and whether it was started for this stage (a fresh start) or kept from the stage before.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `server` of a stage in results.json. *Added in schema 3.*
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageServer {
    /// The configuration's name (the `config` line).
    pub config: String,
    /// The program and its arguments as started, secrets masked.
    pub command: Vec<String>,
    /// The process id of the server's leader (its process group's too).
    pub pid: u32,
    /// From the server's start to ready, in milliseconds.
    pub startup_ms: f64,
    /// `true`: the server was started for this stage (a fresh start, caches cold); `false`:
    /// the server of the stage before ran this one too (warm).
    pub restarted: bool,
}
