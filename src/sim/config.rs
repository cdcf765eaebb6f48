//! Simulator settings: one struct shared by `infermeter sim` flags and a scenario's
//! `target "sim" { … }` block (which is decoded through serde, so every field here is settable
//! from KDL as a kebab-case child node, e.g. `decode-base "8ms"`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::units::Duration;

/// The latency model and fault settings of the simulator. Defaults resemble a 7–8B model on one
/// modern GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, default)]
pub struct SimConfig {
    /// Model name reported by `/v1/models` and in responses.
    pub model: String,
    /// Prefill cost per input token.
    pub prefill_per_token: Duration,
    /// Duration of one decode step with a single running sequence.
    pub decode_base: Duration,
    /// Extra decode-step duration per running sequence.
    pub decode_per_seq: Duration,
    /// Maximum number of sequences decoded together (vLLM's max_num_seqs).
    pub max_running: u32,
    /// Seed for jitter, output lengths and faults.
    pub seed: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            model: "infermeter-sim".into(),
            prefill_per_token: Duration(std::time::Duration::from_micros(50)),
            decode_base: Duration::from_millis(8),
            decode_per_seq: Duration(std::time::Duration::from_micros(100)),
            max_running: 256,
            seed: 0,
        }
    }
}
