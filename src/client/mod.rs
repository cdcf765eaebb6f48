//! OpenAI-compatible streaming client: request bodies, SSE decoding, per-token timestamps.

mod body;
mod chunk;
mod framing;
mod http;
mod probe;
mod sse;
mod tokenize;
mod wire;

pub use body::{BodyTemplate, Message, PromptRef};
pub use chunk::{
    ChunkError, ChunkInfo, JsonStr, Usage, parse_chunk, parse_chunk_value, scan_chunk,
};
pub use http::{Client, ClientConfig, ClientError, TokenCounter, install_tls_provider};
pub use probe::{PROBED_PATHS, probe_server};
// The response body's decoders, for the fuzz target `response_body`: not a stable API.
#[doc(hidden)]
pub use framing::{BadFraming, Framing};
#[doc(hidden)]
pub use sse::{Events, SseError};
