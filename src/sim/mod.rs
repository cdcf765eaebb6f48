//! The embedded OpenAI-compatible simulator: a continuous-batching latency model served over
//! HTTP, used as the default target and as the ground truth in tests.

mod config;

pub use config::SimConfig;
