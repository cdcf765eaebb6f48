//! The continuous-batching latency model: ONE task steps every sequence on a virtual clock
//! anchored to real time. Each step admits waiting requests (by priority, then first come
//! first served, within `max-running` and the KV capacity; a waiting request more urgent than
//! a running one preempts it when there is no room, see `preempt.rs`), prefills up to `prefill-chunk` prompt tokens, decodes one token for every
//! running sequence, sleeps until the step's computed end, then writes all the step's tokens
//! in one pass into one shared buffer, split into a `Bytes` per sequence.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::config::SimConfig;
use super::draft::{DraftModel, StepDrafts};
use super::faults::Fault;
use super::framing::Framing;
use super::metrics::SimMetrics;
use super::prefix::PrefixCache;
use super::trace::{Outcome, TraceRecord};
use super::wire::Timings;
use crate::protocol::Api;

mod emit;
mod preempt;

/// One item on a sequence's channel.
#[derive(Debug)]
pub(crate) enum Chunk {
    /// A token's bytes (SSE events for a stream, the word for a non-streaming response).
    Token(Bytes),
    /// The stream-cut fault fired: the body errors, so the connection is dropped without the
    /// end of the response.
    Cut,
    /// After the last token of a non-streaming response: what its `usage` (and `timings`)
    /// need besides the text. A stream has them in its last chunk's bytes. Boxed so that the
    /// token variant, sent once per token, sets the channel's slot size.
    Done(Box<Done>),
}

#[derive(Debug)]
pub(crate) struct Done {
    pub cached: u64,
    pub timings: Option<Timings>,
}

/// The prefix cache, shared with the HTTP handlers that reset it. The scheduler locks it once
/// per admitted request; a reset locks it once.
pub(crate) type SharedPrefixCache = Arc<Mutex<PrefixCache>>;

/// Locks the cache; a panic elsewhere while holding it leaves a usable set of hashes, so a
/// poisoned lock is taken over rather than propagated.
pub(crate) fn lock(cache: &SharedPrefixCache) -> std::sync::MutexGuard<'_, PrefixCache> {
    cache.lock().unwrap_or_else(|e| e.into_inner())
}

/// A request handed to the scheduler by an HTTP handler.
pub(crate) struct NewSeq {
    pub id: u64,
    pub api: Api,
    pub arrival: Instant,
    pub prompt_tokens: u64,
    /// Tokens the model will emit (≤ max_tokens).
    pub output_len: u64,
    /// The effective cap, reserved in the KV cache.
    pub max_tokens: u64,
    pub fault: Fault,
    pub framing: Framing,
    /// Chained hashes of the prompt's whole blocks (empty without `prefix-cache`).
    pub prefix_blocks: Vec<u64>,
    /// The request lets the prefix cache serve and keep its prompt (llama.cpp's
    /// `cache_prompt`).
    pub cache_prompt: bool,
    /// vLLM's `priority` (lower first); 0 for all under `ignore-priority`.
    pub priority: i64,
    /// Its model's token cost relative to the base model's (an adapter's `adapters` factor).
    pub cost: f64,
    /// Bounded with room for every chunk of the response, so `try_send` never finds it full.
    pub tx: mpsc::Sender<Chunk>,
    /// Its `traceparent`, read only when spans are exported.
    pub trace: Option<crate::protocol::TraceContext>,
    /// A Responses request with `store`: its response, stored when its last token is
    /// written.
    pub store: Option<super::store::Pending>,
    /// The answer worked out for the request's question (`answer-accuracy`), written in
    /// place of filler words.
    pub script: Option<Box<super::qa::Script>>,
}

/// A request waiting for a place in the batch: new, or preempted from it (with what it had
/// emitted, to resume from).
#[allow(
    clippy::large_enum_variant,
    reason = "every request is queued new, a preempted one rarely: boxing the new would allocate per request"
)]
enum Queued {
    New(NewSeq),
    Preempted(Box<Running>),
}

impl Queued {
    fn seq(&self) -> &NewSeq {
        match self {
            Queued::New(s) => s,
            Queued::Preempted(r) => &r.seq,
        }
    }
}

struct Running {
    seq: NewSeq,
    admitted: Instant,
    /// Prompt tokens served from the prefix cache.
    cached: u64,
    prefill_left: u64,
    emitted: u64,
    /// Emits nothing before this instant (stall, slow first byte).
    paused_until: Option<Instant>,
    /// The pause fault has been applied (it applies once).
    paused_once: bool,
    emit: bool,
    first_token: Option<Instant>,
    last_token: Option<Instant>,
    token_us: Vec<u64>,
    batch_sizes: Vec<u32>,
    /// Tokens it writes this step: 1, or with a draft model 1 + the drafts it accepted.
    step_tokens: u32,
    /// Draft tokens proposed for it, and of them accepted (`draft-tokens`).
    drafted: u64,
    accepted: u64,
}

/// A step whose end is further than this behind real time resets the clock to now, so a
/// busy machine does not make the simulator race to catch up.
const MAX_LAG: std::time::Duration = std::time::Duration::from_millis(20);

pub(crate) struct Scheduler {
    config: SimConfig,
    epoch: Instant,
    intake: mpsc::UnboundedReceiver<NewSeq>,
    trace: Option<mpsc::UnboundedSender<TraceRecord>>,
    waiting: VecDeque<Queued>,
    running: Vec<Running>,
    kv_used: u64,
    rng: ChaCha8Rng,
    buf: BytesMut,
    metrics: Arc<SimMetrics>,
    prefix: Option<SharedPrefixCache>,
    /// `Some` with `draft-tokens`.
    draft: Option<DraftModel>,
    /// Per draft position, this step's drafts that accepted it (reused every step).
    runs: Vec<u64>,
}

impl Scheduler {
    pub(crate) fn new(
        config: SimConfig,
        epoch: Instant,
        intake: mpsc::UnboundedReceiver<NewSeq>,
        trace: Option<mpsc::UnboundedSender<TraceRecord>>,
        metrics: Arc<SimMetrics>,
        prefix: Option<SharedPrefixCache>,
    ) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(config.seed ^ 0x5eed_57e9);
        let draft = DraftModel::of(&config);
        let runs = vec![0; draft.as_ref().map_or(0, DraftModel::k)];
        Scheduler {
            draft,
            runs,
            config,
            epoch,
            intake,
            trace,
            waiting: VecDeque::new(),
            running: Vec::new(),
            kv_used: 0,
            rng,
            buf: BytesMut::new(),
            metrics,
            prefix,
        }
    }

    fn us(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch).as_micros() as u64
    }

    /// Runs until the intake closes and every sequence is done.
    pub(crate) async fn run(mut self) {
        let mut clock: Option<Instant> = None;
        loop {
            if self.running.is_empty() && self.waiting.is_empty() {
                // Idle: wait for work instead of stepping.
                match self.intake.recv().await {
                    Some(s) => self.enqueue(s),
                    None => return,
                }
                clock = None;
            }
            while let Ok(s) = self.intake.try_recv() {
                self.enqueue(s);
            }
            let now = Instant::now();
            let start = match clock {
                Some(t) if t + MAX_LAG >= now => t,
                _ => now,
            };
            self.admit(start);
            self.publish();
            let (prefilled, decoding) = self.plan(start);
            if prefilled == 0.0 && decoding == 0.0 {
                // Everything running is paused (or queued behind it): sleep until the first
                // pause ends or new work arrives, never spin.
                let wake = self.running.iter().filter_map(|r| r.paused_until).min();
                let sleep = tokio::time::sleep_until(wake.unwrap_or(now + MAX_LAG));
                tokio::select! {
                    _ = sleep => {}
                    s = self.intake.recv() => if let Some(s) = s { self.enqueue(s) },
                }
                self.drop_cancelled();
                clock = None;
                continue;
            }
            let deadline = start + self.step_duration(prefilled, decoding);
            if deadline > Instant::now() {
                tokio::time::sleep_until(deadline).await;
            } else {
                // Zero-cost steps still let the HTTP side run between them.
                tokio::task::yield_now().await;
            }
            self.emit();
            self.publish();
            clock = Some(deadline);
        }
    }

    /// Queues a request behind every waiting one of its priority or a more urgent one (lower
    /// first, as vLLM's priority scheduling; first come, first served within a priority, and
    /// for all under `ignore-priority`, where every priority is 0).
    fn enqueue(&mut self, s: NewSeq) {
        let at = self
            .waiting
            .partition_point(|w| w.seq().priority <= s.priority);
        self.waiting.insert(at, Queued::New(s));
    }

    fn admit(&mut self, now: Instant) {
        while let Some((closed, need, priority)) = self.waiting.front().map(|q| {
            let s = q.seq();
            (s.tx.is_closed(), s.prompt_tokens + s.max_tokens, s.priority)
        }) {
            if closed {
                match self.waiting.pop_front() {
                    Some(Queued::New(s)) => self.finish_unadmitted(s, Outcome::Cancelled),
                    Some(Queued::Preempted(mut r)) => self.cancel_preempted(&mut r),
                    None => {}
                }
                continue;
            }
            let full = self.running.len() >= self.config.max_running as usize;
            if full || (self.kv_used + need > self.config.kv_capacity && !self.running.is_empty()) {
                // No room: a less urgent running sequence makes room, or the queue waits.
                if self.preempt_for(priority) {
                    continue;
                }
                break;
            }
            let seq = match self.waiting.pop_front() {
                Some(Queued::New(seq)) => seq,
                Some(Queued::Preempted(r)) => {
                    self.resume(*r, need);
                    continue;
                }
                None => break,
            };
            self.kv_used += need;
            let cached = match &self.prefix {
                Some(cache) if seq.cache_prompt => {
                    lock(cache).lookup_and_insert(&seq.prefix_blocks, seq.prompt_tokens)
                }
                _ => 0,
            };
            self.metrics.admitted(seq.prompt_tokens, cached);
            let traced = self.trace.is_some();
            let cap = if traced { seq.output_len as usize } else { 0 };
            self.running.push(Running {
                // An empty prompt still takes one prefill step, which yields the first token;
                // so does a cached one (the cache never covers a prompt's last token).
                prefill_left: (seq.prompt_tokens - cached).max(1),
                admitted: now,
                cached,
                emitted: 0,
                paused_until: None,
                paused_once: false,
                emit: false,
                first_token: None,
                last_token: None,
                token_us: Vec::with_capacity(cap),
                batch_sizes: Vec::with_capacity(cap),
                step_tokens: 1,
                drafted: 0,
                accepted: 0,
                seq,
            });
        }
    }

    /// Decides what each running sequence does this step; returns (prompt tokens prefilled,
    /// sequences decoding), each weighed by its model's cost (an adapter's factor).
    fn plan(&mut self, start: Instant) -> (f64, f64) {
        let mut budget = match self.config.prefill_chunk {
            0 => u64::MAX,
            n => n,
        };
        let mut prefilled = 0.0;
        let mut decoding = 0.0;
        let mut step = StepDrafts::default();
        for r in &mut self.running {
            r.emit = false;
            r.step_tokens = 1;
            if r.prefill_left > 0 {
                let take = r.prefill_left.min(budget);
                r.prefill_left -= take;
                budget -= take;
                prefilled += take as f64 * r.seq.cost;
                // The step that finishes a prompt also yields its first token.
                r.emit = r.prefill_left == 0;
                if r.emit && r.seq.fault == Fault::SlowFirstByte && !r.paused_once {
                    r.paused_once = true;
                    r.emit = false;
                    r.paused_until = Some(start + self.config.slow_first_byte_delay.as_std());
                }
                continue;
            }
            if r.paused_until.is_some_and(|t| t > start) {
                continue;
            }
            if r.seq.fault == Fault::Stall && !r.paused_once && r.emitted == r.seq.output_len / 2 {
                r.paused_once = true;
                r.paused_until = Some(start + self.config.stall_duration.as_std());
                continue;
            }
            r.emit = true;
            decoding += r.seq.cost;
            r.step_tokens = match &self.draft {
                Some(d) => 1 + verify(d, r, &mut step, &mut self.runs),
                None => 1,
            };
            // A step never writes past the answer's end, nor past the half-way point where a
            // stall is due.
            let mut room = r.seq.output_len - r.emitted;
            if r.seq.fault == Fault::Stall && !r.paused_once && r.emitted < r.seq.output_len / 2 {
                room = room.min(r.seq.output_len / 2 - r.emitted);
            }
            r.step_tokens = r
                .step_tokens
                .min(room.max(1).min(u64::from(u32::MAX)) as u32);
        }
        if let Some(d) = &self.metrics.drafts
            && step.drafts > 0
        {
            d.add(step, &self.runs);
            self.runs.fill(0);
        }
        (prefilled, decoding)
    }

    fn publish(&self) {
        self.metrics
            .set_state(self.running.len(), self.waiting.len(), self.kv_used);
    }

    fn step_duration(&mut self, prefilled: f64, decoding: f64) -> std::time::Duration {
        let c = &self.config;
        let mut nanos = c.prefill_per_token.as_nanos() as f64 * prefilled;
        if decoding > 0.0 {
            nanos +=
                c.decode_base.as_nanos() as f64 + c.decode_per_seq.as_nanos() as f64 * decoding;
        }
        if c.jitter > 0.0 && nanos > 0.0 {
            nanos *= self.rng.random_range(1.0 - c.jitter..=1.0 + c.jitter);
        }
        std::time::Duration::from_nanos(nanos as u64)
    }
}

/// A verification step of `r`'s drafts: how many it accepts, counted for the request, the
/// step and each position. Counted as drawn, as vLLM counts them, even where the answer ends
/// within the step.
fn verify(d: &DraftModel, r: &mut Running, step: &mut StepDrafts, runs: &mut [u64]) -> u32 {
    let accepted = d.accepted(r.seq.id, r.emitted);
    r.drafted += d.k() as u64;
    r.accepted += u64::from(accepted);
    step.drafts += 1;
    step.accepted += u64::from(accepted);
    for n in runs.iter_mut().take(accepted as usize) {
        *n += 1;
    }
    accepted
}
