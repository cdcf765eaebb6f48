//! Seed derivation. Every random stream of a plan is keyed by sha256 of the scenario seed and a
//! label, so streams are independent of each other and of platform, and adding a stage does not
//! shift the draws of the stages before it.

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use sha2::{Digest, Sha256};

fn digest(label: &str, a: u64, b: u64) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(label.as_bytes());
    h.update([0]);
    h.update(a.to_le_bytes());
    h.update(b.to_le_bytes());
    h.finalize().into()
}

/// The seed of stage `index` (`label` tells stages from the warm-up).
pub(super) fn stage_seed(scenario_seed: u64, label: &str, index: u64) -> u64 {
    let d = digest(label, scenario_seed, index);
    u64::from_le_bytes(d[..8].try_into().unwrap_or_default())
}

/// The generator of a stage's arrival schedule.
pub(super) fn arrival_rng(stage_seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::from_seed(digest("arrival", stage_seed, 0))
}

/// The generator of request `index` of a stage: one ChaCha key per stage, one stream per
/// request, so any request can be drawn alone in O(1).
pub(super) fn recipe_rng(stage_seed: u64, index: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    let mut state = stage_seed;
    for chunk in key.chunks_exact_mut(8) {
        chunk.copy_from_slice(&splitmix64(&mut state).to_le_bytes());
    }
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(index);
    rng
}

/// The item seed of request `index`: a bijection of the index for a given stage seed, so items
/// are distinct within a stage.
pub(super) fn item_seed(stage_seed: u64, index: u64) -> u64 {
    let mut state = stage_seed.wrapping_add(index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    splitmix64(&mut state)
}

/// A uniform draw in `[0, 1)` for request `index`'s label in grouping `by`: independent of
/// the recipe's own draws, so adding a split does not change a request's lengths.
pub(super) fn label_draw(stage_seed: u64, by: u64, index: u64) -> f64 {
    let mut state = item_seed(stage_seed ^ 0x6C61_6265_6C73_0000 ^ by, index);
    (splitmix64(&mut state) >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform draw in `[0, 1)` for the tool time before turn `turn` of session `index`:
/// independent of the recipe's draws, so a tool time does not change a session's lengths.
pub(super) fn tool_draw(stage_seed: u64, index: u64, turn: u32) -> f64 {
    let by = 0x746F_6F6C_0000_0000 ^ u64::from(turn);
    let mut state = item_seed(stage_seed ^ by, index);
    (splitmix64(&mut state) >> 11) as f64 / (1u64 << 53) as f64
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
