//! The OpenAI-compatible protocol vocabulary that several stages share: which API a target
//! speaks. The scenario names it, the plan carries it, the client speaks it and the results
//! record it. It lives below all of them because the client may not depend on the scenario or
//! the plan on the client (see `docs/architecture.md`).

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API requests are sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// `POST {base}/chat/completions` with `messages`.
    #[default]
    Chat,
    /// `POST {base}/completions` with `prompt`.
    Completions,
}

impl Api {
    /// The name a scenario writes (`api "completions"`) and results record.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
        }
    }

    /// The path below the base URL this API posts to.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/chat/completions",
            Api::Completions => "/completions",
        }
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
