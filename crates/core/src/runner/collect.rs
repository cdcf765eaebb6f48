//! The collector: one thread per stage that receives finished requests' records, folds them
//! into the stage's aggregator, writes `requests.jsonl` rows when asked, and feeds the
//! caller's progress tracker. Request tasks only send a record on a channel, so aggregation is
//! off the hot path.

use std::collections::VecDeque;
use std::io::{BufWriter, Write};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::host::RunQueueSamples;
use super::options::{LiveCheck, StageProgress};
use super::prefix::Prefix;
use super::probe::Track;
use super::traces::StageSpans;
use crate::metrics::{DecidedBy, RequestRecord, StageAggregator, StageClock, ValidityRules};
use crate::sla::Abort;

/// Where per-request rows go (`requests.jsonl`, written to a temporary file first).
pub type RowSink = BufWriter<tempfile::NamedTempFile>;

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

/// How often the collector drains its channel.
const DRAIN_EVERY: Duration = Duration::from_millis(10);

/// How often a live check (`abort-on-fail`) looks at the stage's summary so far.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// A check of the stage while it runs, made on the collector's thread.
pub struct Live {
    pub check: LiveCheck,
    /// Cancelled when the check says stop: the stage stops sending.
    pub stop: CancellationToken,
    /// Cancelled (before `stop`) when it stops because an `until-decided` stage is decided:
    /// its requests in flight are then drained, not cut short.
    pub decided: CancellationToken,
    /// An `until-decided` stage's rule …
    pub until: Option<super::until::Until>,
    /// … and an empty aggregator made as the stage's own, for its complete prefix (taken by
    /// the collector, which feeds it).
    pub prefix: Option<StageAggregator>,
    /// Requests the stage has begun, per shard (see `StageShared::started`).
    pub(super) begun: Arc<super::counters::Begun>,
    /// The stage's clock start, set once sending begins (checks wait for it).
    pub t0: Arc<OnceLock<Instant>>,
    /// What the snapshot's validity rules know of the stage beyond its records.
    pub clock: StageClock,
    pub rules: ValidityRules,
}

/// Why a live check stopped its stage.
enum LiveStop {
    Abort(Abort),
    /// Decided at this many seconds, with this many requests completed.
    Decided(f64, u64),
}

impl Live {
    /// The check's verdict on the summary so far, when one is due; an `until-decided` stage
    /// past its minimum stops when either look decides it: every request begun (those in
    /// flight as unknown) or the complete `prefix`.
    fn due(
        &mut self,
        agg: &StageAggregator,
        prefix: Option<&Prefix>,
        last: &mut Instant,
    ) -> Option<LiveStop> {
        let t0 = *self.t0.get()?;
        if last.elapsed() < CHECK_EVERY || agg.done() == 0 {
            return None;
        }
        *last = Instant::now();
        let elapsed = t0.elapsed();
        let clock = StageClock {
            wall_ns: elapsed.as_nanos() as u64,
            ..self.clock
        };
        let secs = elapsed.as_secs_f64();
        // Past its minimum, an `until-decided` stage is judged on its confidence sequences,
        // which read the histograms (encoded once a second, off the requests' path).
        // Read after the records folded so far, so that a request finishing in between is
        // counted twice rather than not at all: its value is then taken as unknown.
        let done = agg.done();
        let pending = self.begun.total().saturating_sub(done);
        let past_minimum = self
            .until
            .as_mut()
            .and_then(|u| u.look(done, secs).then(|| u.snapshot_record(pending)));
        let snapshot = match past_minimum {
            Some(record) => {
                let mut s = agg.snapshot_with_histograms(clock, &self.rules);
                s.until_decided = Some(record);
                s
            }
            None => agg.snapshot(clock, &self.rules),
        };
        let judged = (self.check)(&snapshot);
        if let Some(abort) = judged.abort {
            return Some(LiveStop::Abort(abort));
        }
        snapshot.until_decided.as_ref()?;
        let by_prefix = self.judge_prefix(prefix, clock);
        let by = match (judged.decided, by_prefix) {
            (true, _) => DecidedBy::InFlight,
            (false, true) => DecidedBy::Prefix,
            (false, false) => return None,
        };
        if let Some(u) = self.until.as_mut() {
            u.decided_by(by);
        }
        Some(LiveStop::Decided(secs, snapshot.requests.sent))
    }

    /// Judges the complete prefix (nothing in flight in it) on the stage's sequences, and
    /// keeps its verdicts as the latest look's: whether it decides every assertion.
    fn judge_prefix(&mut self, prefix: Option<&Prefix>, clock: StageClock) -> bool {
        let (Some(p), Some(u)) = (prefix, self.until.as_mut()) else {
            return false;
        };
        if p.len() == 0 {
            return false;
        }
        let mut s = p.agg.snapshot_with_histograms(clock, &self.rules);
        s.until_decided = Some(u.snapshot_record(0));
        let judged = (self.check)(&s);
        u.note_prefix(p.len(), p.stalled(), judged.verdicts);
        judged.decided
    }
}

/// How many recent TTFTs the warm-up stability check sees.
pub const RECENT_TTFTS: usize = 64;

/// The TTFTs (ms) of the stage's last successful requests, oldest first. Only the collector
/// thread writes; the warm-up check reads it every few seconds, so the lock is uncontended.
#[derive(Clone, Default)]
pub struct RecentTtfts(Arc<Mutex<VecDeque<f64>>>);

impl RecentTtfts {
    pub(super) fn push(&self, ms: f64) {
        if let Ok(mut q) = self.0.lock() {
            if q.len() == RECENT_TTFTS {
                q.pop_front();
            }
            q.push_back(ms);
        }
    }

    pub fn snapshot(&self) -> Vec<f64> {
        self.0
            .lock()
            .map(|q| q.iter().copied().collect())
            .unwrap_or_default()
    }
}

/// How often the run queue is sampled.
const RUN_QUEUE_EVERY: Duration = Duration::from_millis(100);

pub struct Collector {
    /// One channel per shard (`--cpus`), one without: a shard's requests send only on its
    /// own, so no two cores write one channel's tail.
    pub tx: Vec<mpsc::Sender<RequestRecord>>,
    pub recent: RecentTtfts,
    join: thread::JoinHandle<Finished>,
}

/// What a collector hands back once its stage is over.
pub struct Finished {
    pub aggregator: StageAggregator,
    /// The row sink, for the next stage (gone after a write error).
    pub sink: Option<RowSink>,
    pub problem: Option<CollectProblem>,
    /// Why the live check stopped the stage, if it did.
    pub aborted: Option<Abort>,
    /// The machine's run queue while the stage ran: mean and most.
    pub run_queue: Option<(f64, u32)>,
    /// An `until-decided` stage's rule, with its looks counted …
    pub until: Option<super::until::Until>,
    /// … and when it was decided (seconds, requests completed), if it was.
    pub decided: Option<(f64, u64)>,
}

/// What went wrong in a collector (the stage's numbers may be incomplete).
#[derive(Debug)]
pub enum CollectProblem {
    /// Writing `requests.jsonl` failed; no more rows are written.
    Sink(std::io::Error),
    /// The aggregation code panicked: a bug, reported instead of aborting the run.
    Panicked,
}

impl Collector {
    #[allow(
        clippy::too_many_arguments,
        reason = "the stage's parts the collector feeds, each made by the stage"
    )]
    pub fn spawn(
        stage: String,
        groups: Vec<crate::protocol::Group>,
        agg: StageAggregator,
        sink: Option<RowSink>,
        mut progress: Box<dyn StageProgress>,
        live: Option<Live>,
        (track, spans): (Option<Arc<Track>>, Option<StageSpans>),
        channels: usize,
    ) -> Collector {
        let (tx, mut rxs): (Vec<_>, Vec<_>) = (0..channels.max(1))
            .map(|_| mpsc::channel::<RequestRecord>())
            .unzip();
        let recent = RecentTtfts::default();
        let mut folder = Folder {
            // The rows' stage name as results.json writes it: scrubbed of secrets (the rows are
            // written as they come, not through the scrub of the other files).
            stage: crate::redact::secrets(&stage).into_owned(),
            groups,
            agg,
            ring: recent.clone(),
            sink,
            sink_error: None,
            track,
            pending: VecDeque::new(),
            spans,
            prefix: None,
        };
        let mut live = live;
        folder.prefix = live
            .as_mut()
            .filter(|l| l.until.is_some())
            .and_then(|l| l.prefix.take())
            .map(Prefix::new);
        let join = thread::spawn(move || {
            let shows = progress.shows();
            let mut until = None;
            let (mut aborted, mut decided) = (None, None);
            let mut checked = Instant::now();
            let mut queue = RunQueueSamples::default();
            let mut sampled: Option<Instant> = None;
            // Drains in batches on a short period instead of waking per record: on a small
            // machine a wake-up per request would compete with the request tasks for the CPU.
            loop {
                // A channel is dropped once every sender of its shard is gone.
                rxs.retain(|rx| folder.drain(rx));
                let open = !rxs.is_empty();
                folder.fold_known(!open);
                if sampled.is_none_or(|t| t.elapsed() >= RUN_QUEUE_EVERY) {
                    sampled = Some(Instant::now());
                    queue.extend(super::host::running_tasks());
                }
                let agg = &folder.agg;
                if shows {
                    progress.update(agg.done(), agg.failed(), agg.first_event_p50());
                }
                if let Some(l) = live.as_mut()
                    && let Some(why) = l.due(agg, folder.prefix.as_ref(), &mut checked)
                {
                    match why {
                        LiveStop::Abort(why) => aborted = Some(why),
                        LiveStop::Decided(secs, done) => {
                            l.decided.cancel();
                            decided = Some((secs, done));
                        }
                    }
                    l.stop.cancel();
                    until = live.take().and_then(|l| l.until);
                    // No look comes after the stop: the prefix is no longer needed.
                    folder.prefix = None;
                }
                if !open {
                    break;
                }
                thread::sleep(DRAIN_EVERY);
            }
            progress.finish();
            Finished {
                aggregator: folder.agg,
                sink: folder.sink,
                problem: folder.sink_error.map(CollectProblem::Sink),
                aborted,
                run_queue: queue.summary(),
                until: until.or_else(|| live.and_then(|l| l.until)),
                decided,
            }
        });
        Collector { tx, recent, join }
    }

    /// Waits for every sender to be gone, then returns the aggregator and the row sink.
    pub fn finish(self) -> Finished {
        drop(self.tx);
        self.join.join().unwrap_or_else(|_| {
            // The collector only runs our own aggregation code; a panic there is a bug, but
            // losing the stage is better than aborting the run and losing every stage.
            Finished {
                aggregator: StageAggregator::new(
                    "lost",
                    Default::default(),
                    crate::metrics::GoodputSlo::default(),
                ),
                sink: None,
                problem: Some(CollectProblem::Panicked),
                aborted: None,
                run_queue: None,
                until: None,
                decided: None,
            }
        })
    }
}

/// What the collector thread folds each record into.
struct Folder {
    stage: String,
    agg: StageAggregator,
    ring: RecentTtfts,
    sink: Option<RowSink>,
    sink_error: Option<std::io::Error>,
    /// The stage's models and classes, whose names the rows carry.
    groups: Vec<crate::protocol::Group>,
    /// The loop probe's notes, which bound how late each request was read.
    track: Option<Arc<Track>>,
    /// Records waiting for the probes to have noted the instants around their reads.
    pending: VecDeque<RequestRecord>,
    /// Each record's span (`otlp`) and its times for the join (`otlp-receive`).
    spans: Option<StageSpans>,
    /// An `until-decided` stage's complete prefix, fed in send order.
    prefix: Option<Prefix>,
}

impl Folder {
    /// Takes every record waiting in `rx`; whether it may still send more.
    fn drain(&mut self, rx: &mpsc::Receiver<RequestRecord>) -> bool {
        loop {
            match rx.try_recv() {
                Ok(rec) => self.take(rec),
                Err(mpsc::TryRecvError::Empty) => return true,
                Err(mpsc::TryRecvError::Disconnected) => return false,
            }
        }
    }

    /// A record from a request task: folded now, or once the probes have caught up with it.
    fn take(&mut self, rec: RequestRecord) {
        if self.track.is_some() {
            self.pending.push_back(rec);
        } else {
            self.fold(&rec);
        }
    }

    /// Folds the waiting records whose reads the probes have noted the instants after (all of
    /// them once the stage is over: the probes have stopped by then).
    fn fold_known(&mut self, all: bool) {
        let known = self.track.as_ref().map_or(u64::MAX, |t| t.known_until_ns());
        while let Some(rec) = self.pending.front() {
            if !all && rec.done_ns.saturating_add(super::probe::AHEAD_NS) > known {
                break;
            }
            if let Some(rec) = self.pending.pop_front() {
                self.fold(&rec);
            }
        }
    }

    fn fold(&mut self, rec: &RequestRecord) {
        // The probe's read bounds, remembered for this record's reads (and the prefix's).
        let bounds = self.track.as_deref().map(|t| t.read_bounds());
        let bound = |t: u64| bounds.as_ref().map_or(0, |b| b.bound_ns(t));
        let read = bounds.as_ref().map(|_| &bound as &dyn Fn(u64) -> u64);
        self.agg.record_with(rec, read);
        if let Some(p) = self.prefix.as_mut() {
            p.take(rec, read);
        }
        if rec.error.is_none()
            && let Some(ns) = rec.ttft_ns()
        {
            self.ring.push(ns as f64 / 1e6);
        }
        if let Some(s) = &self.spans {
            s.note(rec);
        }
        if let Some(w) = self.sink.as_mut()
            && let Err(e) = write_row(w, &self.stage, &self.groups, rec)
        {
            self.sink_error = Some(e);
            self.sink = None;
        }
    }
}

fn write_row(
    w: &mut RowSink,
    stage: &str,
    groups: &[crate::protocol::Group],
    rec: &RequestRecord,
) -> std::io::Result<()> {
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
    w.write_all(b"\n")
}
