//! The embedded OpenAI-compatible simulator: a continuous-batching latency model served over
//! HTTP, used as the default target and as the ground truth in tests.

// The vocabulary, under the names the simulator's modules use.
use infermeter_words::{protocol, units};

mod affinity;
mod apis;
mod config;
mod conn;
mod draft;
mod endpoints;
mod faults;
mod framing;
mod generate;
mod histogram;
mod judge;
mod metrics;
mod otlp;
mod prefix;
mod priority;
mod qa;
mod scheduler;
mod server;
mod state;
mod store;
mod tokens;
mod tool_results;
mod tools;
mod trace;
mod usage;
mod vision;
mod wire;
mod words;

pub use config::{ConfigError, OutputLenDist, SimConfig};
pub use faults::Fault;
pub use server::{SimError, SimHandle, start, start_with_trace};
pub use state::SIM_ID_HEADER;
pub use trace::{Outcome, TraceOptions, TraceRecord};
