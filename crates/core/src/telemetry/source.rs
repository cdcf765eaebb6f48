//! What the sampler and its sources share: what a source is told ([`Msg`], with the
//! acknowledgement a stage waits on), the recent GPU points kept for the warm-up rule, and the
//! warnings a source reports.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::report::GpuPoint;

/// Recent GPU points kept per device for the warm-up rule (ten minutes at 1 s).
const RECENT_POINTS: usize = 600;

/// What a source is told.
#[derive(Debug, Clone)]
pub(crate) enum Msg {
    /// A stage starts: read a point now, then tell the acknowledgement.
    StageStarted(String, Arc<StartAck>),
    StageEnded(String),
    Finish,
}

/// Counts the sources that have read a stage's starting point, so the stage can wait for its
/// baseline: a request answered before a source's first read would land in it.
#[derive(Debug, Default)]
pub(crate) struct StartAck {
    read: AtomicUsize,
    notify: tokio::sync::Notify,
}

impl StartAck {
    pub(crate) fn done(&self) {
        self.read.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Returns once `want` sources have read their starting point, or after `within`.
    pub(super) async fn wait(&self, want: usize, within: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.read.load(Ordering::SeqCst) >= want {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }
}

/// Recent points per `source/device`, shared with the handle for the warm-up rule.
pub(crate) type Recent = Arc<Mutex<BTreeMap<String, VecDeque<GpuPoint>>>>;

pub(crate) fn push_recent(recent: &Recent, key: String, p: GpuPoint) {
    if let Ok(mut m) = recent.lock() {
        let q = m.entry(key).or_default();
        q.push_back(p);
        while q.len() > RECENT_POINTS {
            q.pop_front();
        }
    }
}

pub(crate) fn push_warning(warnings: &Arc<Mutex<Vec<String>>>, w: String) {
    // A source URL's credentials never reach a log or the results.
    let w = crate::redact::secrets(&w).into_owned();
    tracing::warn!("{w}");
    if let Ok(mut v) = warnings.lock() {
        v.push(w);
    }
}
