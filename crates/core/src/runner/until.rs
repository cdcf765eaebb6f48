//! `until-decided` stages in the runner: the rule as the live check needs it (the minimum to
//! send before stopping, the tuning of the stage's confidence sequences), counted looks, and
//! the record its summary gets of where it stopped and why.

use crate::metrics::{DecidedBy, LookVerdict, PrefixLook, UntilDecided, UntilStop};
use crate::plan::{Load, StagePlan};
use crate::units::Duration;

/// A running `until-decided` stage's rule and looks so far.
#[derive(Debug, Clone)]
pub(super) struct Until {
    min_requests: Option<u64>,
    min_s: Option<f64>,
    /// The longest a successful request can take (the request timeout), in ms.
    timeout_ms: f64,
    record: UntilDecided,
}

impl Until {
    /// The rule of `stage`, when it is `until-decided`; `timeout` is the requests' own.
    pub(super) fn of(stage: &StagePlan, timeout: Duration) -> Option<Until> {
        let rule = stage.until_decided?;
        let max_requests = match &stage.load {
            Load::Open { schedule, .. } => Some(schedule.count()),
            _ => stage.max_requests,
        };
        let min_s = rule.min_duration.map(|d| d.as_secs_f64());
        Some(Until {
            // A duration minimum is kept by the clock; its count only tunes the sequences.
            min_requests: rule.min_requests.filter(|_| min_s.is_none()),
            min_s,
            timeout_ms: timeout.as_secs_f64() * 1e3,
            record: UntilDecided {
                min_requests: rule.min_requests,
                min_s,
                max_requests,
                max_s: stage.duration.map(|d| d.as_secs_f64()),
                tuned_for: crate::stats::sequence_tuning(rule.min_requests, max_requests),
                stopped: UntilStop::MaxReached,
                stopped_at_s: 0.0,
                stopped_at_requests: 0,
                looks: 0,
                pending: None,
                decided_by: None,
                prefix: None,
            },
        })
    }

    /// Counts a look, and says whether the stage has sent its minimum: requests completed (an
    /// open loop's in-flight ones come later), or seconds since its start.
    pub(super) fn look(&mut self, completed: u64, elapsed_s: f64) -> bool {
        self.record.looks += 1;
        self.min_requests.is_none_or(|m| completed >= m)
            && self.min_s.is_none_or(|m| elapsed_s >= m)
    }

    /// What a snapshot at a look carries, so the verdicts on it use the stage's sequences,
    /// with the `pending` requests begun but not yet folded taken as unknown.
    /// The prefix's snapshot has none pending (every request in it completed). What the
    /// looks so far recorded (`prefix`, `decided_by`) is left out: a look is judged on its
    /// own numbers only.
    pub(super) fn snapshot_record(&self, pending: u64) -> UntilDecided {
        UntilDecided {
            pending: Some(crate::metrics::Pending {
                requests: pending,
                longest_ms: self.timeout_ms,
            }),
            prefix: None,
            decided_by: None,
            ..self.record.clone()
        }
    }

    /// The complete prefix at this look: `requests` long, its verdicts on the assertions
    /// holding the stage open. The last look's is the one the record keeps (at the stop).
    pub(super) fn note_prefix(&mut self, requests: u64, stalled: bool, verdicts: Vec<LookVerdict>) {
        self.record.prefix = Some(PrefixLook {
            requests,
            verdicts,
            stalled,
        });
    }

    /// The look that decided the stage.
    pub(super) fn decided_by(&mut self, by: DecidedBy) {
        self.record.decided_by = Some(by);
    }

    /// The record of the finished stage: decided at a look (seconds, requests completed), or
    /// not, when it sent its maximum or was stopped first (`interrupted`, at `sending_s`
    /// after `sent` requests).
    pub(super) fn finish(
        mut self,
        decided: Option<(f64, u64)>,
        interrupted: bool,
        (sending_s, sent): (f64, u64),
    ) -> UntilDecided {
        let (stopped, (at_s, requests)) = match decided {
            Some(at) => (UntilStop::Decided, at),
            None if interrupted => (UntilStop::Interrupted, (sending_s, sent)),
            None => (UntilStop::MaxReached, (sending_s, sent)),
        };
        if stopped != UntilStop::Decided {
            self.record.decided_by = None;
        }
        self.record.stopped = stopped;
        self.record.stopped_at_s = at_s;
        self.record.stopped_at_requests = requests;
        self.record
    }
}
