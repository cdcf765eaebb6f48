//! Preemption for priority: when the request at the head of the queue finds no room (the batch
//! at `max-running`, or the KV cache full) and a running sequence is less urgent (a higher
//! `priority` value), the least urgent running sequence — the latest arrived among equals —
//! leaves the batch, frees its KV reservation and goes back to the queue; the urgent request
//! takes its place. This is vLLM's priority scheduling (V0's `_schedule_priority_preemption`,
//! V1's preemption by `(priority, arrival_time)`) in its recompute mode: the preempted sequence
//! keeps the tokens it streamed, and when it is admitted again it prefills its prompt and
//! those tokens once more before it decodes on — less what the prefix cache holds of the
//! prompt then: its blocks are looked up again, as vLLM's scheduler computes a resumed
//! request's cached blocks anew (its own blocks, cached at its first admission, hit unless
//! evicted since). That lookup counts in the prefix-cache counters of `/metrics` (queries and
//! hits), not in its prompt tokens (counted once) nor in the `cached_tokens` its response
//! reports (vLLM keeps the first scheduling's). Each preemption counts in `/metrics` as
//! `vllm:num_preemptions_total`. Under `ignore-priority` every priority is 0, so nothing is
//! ever less urgent and nothing is preempted.

use tokio::time::Instant;

use super::{Outcome, Queued, Running, Scheduler};

impl Scheduler {
    /// Preempts the least urgent running sequence when it is less urgent than `priority`;
    /// whether one was.
    pub(super) fn preempt_for(&mut self, priority: i64) -> bool {
        let victim = self
            .running
            .iter()
            .enumerate()
            .filter(|(_, r)| r.seq.priority > priority)
            .max_by_key(|(_, r)| (r.seq.priority, r.seq.arrival))
            .map(|(i, _)| i);
        let Some(i) = victim else {
            return false;
        };
        let mut r = self.running.remove(i);
        self.kv_used -= r.seq.prompt_tokens + r.seq.max_tokens;
        r.emit = false;
        self.metrics.preempted();
        // Back in the queue by (priority, arrival), as vLLM's waiting queue orders it: ahead
        // of requests of its priority that came after it.
        let key = (r.seq.priority, r.seq.arrival);
        let at = self
            .waiting
            .partition_point(|w| (w.seq().priority, w.seq().arrival) <= key);
        self.waiting.insert(at, Queued::Preempted(Box::new(r)));
        true
    }

    /// Puts a preempted sequence back in the batch: its KV reserved again, its prompt (less
    /// what the prefix cache holds of it now) and the tokens it had emitted prefilled again.
    /// The step that finishes that prefill emits its next token.
    pub(super) fn resume(&mut self, mut r: Running, need: u64) {
        self.kv_used += need;
        let hit = match &self.prefix {
            Some(cache) if r.seq.cache_prompt => {
                super::lock(cache).lookup_and_insert(&r.seq.prefix_blocks, r.seq.prompt_tokens)
            }
            _ => 0,
        };
        self.metrics.requeried(r.seq.prompt_tokens, hit);
        r.prefill_left = (r.seq.prompt_tokens - hit + r.emitted).max(1);
        r.paused_until = None;
        self.running.push(r);
    }

    /// A preempted sequence whose client left while it waited: traced as cancelled (its KV
    /// reservation was freed when it was preempted).
    pub(super) fn cancel_preempted(&mut self, r: &mut Running) {
        // `end` frees the reservation; it was freed already.
        self.kv_used += r.seq.prompt_tokens + r.seq.max_tokens;
        let now = self.us(Instant::now());
        self.end(r, now, Outcome::Cancelled);
    }
}
