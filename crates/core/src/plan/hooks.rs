//! A dataset's `hooks` script in the plan: its text is in the plan, so its hash covers it.

use serde::{Deserialize, Serialize};

/// A dataset's `hooks` script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookPlan {
    /// As written in the scenario (relative to it).
    pub path: String,
    pub sha256: String,
    pub source: String,
}
