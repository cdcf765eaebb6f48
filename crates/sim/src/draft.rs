//! The draft model of speculative decoding (`draft-tokens`): each decode step a sequence's
//! draft proposes `k` tokens, the target verifies them in the same step and keeps the leading
//! run it accepts, then adds one token of its own (the "bonus" token). Position `i` (from 0)
//! is accepted with probability `draft-acceptance × draft-acceptance-decay^i`, given that the
//! positions before it were; a rejection ends the run.
//!
//! The draws are a hash of the seed, the request's id and how many tokens it had emitted, so a
//! request's acceptances do not depend on what else shares its batch, and cost no state per
//! request: nothing is allocated per step.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::SimConfig;

/// The draft model's acceptance probabilities, one per draft position.
#[derive(Debug, Clone)]
pub(crate) struct DraftModel {
    probs: Vec<f64>,
    seed: u64,
}

impl DraftModel {
    /// `None` without `draft-tokens`.
    pub(crate) fn of(config: &SimConfig) -> Option<DraftModel> {
        let k = config.draft_tokens.min(crate::config::MAX_DRAFT_TOKENS) as usize;
        if k == 0 {
            return None;
        }
        let mut p = config.draft_acceptance.clamp(0.0, 1.0);
        let decay = config.draft_acceptance_decay.clamp(0.0, 1.0);
        let probs = (0..k)
            .map(|_| {
                let here = p;
                p *= decay;
                here
            })
            .collect();
        Some(DraftModel {
            probs,
            seed: splitmix(config.seed ^ 0xd7af_75ec),
        })
    }

    /// Draft tokens proposed per step.
    pub(crate) fn k(&self) -> usize {
        self.probs.len()
    }

    /// How many of the draft tokens request `id` accepts at the step after its `emitted`-th
    /// token: the leading run of accepted positions.
    pub(crate) fn accepted(&self, id: u64, emitted: u64) -> u32 {
        let mut h = splitmix(splitmix(self.seed ^ id) ^ emitted);
        let mut n = 0;
        for p in &self.probs {
            h = splitmix(h);
            // The top 53 bits as a uniform draw in [0, 1).
            let u = (h >> 11) as f64 / (1u64 << 53) as f64;
            if u >= *p {
                break;
            }
            n += 1;
        }
        n
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit hash of `x`.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// vLLM's speculative-decoding counters (`vllm/v1/spec_decode/metrics.py`): verification
/// steps (drafts), draft tokens proposed, accepted, and accepted per position.
#[derive(Debug, Default)]
pub(crate) struct DraftCounters {
    drafts: AtomicU64,
    draft_tokens: AtomicU64,
    accepted: AtomicU64,
    per_position: Box<[AtomicU64]>,
}

/// One step's drafts, summed by the scheduler and added to the counters once per step.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct StepDrafts {
    pub drafts: u64,
    pub accepted: u64,
}

impl DraftCounters {
    pub(crate) fn new(k: usize) -> Self {
        DraftCounters {
            per_position: (0..k).map(|_| AtomicU64::new(0)).collect(),
            ..DraftCounters::default()
        }
    }

    /// A step's drafts; `runs[i]` is how many of them accepted position `i`.
    pub(crate) fn add(&self, step: StepDrafts, runs: &[u64]) {
        let k = self.per_position.len() as u64;
        self.drafts.fetch_add(step.drafts, Ordering::Relaxed);
        self.draft_tokens
            .fetch_add(step.drafts * k, Ordering::Relaxed);
        self.accepted.fetch_add(step.accepted, Ordering::Relaxed);
        for (c, n) in self.per_position.iter().zip(runs) {
            c.fetch_add(*n, Ordering::Relaxed);
        }
    }

    /// The four series as vLLM's `prometheus_client` writes them (a counter's name gains
    /// `_total`), labelled with `label` (`model_name="…"`, escaped).
    pub(crate) fn render(&self, out: &mut String, label: &str) {
        use std::fmt::Write;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (name, help, v) in [
            (
                "num_drafts",
                "Number of spec decoding drafts.",
                &self.drafts,
            ),
            (
                "num_draft_tokens",
                "Number of draft tokens.",
                &self.draft_tokens,
            ),
            (
                "num_accepted_tokens",
                "Number of accepted tokens.",
                &self.accepted,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP vllm:spec_decode_{name}_total {help}\n\
                 # TYPE vllm:spec_decode_{name}_total counter\n\
                 vllm:spec_decode_{name}_total{{{label}}} {}",
                get(v)
            );
        }
        let name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
        let _ = writeln!(
            out,
            "# HELP {name} Accepted tokens per draft position.\n# TYPE {name} counter"
        );
        for (i, c) in self.per_position.iter().enumerate() {
            let _ = writeln!(out, "{name}{{{label},position=\"{i}\"}} {}", get(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(k: u32, p: f64, decay: f64) -> DraftModel {
        let c = SimConfig {
            draft_tokens: k,
            draft_acceptance: p,
            draft_acceptance_decay: decay,
            ..SimConfig::default()
        };
        DraftModel::of(&c).unwrap()
    }

    #[test]
    fn off_without_draft_tokens() {
        assert!(DraftModel::of(&SimConfig::default()).is_none());
    }

    /// Over many steps each position is accepted at its probability, given the ones before.
    #[test]
    fn acceptance_follows_the_probabilities() {
        let m = model(3, 0.8, 0.5);
        let mut runs = [0u64; 3];
        let n = 200_000u64;
        for step in 0..n {
            let a = m.accepted(step % 97, step / 97);
            for r in runs.iter_mut().take(a as usize) {
                *r += 1;
            }
        }
        // P(position i accepted) = Π_{j ≤ i} p_j: 0.8, 0.8 × 0.4, 0.8 × 0.4 × 0.2.
        for (i, want) in [0.8, 0.32, 0.064].into_iter().enumerate() {
            let got = runs[i] as f64 / n as f64;
            assert!((got - want).abs() < 0.01, "position {i}: {got} vs {want}");
        }
    }

    #[test]
    fn draws_are_deterministic_and_bounded() {
        let (a, b) = (model(4, 0.6, 1.0), model(4, 0.6, 1.0));
        for step in 0..100 {
            assert_eq!(a.accepted(7, step), b.accepted(7, step));
            assert!(a.accepted(7, step) <= 4);
        }
        assert_eq!(model(4, 1.0, 1.0).accepted(1, 2), 4);
        assert_eq!(model(4, 0.0, 1.0).accepted(1, 2), 0);
    }

    #[test]
    fn counters_render_as_vllm_writes_them() {
        let c = DraftCounters::new(2);
        c.add(
            StepDrafts {
                drafts: 3,
                accepted: 4,
            },
            &[3, 1],
        );
        let mut out = String::new();
        c.render(&mut out, "model_name=\"m\"");
        for line in [
            "vllm:spec_decode_num_drafts_total{model_name=\"m\"} 3\n",
            "vllm:spec_decode_num_draft_tokens_total{model_name=\"m\"} 6\n",
            "vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 4\n",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"m\",position=\"1\"} 1\n",
        ] {
            assert!(out.contains(line), "{line:?} not in {out}");
        }
    }
}
