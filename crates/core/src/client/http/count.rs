//! How many tokens a request's answer and prompt held: the server's usage when plausible,
//! llama.cpp's timings, the server's `/tokenize`, else the scenario's tokenizer; and the
//! server's prompt count held against the plan's. After `done_ns`, off every latency.

use super::Client;
use crate::metrics::{RequestRecord, TokenSource};
use crate::protocol::{Answer, Inputs, Usage};

impl Client {
    /// The server's own count of `text`'s tokens (`POST /tokenize` at the server's root, no
    /// special tokens added); `None` when it has no usable `/tokenize`. Off the hot path: the
    /// preflight asks it once.
    pub async fn server_token_count(&self, text: &str) -> Option<u64> {
        self.tokenize
            .as_ref()?
            .count(&self.http, text, self.timeout)
            .await
    }

    /// Sets the output token count from the best source there is: the server's `usage` when
    /// it is plausible, else llama.cpp's `timings.predicted_n`, else an estimate from the text
    /// (the server's `/tokenize`, else the scenario's tokenizer). Runs after `done_ns` is
    /// taken, so a `/tokenize` call is not part of any latency.
    pub(super) async fn count_output(
        &self,
        rec: &mut RequestRecord,
        usage: Option<Usage>,
        text: &str,
    ) {
        if let Some(u) = usage {
            let n = u.completion_tokens;
            let plausible = n <= u64::from(rec.planned_output_tokens.max(1))
                && n.saturating_mul(2) >= u64::from(rec.chunks);
            if plausible {
                rec.token_source = TokenSource::Usage;
                rec.output_tokens = n.min(u32::MAX as u64) as u32;
                // Reasoning is part of the output: a larger count is not believed.
                rec.reasoning_tokens = u
                    .reasoning_tokens
                    .filter(|&r| r <= n)
                    .map(|r| r.min(u32::MAX as u64) as u32);
                return;
            }
            rec.implausible_usage = true;
        }
        let predicted = rec
            .server_timings
            .and_then(|t| t.predicted_n)
            .filter(|&n| n <= u64::from(rec.planned_output_tokens.max(1)));
        if let Some(n) = predicted {
            rec.token_source = TokenSource::Timings;
            rec.output_tokens = n as u32;
            return;
        }
        if text.is_empty() {
            rec.token_source = TokenSource::Tokenizer;
            rec.output_tokens = 0;
            return;
        }
        // Only a request that succeeded feeds the numbers: do not ask the server for others.
        if rec.ok()
            && let Some(t) = &self.tokenize
            && let Some(n) = t.count(&self.http, text, self.timeout).await
        {
            rec.token_source = TokenSource::Tokenize;
            rec.output_tokens = n.min(u32::MAX as u64) as u32;
            return;
        }
        rec.token_source = TokenSource::Tokenizer;
        rec.output_tokens = self.counter.count(text).min(u32::MAX as usize) as u32;
    }

    /// Compares the server's prompt count with the plan's, then keeps the server's.
    pub(super) fn check_prompt(
        &self,
        rec: &mut RequestRecord,
        prompt_tokens: u64,
        cached: Option<u64>,
    ) {
        let ours = rec.planned_input_tokens as f64;
        let theirs = prompt_tokens as f64;
        // The server counts its chat template too: a few tokens per message on top of
        // the text we sent, hence an absolute allowance besides the relative one.
        // A conversation's later messages add theirs (8 each, a generous chat template).
        let per = u64::from(self.api.kind().template_tokens());
        let template = match self.answer {
            // Each input of a pooling request (each pair) has its own special tokens.
            Answer::Pooled(_) => per * u64::from(rec.inputs.max(1)),
            Answer::Stream | Answer::Whole => per + 8 * u64::from(rec.messages.saturating_sub(1)),
        };
        let allowed = (ours * 0.05).max(template as f64);
        rec.token_mismatch = ours > 0.0
            && match self.answer {
                // A cross-encoder counts the query once per pair (ours); a bi-encoder embeds it
                // once: fewer, down to about one pair's share.
                Answer::Pooled(Inputs::Pairs) => {
                    theirs > ours + allowed
                        || theirs + allowed < ours / f64::from(rec.inputs.max(1))
                }
                // Images add the server's vision tokens, which the plan cannot count: with
                // them only a count below the text's is a disagreement.
                _ if rec.images > 0 => ours - theirs > allowed,
                _ => (theirs - ours).abs() > allowed,
            };
        rec.input_tokens = prompt_tokens.min(u32::MAX as u64) as u32;
        rec.cached_tokens = cached.map(|c| c.min(u32::MAX as u64) as u32);
    }
}
