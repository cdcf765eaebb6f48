//! The end of a response beyond its text: the `usage` object (with vLLM's
//! `prompt_tokens_details` under `prefix-cache`) and llama.cpp's `timings` (under `timings`),
//! written once per response by the scheduler (streams) or the non-streaming handler.

use serde::Serialize;

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FinishReason {
    Length,
    Stop,
}

impl FinishReason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FinishReason::Length => "length",
            FinishReason::Stop => "stop",
        }
    }
}

/// How a response ended, for its last chunk (or body): the finish reason and usage, and what
/// the optional settings add to them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finish {
    pub reason: FinishReason,
    pub prompt: u64,
    pub completion: u64,
    /// Prompt tokens served from the prefix cache.
    pub cached: u64,
    /// Output tokens spent reasoning (`reasoning-tokens`), part of `completion`.
    pub reasoning: u64,
    /// `Some` with `timings`.
    pub timings: Option<Timings>,
}

impl Finish {
    /// The `usage` object; `details` adds `prompt_tokens_details` (with `prefix-cache`), and
    /// reasoning adds `completion_tokens_details`, as vLLM writes them.
    pub(crate) fn write_usage(&self, out: &mut impl std::fmt::Write, details: bool) {
        let (p, c) = (self.prompt, self.completion);
        let _ = write!(
            out,
            r#"{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{}"#,
            p + c
        );
        if details {
            let _ = write!(
                out,
                r#","prompt_tokens_details":{{"cached_tokens":{}}}"#,
                self.cached
            );
        }
        if self.reasoning > 0 {
            let _ = write!(
                out,
                r#","completion_tokens_details":{{"reasoning_tokens":{}}}"#,
                self.reasoning
            );
        }
        let _ = out.write_char('}');
    }
}

/// llama.cpp's per-request `timings`, from the simulator's clock: prompt time runs from
/// admission to the first token, predicted time from the first token to the last.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Timings {
    /// Prompt tokens taken from the prefix cache.
    pub cache_n: u64,
    /// Prompt tokens prefilled (the rest of the prompt).
    pub prompt_n: u64,
    pub prompt_ms: f64,
    /// Tokens generated.
    pub predicted_n: u64,
    pub predicted_ms: f64,
    /// With a draft model (`draft-tokens`): draft tokens proposed for the request, and of them
    /// accepted, as llama-server adds them when it decodes speculatively.
    pub draft_n: Option<u64>,
    pub draft_n_accepted: Option<u64>,
}

/// llama.cpp's field order (the transcripts in docs/simulator.md show it).
#[derive(Serialize)]
struct TimingsJson {
    cache_n: u64,
    prompt_n: u64,
    prompt_ms: f64,
    prompt_per_token_ms: f64,
    prompt_per_second: f64,
    predicted_n: u64,
    predicted_ms: f64,
    predicted_per_token_ms: f64,
    predicted_per_second: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    draft_n: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    draft_n_accepted: Option<u64>,
}

impl Timings {
    /// The JSON object. Per-token figures divide the prompt time by the tokens prefilled and
    /// the predicted time by the intervals between tokens (n − 1), as llama-server's numbers
    /// do in the captured transcripts; an empty denominator gives 0 rather than infinity.
    pub(crate) fn to_json(&self) -> String {
        let ratio = |num: f64, den: u64| {
            if den == 0 || num <= 0.0 {
                0.0
            } else {
                num / den as f64
            }
        };
        let rate = |n: u64, ms: f64| if ms <= 0.0 { 0.0 } else { 1e3 * n as f64 / ms };
        let gaps = self.predicted_n.saturating_sub(1);
        let json = TimingsJson {
            cache_n: self.cache_n,
            prompt_n: self.prompt_n,
            prompt_ms: self.prompt_ms,
            prompt_per_token_ms: ratio(self.prompt_ms, self.prompt_n),
            prompt_per_second: rate(self.prompt_n, self.prompt_ms),
            predicted_n: self.predicted_n,
            predicted_ms: self.predicted_ms,
            predicted_per_token_ms: ratio(self.predicted_ms, gaps),
            predicted_per_second: rate(gaps, self.predicted_ms),
            draft_n: self.draft_n,
            draft_n_accepted: self.draft_n_accepted,
        };
        serde_json::to_string(&json).unwrap_or_else(|_| "{}".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_and_timings_json() {
        let f = Finish {
            reason: FinishReason::Stop,
            prompt: 10,
            completion: 2,
            cached: 4,
            reasoning: 0,
            timings: None,
        };
        let mut plain = String::new();
        f.write_usage(&mut plain, false);
        assert_eq!(
            plain,
            r#"{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}"#
        );
        let mut detailed = String::new();
        f.write_usage(&mut detailed, true);
        assert_eq!(
            detailed,
            r#"{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4}}"#
        );
        let timings = Timings {
            cache_n: 16,
            prompt_n: 8,
            prompt_ms: 12.0,
            predicted_n: 5,
            predicted_ms: 20.0,
            draft_n: None,
            draft_n_accepted: None,
        };
        let json = timings.to_json();
        let keys: Vec<&str> = json
            .trim_matches(['{', '}'])
            .split(',')
            .map(|kv| kv.split(':').next().unwrap().trim_matches('"'))
            .collect();
        assert_eq!(
            keys,
            [
                "cache_n",
                "prompt_n",
                "prompt_ms",
                "prompt_per_token_ms",
                "prompt_per_second",
                "predicted_n",
                "predicted_ms",
                "predicted_per_token_ms",
                "predicted_per_second"
            ]
        );
        let one = Timings {
            predicted_n: 1,
            predicted_ms: 0.0,
            prompt_n: 0,
            ..timings
        };
        let v: serde_json::Value = serde_json::from_str(&one.to_json()).unwrap();
        assert_eq!(v["predicted_per_token_ms"], 0.0);
        assert_eq!(v["prompt_per_second"], 0.0);
        let drafted = Timings {
            draft_n: Some(12),
            draft_n_accepted: Some(9),
            ..one
        };
        let json = drafted.to_json();
        assert!(
            json.ends_with(r#","draft_n":12,"draft_n_accepted":9}"#),
            "{json}"
        );
    }
}
