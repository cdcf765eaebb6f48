//! The console [`Observer`] of `infermeter run`: live progress per stage — a bar on a
//! terminal, a plain line every few seconds otherwise (CI logs), nothing with `--quiet`, each
//! with the elapsed time and, when the stage's size is known, an ETA — and warnings on
//! stderr. Driven by each stage's collector thread, never by request tasks; one stage's bar or
//! lines are `progress/stage.rs`.

mod mode;
mod stage;

use crate::app::{Observer, StageProgress};
pub use mode::ProgressMode;
use stage::Progress;

/// Progress bars or lines on stderr, and warnings.
pub struct ConsoleObserver {
    mode: ProgressMode,
}

impl ConsoleObserver {
    pub fn new(mode: ProgressMode) -> Self {
        ConsoleObserver { mode }
    }
}

impl Observer for ConsoleObserver {
    fn stage_started(&self, name: &str, total: Option<u64>) -> Box<dyn StageProgress> {
        Box::new(Progress::new(self.mode, name, total, None))
    }

    fn stage_planned(
        &self,
        name: &str,
        total: Option<u64>,
        sending: Option<std::time::Duration>,
    ) -> Box<dyn StageProgress> {
        Box::new(Progress::new(self.mode, name, total, sending))
    }

    fn warning(&self, message: &str) {
        errln!("warning: {}", crate::redact::secrets(message));
    }
}
