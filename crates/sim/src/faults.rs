//! Per-request random draws: which fault (if any) applies and how many tokens the model
//! "wants" to say. Each request gets its own generator seeded from the config seed and the
//! request id, so draws need no shared lock and repeat for the same seed and arrival order.

use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use super::config::{OutputLenDist, SimConfig};

/// A fault injected into one request. At most one applies per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    None,
    Http429,
    Http500,
    Http503,
    StreamCut,
    Stall,
    MalformedSse,
    SlowFirstByte,
}

impl Fault {
    /// The HTTP status and OpenAI error type of an error-status fault.
    pub(crate) fn status(self) -> Option<(u16, &'static str)> {
        match self {
            Fault::Http429 => Some((429, "RateLimitError")),
            Fault::Http500 => Some((500, "InternalServerError")),
            Fault::Http503 => Some((503, "ServiceUnavailableError")),
            _ => None,
        }
    }
}

/// splitmix64: spreads consecutive ids over the seed space.
fn mix(seed: u64, id: u64) -> u64 {
    let mut z = seed ^ id.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Draws the fault and the output length of request `id`. `max_tokens` is the effective cap
/// (already defaulted) and `min_tokens` ≤ `max_tokens`.
pub(crate) fn draw(
    config: &SimConfig,
    id: u64,
    ignore_eos: bool,
    max_tokens: u64,
    min_tokens: u64,
) -> (Fault, u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(config.seed, id));
    let u: f64 = rng.random();
    let kinds = [
        Fault::Http429,
        Fault::Http500,
        Fault::Http503,
        Fault::StreamCut,
        Fault::Stall,
        Fault::MalformedSse,
        Fault::SlowFirstByte,
    ];
    let mut fault = Fault::None;
    let mut acc = 0.0;
    for (kind, (_, p)) in kinds.into_iter().zip(config.fault_rates()) {
        acc += p;
        if p > 0.0 && u < acc {
            fault = kind;
            break;
        }
    }
    let len = if ignore_eos {
        max_tokens
    } else {
        let mean = config.output_len_mean as f64;
        let drawn = match config.output_len_dist {
            OutputLenDist::Fixed => mean,
            OutputLenDist::Uniform => rng.random_range(1.0..=2.0 * mean),
            OutputLenDist::Exponential => -mean * (1.0 - rng.random::<f64>()).ln(),
        };
        (drawn.round() as u64).clamp(1, max_tokens).max(min_tokens)
    };
    (fault, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certain_faults_always_apply_and_none_by_default() {
        let mut c = SimConfig::default();
        assert!((0..100).all(|i| draw(&c, i, true, 5, 0).0 == Fault::None));
        c.fault_stall = 1.0;
        assert!((0..100).all(|i| draw(&c, i, true, 5, 0).0 == Fault::Stall));
        c.fault_stall = 0.5;
        let n = (0..2000)
            .filter(|&i| draw(&c, i, true, 5, 0).0 == Fault::Stall)
            .count();
        assert!((800..1200).contains(&n), "{n}");
    }

    #[test]
    fn lengths_respect_caps_and_seed() {
        let c = SimConfig::default();
        for i in 0..500 {
            let (_, len) = draw(&c, i, false, 300, 10);
            assert!((10..=300).contains(&len));
            assert_eq!(draw(&c, i, false, 300, 10), draw(&c, i, false, 300, 10));
        }
        assert_eq!(draw(&c, 1, true, 77, 0).1, 77);
        let mean = (0..4000)
            .map(|i| draw(&c, i, false, 100_000, 0).1)
            .sum::<u64>()
            / 4000;
        assert!((200..310).contains(&mean), "{mean}");
        let other = SimConfig {
            seed: 9,
            ..c.clone()
        };
        assert!((0..50).any(|i| draw(&c, i, false, 1000, 0) != draw(&other, i, false, 1000, 0)));
    }
}
