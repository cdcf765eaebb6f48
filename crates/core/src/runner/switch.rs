//! The hook a run with server configurations restarts its server through: before each stage,
//! the runner asks its [`ServerSwitch`] to have the stage's configuration running (the caller,
//! which started the server, stops it and starts the next only when the configuration
//! changes). The runner knows only this trait; `app` implements it around `server`.

use std::future::Future;
use std::pin::Pin;

use crate::plan::StagePlan;

/// A boxed future, so the trait stays object-safe.
pub type SwitchFuture<'a> = Pin<Box<dyn Future<Output = Switched> + Send + 'a>>;

/// What the switch did before a stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switched {
    /// The server that ran the stage before runs this one too (warm).
    Kept,
    /// The server was restarted for this stage and is ready (a fresh start: the warm-up, when
    /// the plan has one, runs again first).
    Restarted,
    /// The restart failed (the caller keeps why): the run stops.
    Failed,
}

/// Has the server of each stage's configuration running before the stage starts.
pub trait ServerSwitch: Send + Sync {
    fn before<'a>(&'a self, stage: &'a StagePlan) -> SwitchFuture<'a>;
}
