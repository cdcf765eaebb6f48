//! Writing a step's tokens: one pass over the batch that writes every emitting sequence's
//! tokens into the shared buffer and hands each its bytes, and the end of a sequence (its KV
//! reservation freed, its trace written).

use tokio::time::Instant;

use super::{Chunk, Done, NewSeq, Running, Scheduler};
use crate::config::SimConfig;
use crate::faults::Fault;
use crate::histogram::RequestTimes;
use crate::trace::{Outcome, TraceRecord};
use crate::wire::{Finish, FinishReason, Timings};
use crate::words;

/// When a step ended, for the tokens it writes.
struct StepEnd {
    now: Instant,
    now_us: u64,
    batch: u32,
}

impl Scheduler {
    /// Writes the tokens of every sequence that emits this step (one, or with a draft model
    /// 1 + the drafts it accepted), in one pass over the batch.
    pub(super) fn emit(&mut self) {
        let now = Instant::now();
        let at = StepEnd {
            now,
            now_us: self.us(now),
            batch: self.running.len() as u32,
        };
        let mut generated = 0u64;
        let mut running = std::mem::take(&mut self.running);
        // One reservation per step; each sequence's bytes are split off as a shared view.
        let tokens: u64 = running
            .iter()
            .filter(|r| r.emit)
            .map(|r| u64::from(r.step_tokens.max(1)))
            .sum();
        self.buf.reserve(tokens as usize * 160);
        running.retain_mut(|r| {
            if !r.emit {
                return !r.seq.tx.is_closed() || self.cancel(r, at.now_us);
            }
            self.emit_seq(r, &at, &mut generated)
        });
        self.running = running;
        self.metrics.generated(generated);
    }

    /// Sends what the buffer holds: the last `wrote` tokens written. When the client has gone
    /// they are taken back (not emitted, not traced) and false is returned.
    fn send(&mut self, r: &mut Running, wrote: u64) -> bool {
        let bytes = self.buf.split().freeze();
        if r.seq.tx.try_send(Chunk::Token(bytes)).is_ok() {
            return true;
        }
        r.emitted -= wrote;
        if self.trace.is_some() {
            r.token_us.truncate(r.token_us.len() - wrote as usize);
            r.batch_sizes.truncate(r.batch_sizes.len() - wrote as usize);
        }
        false
    }

    /// Writes one sequence's tokens of the step and sends them: a stream's as one chunk of
    /// bytes (a step's tokens reach the client together, as an engine's verified run does), a
    /// whole response's one chunk per token (its collector counts them); whether the sequence
    /// stays in the batch.
    fn emit_seq(&mut self, r: &mut Running, at: &StepEnd, generated: &mut u64) -> bool {
        let traced = self.trace.is_some();
        let each = !r.seq.framing.is_stream();
        let first_index = r.emitted;
        let mut finished = None;
        for _ in 0..r.step_tokens.max(1) {
            let s = &r.seq;
            let half = s.output_len / 2;
            if s.fault == Fault::StreamCut && r.emitted == half {
                // The step's tokens before the cut still leave.
                if !self.buf.is_empty() {
                    let _ = s.tx.try_send(Chunk::Token(self.buf.split().freeze()));
                }
                *generated += r.emitted - first_index;
                let _ = s.tx.try_send(Chunk::Cut);
                return self.end(r, at.now_us, Outcome::Cut);
            }
            if s.fault == Fault::MalformedSse && r.emitted == half {
                s.framing.write_garbage(&mut self.buf);
            }
            let index = r.emitted;
            r.emitted += 1;
            let last = r.emitted == s.output_len;
            let finish = last.then(|| finish(&self.config, r, at.now));
            let s = &r.seq;
            let piece = s.script.as_ref().and_then(|sc| sc.piece(index));
            s.framing.write_token(
                &mut self.buf,
                piece.unwrap_or_else(|| words::word(s.id, index)),
                index,
                finish.as_ref(),
            );
            if traced {
                r.token_us.push(at.now_us);
                r.batch_sizes.push(at.batch);
            }
            // Stored before the last token leaves: a client that continues the moment it
            // reads it finds the response.
            if last && let Some(p) = r.seq.store.take() {
                p.commit(r.emitted);
            }
            if each && !self.send(r, 1) {
                *generated += r.emitted - first_index;
                return self.cancel(r, at.now_us);
            }
            if last {
                finished = finish;
                break;
            }
        }
        let wrote = r.emitted - first_index;
        if !each && !self.send(r, wrote) {
            return self.cancel(r, at.now_us);
        }
        let s = &r.seq;
        // Once per step, as vLLM observes its inter-token latency once per engine step.
        if let Some(h) = &self.metrics.histograms {
            match r.last_token {
                None => h.first_token(at.now.saturating_duration_since(s.arrival)),
                Some(prev) => h.next_token(at.now.saturating_duration_since(prev)),
            }
        }
        if first_index == 0 {
            r.first_token = Some(at.now);
        }
        r.last_token = Some(at.now);
        *generated += wrote;
        if let Some(f) = finished {
            if !s.framing.is_stream() {
                let done = Done {
                    cached: f.cached,
                    timings: f.timings,
                };
                let _ = s.tx.try_send(Chunk::Done(Box::new(done)));
            }
            return self.end(r, at.now_us, Outcome::Completed);
        }
        true
    }

    /// Drops running sequences whose client has gone (checked while everything is paused).
    pub(super) fn drop_cancelled(&mut self) {
        let now_us = self.us(Instant::now());
        let mut running = std::mem::take(&mut self.running);
        running.retain_mut(|r| !r.seq.tx.is_closed() || self.cancel(r, now_us));
        self.running = running;
    }

    /// Always returns false (the sequence leaves the batch).
    pub(super) fn cancel(&mut self, r: &mut Running, now_us: u64) -> bool {
        self.end(r, now_us, Outcome::Cancelled)
    }

    /// Frees the sequence's KV reservation and traces it; returns false for `retain_mut`.
    pub(super) fn end(&mut self, r: &mut Running, now_us: u64, outcome: Outcome) -> bool {
        self.kv_used -= r.seq.prompt_tokens + r.seq.max_tokens;
        if outcome == Outcome::Completed {
            self.metrics.succeeded();
            if let (Some(h), Some(first), Some(last)) =
                (&self.metrics.histograms, r.first_token, r.last_token)
            {
                // The step that admitted a request may have started (on the virtual clock)
                // just before it arrived: its queue time is then 0, and queue + prefill is
                // still exactly its time to first token.
                let admitted = r.admitted.max(r.seq.arrival);
                h.finished(RequestTimes {
                    queue: admitted - r.seq.arrival,
                    prefill: first.saturating_duration_since(admitted),
                    decode: last.saturating_duration_since(first),
                    e2e: last.saturating_duration_since(r.seq.arrival),
                    completion_tokens: r.emitted,
                });
            }
        }
        if let Some(trace) = &self.trace {
            let record = TraceRecord {
                id: r.seq.id,
                endpoint: r.seq.api,
                stream: r.seq.framing.is_stream(),
                arrival_us: self.us(r.seq.arrival),
                admitted_us: Some(self.us(r.admitted)),
                first_token_us: r.first_token.map(|t| self.us(t)),
                finished_us: now_us,
                token_us: std::mem::take(&mut r.token_us),
                batch_sizes: std::mem::take(&mut r.batch_sizes),
                prompt_tokens: r.seq.prompt_tokens,
                cached_tokens: r.cached,
                completion_tokens: r.emitted,
                max_tokens: r.seq.max_tokens,
                fault: r.seq.fault,
                outcome,
                trace: r.seq.trace,
            };
            let _ = trace.send(record);
        }
        false
    }

    pub(super) fn finish_unadmitted(&mut self, s: NewSeq, outcome: Outcome) {
        if let Some(trace) = &self.trace {
            let _ = trace.send(TraceRecord {
                id: s.id,
                endpoint: s.api,
                stream: s.framing.is_stream(),
                arrival_us: self.us(s.arrival),
                admitted_us: None,
                first_token_us: None,
                finished_us: self.us(Instant::now()),
                token_us: Vec::new(),
                batch_sizes: Vec::new(),
                prompt_tokens: s.prompt_tokens,
                cached_tokens: 0,
                completion_tokens: 0,
                max_tokens: s.max_tokens,
                fault: s.fault,
                outcome,
                trace: s.trace,
            });
        }
    }
}

/// The end of a sequence whose last token is emitted `now`.
fn finish(config: &SimConfig, r: &Running, now: Instant) -> Finish {
    let s = &r.seq;
    let reason = if s.output_len == s.max_tokens {
        FinishReason::Length
    } else {
        FinishReason::Stop
    };
    let timings = config.timings.then(|| {
        let first = r.first_token.unwrap_or(now);
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        Timings {
            cache_n: r.cached,
            prompt_n: s.prompt_tokens - r.cached,
            prompt_ms: ms(first.saturating_duration_since(r.admitted.max(s.arrival))),
            predicted_n: r.emitted,
            predicted_ms: ms(now.saturating_duration_since(first)),
            // llama.cpp's speculative counters, with a draft model.
            draft_n: (config.draft_tokens > 0).then_some(r.drafted),
            draft_n_accepted: (config.draft_tokens > 0).then_some(r.accepted),
        }
    });
    Finish {
        reason,
        prompt: s.prompt_tokens,
        completion: r.emitted,
        cached: r.cached,
        reasoning: s.framing.reasoning().min(r.emitted),
        timings,
    }
}
