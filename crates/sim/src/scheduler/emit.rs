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

impl Scheduler {
    /// Writes one token for every sequence that emits this step, in one pass over the batch.
    pub(super) fn emit(&mut self) {
        let now = Instant::now();
        let now_us = self.us(now);
        let batch = self.running.len() as u32;
        let traced = self.trace.is_some();
        let mut generated = 0u64;
        let mut running = std::mem::take(&mut self.running);
        // One reservation per step; each sequence's bytes are split off as a shared view.
        self.buf
            .reserve(running.iter().filter(|r| r.emit).count() * 160);
        running.retain_mut(|r| {
            if !r.emit {
                return !r.seq.tx.is_closed() || self.cancel(r, now_us);
            }
            let s = &r.seq;
            let half = s.output_len / 2;
            if s.fault == Fault::StreamCut && r.emitted == half {
                let _ = s.tx.try_send(Chunk::Cut);
                return self.end(r, now_us, Outcome::Cut);
            }
            if s.fault == Fault::MalformedSse && r.emitted == half {
                s.framing.write_garbage(&mut self.buf);
            }
            let index = r.emitted;
            r.emitted += 1;
            let last = r.emitted == s.output_len;
            let finish = last.then(|| finish(&self.config, r, now));
            let piece = s.script.as_ref().and_then(|sc| sc.piece(index));
            s.framing.write_token(
                &mut self.buf,
                piece.unwrap_or_else(|| words::word(s.id, index)),
                index,
                finish.as_ref(),
            );
            let bytes = self.buf.split().freeze();
            // Stored before the last token leaves: a client that continues the moment it
            // reads it finds the response.
            if last && let Some(p) = r.seq.store.take() {
                p.commit(r.emitted);
            }
            let s = &r.seq;
            if traced {
                r.token_us.push(now_us);
                r.batch_sizes.push(batch);
            }
            if s.tx.try_send(Chunk::Token(bytes)).is_err() {
                r.emitted -= 1;
                if traced {
                    r.token_us.pop();
                    r.batch_sizes.pop();
                }
                return self.cancel(r, now_us);
            }
            if let Some(h) = &self.metrics.histograms {
                match r.last_token {
                    None => h.first_token(now.saturating_duration_since(s.arrival)),
                    Some(prev) => h.next_token(now.saturating_duration_since(prev)),
                }
            }
            if index == 0 {
                r.first_token = Some(now);
            }
            r.last_token = Some(now);
            generated += 1;
            if let Some(f) = finish {
                if !s.framing.is_stream() {
                    let done = Done {
                        cached: f.cached,
                        timings: f.timings,
                    };
                    let _ = s.tx.try_send(Chunk::Done(Box::new(done)));
                }
                return self.end(r, now_us, Outcome::Completed);
            }
            true
        });
        self.running = running;
        self.metrics.generated(generated);
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
