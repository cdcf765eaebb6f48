//! What a run that was carried out hands back: its results, where they were written, and how
//! it ended — as one typed [`Outcome`], and as the `Result` the exit code comes from.

use std::path::PathBuf;

use crate::error::Error;
use crate::results::Results;
use crate::sla::{Abort, SlaOutcome};

/// How a run that started ended.
#[derive(Debug)]
pub enum Outcome {
    /// Every stage ran and every output was written.
    Completed,
    /// Ctrl-C or a signal stopped it; the stages that ran are in the results.
    Interrupted,
    /// An `abort-on-fail` assertion stopped it: which, on which stage, with what numbers.
    Aborted(Abort),
    /// It measured what it could but something failed on the way (a file that could not be
    /// written, a collector that panicked): each cause, with its OS error.
    Failed(Vec<Error>),
}

/// A run that was carried out (it may still have failed its SLAs or stopped early).
#[derive(Debug)]
pub struct RunReport {
    pub results: Results,
    pub outcome: Outcome,
    /// Where `results.json` and the report are.
    pub out_dir: PathBuf,
    /// Every file written, `results.json` first.
    pub files: Vec<PathBuf>,
}

impl RunReport {
    /// `Ok` when the run completed and every SLA held; otherwise the error that says why
    /// not, and so the exit code ([`Error::exit_code`]).
    pub fn check(&self) -> Result<(), Error> {
        match &self.outcome {
            Outcome::Failed(causes) => Err(Error::Incomplete {
                causes: causes.iter().map(Error::chain).collect(),
            }),
            Outcome::Interrupted => Err(Error::Interrupted),
            Outcome::Aborted(why) => Err(Error::Aborted(why.clone())),
            Outcome::Completed => {
                let count =
                    |o: SlaOutcome| self.results.sla.iter().filter(|v| v.outcome == o).count();
                let (failed, undecided) =
                    (count(SlaOutcome::Fail), count(SlaOutcome::Inconclusive));
                // `require=#true`: not qualifying fails the run whatever else held; a failed
                // SLA still says so first.
                let unqualified = self.results.mlperf.as_ref().filter(|q| q.fails_gate());
                match (self.results.outcome, unqualified) {
                    (SlaOutcome::Fail, _) => Err(Error::SlaFailed { failed, undecided }),
                    (_, Some(q)) => Err(Error::NotQualified(q.line())),
                    (SlaOutcome::Pass, None) => Ok(()),
                    (SlaOutcome::Inconclusive, None) => Err(Error::Inconclusive {
                        undecided,
                        untrusted: self
                            .results
                            .stages
                            .iter()
                            .filter(|s| !s.validity.trusted)
                            .count(),
                    }),
                }
            }
        }
    }

    /// The process exit code of this run.
    pub fn exit_code(&self) -> i32 {
        self.check()
            .map_or_else(|e| e.exit_code(), |()| crate::exit::OK)
    }
}
