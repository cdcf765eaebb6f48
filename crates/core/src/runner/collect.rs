//! The collector: one thread per stage that receives finished requests' records, folds them
//! into the stage's aggregator (with `--cpus N`, takes in the partials each shard's fold
//! thread folded them into: `fold.rs`), writes `requests.jsonl` rows when asked, runs the
//! live checks and feeds the caller's progress tracker. Request tasks only send a record on a
//! channel, so aggregation is off the hot path.

use std::sync::{Arc, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::fold::{
    DRAIN_EVERY, Extras, Fold, HANDOFF_UNWATCHED, HANDOFF_WATCHED, Outputs, ReadBound, RecentTtfts,
    RowSink, SinkSlot,
};
use super::host::RunQueueSamples;
use super::options::{LiveCheck, StageProgress};
use super::prefix::Prefix;
use super::probe::Track;
use super::traces::StageSpans;
use crate::metrics::{DecidedBy, RequestRecord, StageAggregator, StageClock, ValidityRules};
use crate::sla::Abort;

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
        let (tx, rxs): (Vec<_>, Vec<_>) = (0..channels.max(1))
            .map(|_| mpsc::channel::<RequestRecord>())
            .unzip();
        let recent = RecentTtfts::default();
        let out = Outputs {
            stage: crate::redact::secrets(&stage).into_owned(),
            groups,
            sink: SinkSlot::new(sink),
            ring: recent.clone(),
        };
        let mut live = live;
        let extras = Extras {
            spans,
            prefix: live
                .as_mut()
                .filter(|l| l.until.is_some())
                .and_then(|l| l.prefix.take())
                .map(Prefix::new),
        };
        let watched = live.is_some() || progress.shows();
        let source = Source::new(rxs, Fold::new(agg, track, out), extras, watched);
        let join = thread::spawn(move || {
            let mut source = source;
            let shows = progress.shows();
            let mut until = None;
            let (mut aborted, mut decided) = (None, None);
            let mut checked = Instant::now();
            let mut queue = RunQueueSamples::default();
            let mut sampled: Option<Instant> = None;
            // Drains in batches on a short period instead of waking per record: on a small
            // machine a wake-up per request would compete with the request tasks for the CPU.
            loop {
                let open = source.pull();
                if sampled.is_none_or(|t| t.elapsed() >= RUN_QUEUE_EVERY) {
                    sampled = Some(Instant::now());
                    queue.extend(super::host::running_tasks());
                }
                let agg = source.agg();
                if shows {
                    progress.update(agg.done(), agg.failed(), agg.first_event_p50());
                }
                if let Some(l) = live.as_mut()
                    && let Some(why) = l.due(agg, source.prefix(), &mut checked)
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
                    source.drop_prefix();
                }
                if !open {
                    break;
                }
                thread::sleep(source.period());
            }
            progress.finish();
            let (aggregator, sink, problem) = source.finish();
            Finished {
                aggregator,
                sink,
                problem,
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

/// Where the collector's aggregator gets its records: channels it drains and folds itself
/// (without shards, and for a stage whose prefix or spans need every record in one place),
/// and the partials of the shards' fold threads (`fold.rs`), merged as they come.
struct Source {
    fold: Fold,
    rxs: Vec<mpsc::Receiver<RequestRecord>>,
    extras: Extras,
    parts: Option<mpsc::Receiver<StageAggregator>>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl Source {
    /// `watched`: whether the stage's figures are looked at while it runs (the live checks,
    /// the progress line), so the shards hand their partials over more often.
    fn new(
        rxs: Vec<mpsc::Receiver<RequestRecord>>,
        fold: Fold,
        extras: Extras,
        watched: bool,
    ) -> Source {
        let mut source = Source {
            fold,
            rxs: Vec::new(),
            extras,
            parts: None,
            threads: Vec::new(),
        };
        if rxs.len() < 2 || source.extras.any() {
            source.rxs = rxs;
            return source;
        }
        let (parts_tx, parts) = mpsc::channel();
        for (k, rx) in rxs.into_iter().enumerate() {
            let every = if watched {
                HANDOFF_WATCHED
            } else {
                HANDOFF_UNWATCHED
            };
            let part = source.fold.for_shard();
            match super::fold::spawn_shard(k, rx, part, (parts_tx.clone(), every)) {
                Ok(t) => source.threads.push(t),
                // No thread for this shard (the system refused one): its records are
                // folded here.
                Err(rx) => source.rxs.push(rx),
            }
        }
        source.parts = Some(parts);
        source
    }

    /// Takes what has arrived; whether more may come.
    fn pull(&mut self) -> bool {
        let (fold, extras) = (&mut self.fold, &mut self.extras);
        let mut note = |rec: &RequestRecord, read: ReadBound| extras.note(rec, read);
        // A channel is dropped once every sender of its shard is gone.
        self.rxs.retain(|rx| fold.drain(rx, &mut note));
        fold.fold_known(self.rxs.is_empty(), &mut note);
        fold.flush();
        let mut open = !self.rxs.is_empty();
        if let Some(parts) = &self.parts {
            loop {
                match parts.try_recv() {
                    Ok(part) => fold.agg.merge(part),
                    Err(mpsc::TryRecvError::Empty) => break open = true,
                    Err(mpsc::TryRecvError::Disconnected) => break,
                }
            }
        }
        open
    }

    /// How long to wait between pulls: a channel's records every [`DRAIN_EVERY`]; with only
    /// shards' partials (handed over once a second at most) five times less often, so the
    /// thread wakes 20 times a second, not 100.
    fn period(&self) -> Duration {
        if self.rxs.is_empty() && self.parts.is_some() {
            DRAIN_EVERY * 5
        } else {
            DRAIN_EVERY
        }
    }

    fn agg(&self) -> &StageAggregator {
        &self.fold.agg
    }

    fn prefix(&self) -> Option<&Prefix> {
        self.extras.prefix.as_ref()
    }

    fn drop_prefix(&mut self) {
        self.extras.prefix = None;
    }

    /// The aggregator, the row sink and what went wrong, once every source is closed.
    fn finish(self) -> (StageAggregator, Option<RowSink>, Option<CollectProblem>) {
        // A fold thread that panicked lost its shard's records: a bug, reported.
        let panicked = self.threads.into_iter().any(|t| t.join().is_err());
        let (sink, error) = self.fold.out.sink.take();
        let problem = match (panicked, error) {
            (true, _) => Some(CollectProblem::Panicked),
            (false, e) => e.map(CollectProblem::Sink),
        };
        (self.fold.agg, sink, problem)
    }
}
