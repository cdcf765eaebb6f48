//! A server infermeter starts for a run (a scenario's `server { … }` block, docs/server.md):
//! started in a process group of its own, waited for until ready, its output kept in a bounded
//! `server.log` with secrets masked, and stopped (signal, grace, SIGKILL to the whole group)
//! after the run, on every path. One entry point, [`start`], and [`Running::finish`].

mod config;
mod error;
mod group;
mod log;
mod managed;
mod ready;
mod spec;

pub use config::with_flags;
pub use error::ServerError;
pub use group::kill_all;
pub use managed::{Place, Running, Stopped, start};
pub use ready::Target;
pub use spec::{
    DEFAULT_GRACE, DEFAULT_LOG_MAX, DEFAULT_TIMEOUT, EnvSetting, EnvValue, Readiness, SELF_PROGRAM,
    ServerConfig, ServerSpec, StopSignal, StopSpec, resolve_program,
};
