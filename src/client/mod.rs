//! OpenAI-compatible streaming client: request bodies, SSE decoding, per-token timestamps.

mod body;
mod chunk;
mod framing;
mod head;
mod http;
mod probe;
mod reqwest_errors;
mod sse;
mod tokenize;
mod wire;

pub use body::{BodyTemplate, Message, PromptRef};
pub use chunk::{
    ChunkError, ChunkInfo, JsonStr, Usage, parse_chunk, parse_chunk_value, scan_chunk,
};
pub use http::{Client, ClientConfig, ClientError, TokenCounter, install_tls_provider};
pub use probe::{PROBED_PATHS, probe_server};
pub use wire::POOL_IDLE_TIMEOUT;
// The response body's decoders, for the fuzz target `response_body`: not a stable API.
#[doc(hidden)]
pub use framing::{BadFraming, Framing};
// The response head's parser, for the fuzz target `response_head`: not a stable API.
#[doc(hidden)]
pub use head::{BadHead, Head, MAX_HEAD, parse as parse_head};
#[doc(hidden)]
pub use sse::{Events, SseError};
