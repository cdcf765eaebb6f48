//! Folding finished requests' records into a stage's aggregator, on the collector's thread
//! or, with `--cpus N` (N > 1), on one fold thread per shard (`im-fold-K`) whose partial
//! aggregator the collector merges every [`HANDOFF_WATCHED`] or [`HANDOFF_UNWATCHED`] (the
//! merge is exact: see `StageAggregator::merge`). Per shard, nothing a record passes through is written by
//! another shard's records: its channel, its fold thread, its partial; the `requests.jsonl`
//! rows and the recent TTFTs are handed over once per batch, not per record.

use std::collections::VecDeque;
use std::io::{BufWriter, Write};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::prefix::Prefix;
use super::probe::Track;
use super::traces::StageSpans;
use crate::metrics::{RequestRecord, StageAggregator};

/// Where per-request rows go (`requests.jsonl`, written to a temporary file first).
pub type RowSink = BufWriter<tempfile::NamedTempFile>;

/// How often the collector drains its channels (and a fold thread its shard's).
pub(super) const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// How many recent TTFTs the warm-up stability check sees.
pub const RECENT_TTFTS: usize = 64;

/// The TTFTs (ms) of the stage's last successful requests, oldest first. Only the collector
/// thread writes; the warm-up check reads it every few seconds, so the lock is uncontended.
#[derive(Clone, Default)]
pub struct RecentTtfts(Arc<Mutex<VecDeque<f64>>>);

impl RecentTtfts {
    /// Appends a batch (oldest first), keeping the last [`RECENT_TTFTS`].
    pub(super) fn extend(&self, ms: &[f64]) {
        let ms = &ms[ms.len().saturating_sub(RECENT_TTFTS)..];
        if let Ok(mut q) = self.0.lock() {
            let over = (q.len() + ms.len())
                .saturating_sub(RECENT_TTFTS)
                .min(q.len());
            q.drain(..over);
            q.extend(ms.iter().copied());
        }
    }

    pub fn snapshot(&self) -> Vec<f64> {
        self.0
            .lock()
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }
}

/// How often a shard's fold thread hands its partial aggregator to the collector while the
/// stage's figures are watched (a progress line, a live check such as `abort-on-fail`): each
/// partial costs the fold thread its buckets anew (a stage split five ways: about 20 MB, some
/// 15 ms), so often enough for a once-a-second look and no more.
pub(super) const HANDOFF_WATCHED: Duration = Duration::from_secs(1);

/// … and while nobody looks before the stage's end: five times less often, still well within
/// the seconds a merged timeline keeps open (`MERGE_OPEN_S`, 10), which bounds how long a
/// partial may hold its seconds.
pub(super) const HANDOFF_UNWATCHED: Duration = Duration::from_secs(5);

/// A read bound for a record's reads (the loop probe's), when the stage is probed.
pub(super) type ReadBound<'a> = Option<&'a dyn Fn(u64) -> u64>;

/// The `requests.jsonl` sink, shared by a stage's folders: each writes a batch's rows under
/// the lock once per drain.
#[derive(Default)]
pub(super) struct SinkSlot(Mutex<SinkState>);

#[derive(Default)]
struct SinkState {
    sink: Option<RowSink>,
    error: Option<std::io::Error>,
}

impl SinkSlot {
    pub(super) fn new(sink: Option<RowSink>) -> Arc<SinkSlot> {
        Arc::new(SinkSlot(Mutex::new(SinkState { sink, error: None })))
    }

    /// The sink (gone after a write error) and the error, once every folder is done.
    pub(super) fn take(&self) -> (Option<RowSink>, Option<std::io::Error>) {
        match self.0.lock() {
            Ok(mut s) => (s.sink.take(), s.error.take()),
            Err(_) => (None, None),
        }
    }

    /// Writes a batch of rows; whether the sink is still open.
    fn write(&self, rows: &[u8]) -> bool {
        let Ok(mut s) = self.0.lock() else {
            return false;
        };
        if let Some(w) = s.sink.as_mut()
            && let Err(e) = w.write_all(rows)
        {
            s.error = Some(e);
            s.sink = None;
        }
        s.sink.is_some()
    }

    fn is_open(&self) -> bool {
        self.0.lock().is_ok_and(|s| s.sink.is_some())
    }
}

/// What a folder writes besides its aggregator: the rows and the recent TTFTs.
#[derive(Clone)]
pub(super) struct Outputs {
    /// The rows' stage name as results.json writes it: scrubbed of secrets (the rows are
    /// written as they come, not through the scrub of the other files).
    pub(super) stage: String,
    /// The stage's models and classes, whose names the rows carry.
    pub(super) groups: Vec<crate::protocol::Group>,
    pub(super) sink: Arc<SinkSlot>,
    pub(super) ring: RecentTtfts,
}

/// Folds records into an aggregator; what the extras (the prefix, the spans) need of each
/// record is passed to the caller's `extra`.
pub(super) struct Fold {
    pub(super) agg: StageAggregator,
    /// The loop probe's notes, which bound how late each request was read.
    track: Option<Arc<Track>>,
    /// Records waiting for the probes to have noted the instants around their reads.
    pending: VecDeque<RequestRecord>,
    pub(super) out: Outputs,
    /// This batch's rows and successful TTFTs, handed over by `flush`.
    rows: Vec<u8>,
    ttfts: Vec<f64>,
    /// Whether rows are written: the sink was there and had not failed at the last flush
    /// (so the lock is taken once per batch, never per record).
    rows_on: bool,
    /// Records folded since the last handoff.
    folded: u64,
}

impl Fold {
    pub(super) fn new(agg: StageAggregator, track: Option<Arc<Track>>, out: Outputs) -> Fold {
        Fold {
            agg,
            track,
            pending: VecDeque::new(),
            rows_on: out.sink.is_open(),
            out,
            rows: Vec::new(),
            ttfts: Vec::new(),
            folded: 0,
        }
    }

    /// An empty fold like this one, with the same outputs: a shard's.
    pub(super) fn for_shard(&self) -> Fold {
        Fold::new(self.agg.empty_like(), self.track.clone(), self.out.clone())
    }

    /// Takes every record waiting in `rx`; whether it may still send more.
    pub(super) fn drain(
        &mut self,
        rx: &mpsc::Receiver<RequestRecord>,
        extra: &mut dyn FnMut(&RequestRecord, ReadBound),
    ) -> bool {
        loop {
            match rx.try_recv() {
                Ok(rec) if self.track.is_some() => self.pending.push_back(rec),
                Ok(rec) => self.fold(&rec, extra),
                Err(mpsc::TryRecvError::Empty) => return true,
                Err(mpsc::TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// Folds the waiting records whose reads the probes have noted the instants after (all of
    /// them once the stage is over: the probes have stopped by then).
    pub(super) fn fold_known(
        &mut self,
        all: bool,
        extra: &mut dyn FnMut(&RequestRecord, ReadBound),
    ) {
        let known = self.track.as_ref().map_or(u64::MAX, |t| t.known_until_ns());
        while let Some(rec) = self.pending.front() {
            if !all && rec.done_ns.saturating_add(super::probe::AHEAD_NS) > known {
                break;
            }
            if let Some(rec) = self.pending.pop_front() {
                self.fold(&rec, extra);
            }
        }
    }

    fn fold(&mut self, rec: &RequestRecord, extra: &mut dyn FnMut(&RequestRecord, ReadBound)) {
        // The probe's read bounds, remembered for this record's reads (and the prefix's).
        let bounds = self.track.as_deref().map(|t| t.read_bounds());
        let bound = |t: u64| bounds.as_ref().map_or(0, |b| b.bound_ns(t));
        let read = bounds.as_ref().map(|_| &bound as &dyn Fn(u64) -> u64);
        self.agg.record_with(rec, read);
        extra(rec, read);
        self.folded += 1;
        if rec.error.is_none()
            && let Some(ns) = rec.ttft_ns()
        {
            self.ttfts.push(ns as f64 / 1e6);
        }
        if self.rows_on {
            let out = &self.out;
            // Into the batch's buffer: serialising into a Vec cannot fail but for a bug.
            let _ = write_row(&mut self.rows, &out.stage, &out.groups, rec);
        }
    }

    /// Hands this batch's rows to the sink and its TTFTs to the recent ones: one lock each per
    /// batch.
    pub(super) fn flush(&mut self) {
        if !self.rows.is_empty() {
            self.rows_on = self.out.sink.write(&self.rows);
            self.rows.clear();
        }
        if !self.ttfts.is_empty() {
            self.out.ring.extend(&self.ttfts);
            self.ttfts.clear();
        }
    }
}

/// Starts shard `k`'s fold thread: it drains the shard's channel every [`DRAIN_EVERY`] and
/// sends its partial aggregator to `parts` every `every` and when the channel closes.
/// Where the system refuses a thread, `rx` comes back (to be folded by the caller).
pub(super) fn spawn_shard(
    k: usize,
    rx: mpsc::Receiver<RequestRecord>,
    fold: Fold,
    (parts, every): (mpsc::Sender<StageAggregator>, Duration),
) -> Result<thread::JoinHandle<()>, mpsc::Receiver<RequestRecord>> {
    // Handed over once the thread exists, so a refused thread does not take them with it.
    let (start, started) = mpsc::sync_channel::<(mpsc::Receiver<RequestRecord>, Fold)>(1);
    let spawned = thread::Builder::new()
        .name(format!("im-fold-{k}"))
        .spawn(move || {
            let Ok((rx, mut fold)) = started.recv() else {
                return;
            };
            let mut handed = Instant::now();
            let mut none = |_: &RequestRecord, _: ReadBound| {};
            loop {
                let open = fold.drain(&rx, &mut none);
                fold.fold_known(!open, &mut none);
                fold.flush();
                if (!open || handed.elapsed() >= every) && fold.folded > 0 {
                    handed = Instant::now();
                    fold.folded = 0;
                    let fresh = fold.agg.empty_like();
                    if parts.send(std::mem::replace(&mut fold.agg, fresh)).is_err() {
                        return;
                    }
                }
                if !open {
                    return;
                }
                thread::sleep(DRAIN_EVERY);
            }
        });
    match spawned {
        Ok(t) => match start.send((rx, fold)) {
            Ok(()) => Ok(t),
            Err(mpsc::SendError((rx, _))) => Err(rx),
        },
        Err(_) => Err(rx),
    }
}

/// What only one place can do with each record: an `until-decided` stage's complete prefix
/// (fed in send order across every shard) and the spans (`otlp`). A stage with either is
/// folded on the collector's thread.
#[derive(Default)]
pub(super) struct Extras {
    pub(super) spans: Option<StageSpans>,
    pub(super) prefix: Option<Prefix>,
}

impl Extras {
    pub(super) fn any(&self) -> bool {
        self.spans.is_some() || self.prefix.is_some()
    }

    pub(super) fn note(&mut self, rec: &RequestRecord, read: ReadBound) {
        if let Some(p) = self.prefix.as_mut() {
            p.take(rec, read);
        }
        if let Some(s) = &self.spans {
            s.note(rec);
        }
    }
}

#[derive(Serialize)]
struct Row<'a> {
    stage: &'a str,
    #[serde(flatten)]
    record: &'a RequestRecord,
    ttft_ms: Option<f64>,
    e2e_ms: f64,
    send_lag_ms: f64,
    /// The mean and the longest gap between content chunks (absent with fewer than two).
    #[serde(skip_serializing_if = "Option::is_none")]
    itl_mean_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    itl_max_ms: Option<f64>,
    error: Option<String>,
    /// The W3C trace id the request carried (32 hex digits), to join with servers' traces.
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
    /// The request's model and class, when its stage is split by them.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    class: Option<&'a str>,
}

fn write_row(
    w: &mut Vec<u8>,
    stage: &str,
    groups: &[crate::protocol::Group],
    rec: &RequestRecord,
) -> serde_json::Result<()> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let name = |by: crate::protocol::Grouping| {
        let g = groups.iter().find(|g| g.by == by)?;
        let i = rec.labels.get(by)?;
        g.labels.get(usize::from(i)).map(|l| l.name.as_str())
    };
    // On the stack, borrowed by the row: no String per row.
    let trace_hex = rec.trace.map(|t| t.trace_hex());
    let gaps = &rec.itl_us;
    let gap_sum: u64 = gaps.iter().map(|&g| u64::from(g)).sum();
    let row = Row {
        stage,
        record: rec,
        ttft_ms: rec.ttft_ns().map(ms),
        e2e_ms: ms(rec.e2e_ns()),
        send_lag_ms: ms(rec.send_lag_ns()),
        itl_mean_ms: (!gaps.is_empty()).then(|| gap_sum as f64 / gaps.len() as f64 / 1e3),
        itl_max_ms: gaps.iter().max().map(|&g| f64::from(g) / 1e3),
        error: rec.error.map(|e| e.key()),
        // Hex digits are ASCII.
        trace_id: trace_hex.as_ref().and_then(|h| std::str::from_utf8(h).ok()),
        model: name(crate::protocol::Grouping::Model),
        class: name(crate::protocol::Grouping::Class),
    };
    serde_json::to_writer(&mut *w, &row)?;
    w.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recent_ttfts_keep_the_last_of_each_batch() {
        let r = RecentTtfts::default();
        let many: Vec<f64> = (0..100).map(f64::from).collect();
        r.extend(&many[..10]);
        assert_eq!(r.snapshot(), many[..10]);
        r.extend(&many[10..70]);
        assert_eq!(r.snapshot(), many[6..70]);
        r.extend(&many[70..]);
        assert_eq!(r.snapshot(), many[36..]);
        r.extend(&[]);
        assert_eq!(r.snapshot().len(), RECENT_TTFTS);
    }
}
