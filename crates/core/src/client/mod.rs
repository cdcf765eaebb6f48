//! OpenAI-compatible streaming client: request bodies, SSE decoding, per-token timestamps.
//! What differs between APIs (the body's fields, the events' grammar) is the API kind's, in
//! `protocol`; this module sends, frames and times.

mod body;
mod framing;
mod head;
mod http;
mod probe;
mod reqwest_errors;
mod sse;
mod tokenize;
mod wire;

pub use body::BodyTemplate;
pub use http::{Client, ClientConfig, ClientError, TokenCounter, install_tls_provider};
pub use probe::{PROBED_PATHS, probe_server};
pub use wire::{Held, POOL_IDLE_TIMEOUT, Tag};
// The response body's decoders, for the fuzz target `response_body`: not a stable API.
#[doc(hidden)]
pub use framing::{BadFraming, Framing};
// The response head's parser, for the fuzz target `response_head`: not a stable API.
#[doc(hidden)]
pub use head::{BadHead, Head, MAX_HEAD, parse as parse_head};
#[doc(hidden)]
pub use sse::{Events, SseError};
