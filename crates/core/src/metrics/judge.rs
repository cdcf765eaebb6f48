//! What an LLM judge said of a stage's sampled answers (`quality { judge { … } }`,
//! docs/quality.md): how many answers got each score, what failed to score, and what the judge
//! cost. `quality.judge` in results.json; `judge_score` is its mean, with a Student-t interval.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Fewest scored answers for an interval on their mean: under it `judge_score` is undecided
/// (a handful of equal scores would otherwise make a zero-width interval).
pub const JUDGE_MIN_SCORED: u64 = 10;

/// A stage's judge figures. *Added in schema 3 (0.3.0).*
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JudgeTally {
    /// The judge model.
    pub model: String,
    /// Scores run from 1 to `scale`.
    pub scale: u32,
    /// Answers offered for judging (the checked answers, sampled down to `sample`).
    pub sampled: u64,
    /// Answers the judge scored, at each score: `counts[k - 1]` got `k`.
    pub counts: Vec<u64>,
    /// Answers scored (the sum of `counts`).
    pub scored: u64,
    /// Answers the judge did not score: an HTTP error, a timeout, an answer that is no
    /// `Score: K`. Never counted against the answer.
    pub failures: u64,
    /// Calls made to the judge (a cache hit makes none).
    pub calls: u64,
    /// Scores read from the cache.
    pub cache_hits: u64,
    /// Tokens the judge's calls used, as its answers reported them.
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The mean score, when any was scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    /// Its Student-t interval at the run's confidence, `[low, high]`, from
    /// [`JUDGE_MIN_SCORED`] scores on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// What the judge's tokens cost at the prices the scenario gave (`price …`); absent
    /// without prices. *Added in 0.3.0.*
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<JudgeCost>,
}

/// The judge's cost: `prompt_tokens` × the input price + `completion_tokens` × the output
/// price, each price per million tokens. Cached scores made no call and cost nothing.
/// *Added in 0.3.0.*
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JudgeCost {
    /// The whole cost (`input + output`).
    pub total: f64,
    /// The prompt tokens' cost.
    pub input: f64,
    /// The completion tokens' cost.
    pub output: f64,
    /// The prices, per million tokens.
    pub input_per_million: f64,
    pub output_per_million: f64,
    /// The unit the scenario named (`currency="USD"`); absent: a plain number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
}

impl JudgeCost {
    /// No cost yet, at these prices (per million tokens).
    pub fn priced(
        input_per_million: f64,
        output_per_million: f64,
        currency: Option<String>,
    ) -> Self {
        JudgeCost {
            input_per_million,
            output_per_million,
            currency,
            ..JudgeCost::default()
        }
    }

    /// The cost of `prompt` and `completion` tokens at these prices.
    fn of(mut self, prompt: u64, completion: u64) -> Self {
        self.input = prompt as f64 * self.input_per_million / 1e6;
        self.output = completion as f64 * self.output_per_million / 1e6;
        self.total = self.input + self.output;
        self
    }
}

impl JudgeTally {
    /// One score `k` (in `1..=scale`).
    pub fn score(&mut self, k: u32) {
        let i = (k.max(1) - 1) as usize;
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.scored += 1;
    }

    /// Adds another tally's counts (rounds of a stage, shards of a run).
    pub fn add(&mut self, o: &JudgeTally) {
        if self.model.is_empty() {
            self.model.clone_from(&o.model);
        }
        self.scale = self.scale.max(o.scale);
        if self.counts.len() < o.counts.len() {
            self.counts.resize(o.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.sampled += o.sampled;
        self.scored += o.scored;
        self.failures += o.failures;
        self.calls += o.calls;
        self.cache_hits += o.cache_hits;
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        if self.cost.is_none() {
            self.cost.clone_from(&o.cost);
        }
    }

    /// The counts with their mean and its interval: mean ± t(n − 1)·s/√n, clipped to
    /// `[1, scale]`.
    /// The cost, when priced, is the tokens' at its prices.
    pub fn finish(mut self, confidence: f64) -> JudgeTally {
        let n = self.counts.iter().sum::<u64>();
        self.scored = n;
        let tokens = (self.prompt_tokens, self.completion_tokens);
        self.cost = self.cost.map(|c| c.of(tokens.0, tokens.1));
        if n == 0 {
            (self.mean, self.interval) = (None, None);
            return self;
        }
        let scores = || {
            (1u32..)
                .zip(&self.counts)
                .map(|(k, &c)| (f64::from(k), c as f64))
        };
        let mean = scores().map(|(k, c)| k * c).sum::<f64>() / n as f64;
        self.mean = Some(mean);
        self.interval = None;
        if n >= JUDGE_MIN_SCORED {
            let var = scores().map(|(k, c)| c * (k - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            if let Ok(t) = crate::stats::t_quantile(confidence, (n - 1) as usize) {
                let half = t * var.sqrt() / (n as f64).sqrt();
                let top = f64::from(self.scale.max(1));
                self.interval = Some([(mean - half).max(1.0), (mean + half).min(top)]);
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judge_mean_and_t_interval() {
        let mut t = JudgeTally {
            scale: 5,
            ..JudgeTally::default()
        };
        for k in [5, 4, 5, 3, 5, 4, 5, 5, 2, 5, 4, 5] {
            t.score(k);
        }
        let t = t.finish(0.95);
        assert_eq!(t.scored, 12);
        let mean = t.mean.unwrap();
        assert!((mean - 52.0 / 12.0).abs() < 1e-9);
        let [low, high] = t.interval.unwrap();
        assert!(low < mean && mean < high && high <= 5.0 && low > 3.0);
        let mut few = JudgeTally::default();
        few.score(5);
        few.score(5);
        let few = few.finish(0.95);
        assert_eq!((few.mean, few.interval), (Some(5.0), None));
        let mut both = t.clone();
        both.add(&t);
        let both = both.finish(0.95);
        assert_eq!(both.scored, 24);
        assert!(both.interval.unwrap()[1] - both.interval.unwrap()[0] < high - low);
    }

    #[test]
    fn judge_cost_is_its_tokens_at_their_prices() {
        let priced = JudgeTally {
            prompt_tokens: 11_136,
            completion_tokens: 200,
            cost: Some(JudgeCost::priced(0.15, 0.6, Some("USD".into()))),
            ..JudgeTally::default()
        };
        let mut both = priced.clone();
        both.add(&priced);
        let c = both.finish(0.95).cost.unwrap();
        assert!((c.input - 2.0 * 11_136.0 * 0.15e-6).abs() < 1e-12, "{c:?}");
        assert!((c.output - 2.0 * 200.0 * 0.6e-6).abs() < 1e-12, "{c:?}");
        assert!((c.total - c.input - c.output).abs() < 1e-15);
        assert_eq!(c.currency.as_deref(), Some("USD"));
        // No prices, no cost (not a cost of 0).
        assert_eq!(JudgeTally::default().finish(0.95).cost, None);
    }
}
