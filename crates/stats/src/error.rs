//! The one error type of this crate: a stored histogram that cannot be read back, or an
//! argument outside its domain (a quantile of 1.5, a confidence of 0). Each keeps the error
//! underneath it as its `source`.

use hdrhistogram::serialization::{DeserializeError, V2DeflateSerializeError};

#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("failed to encode histogram")]
    Encode(#[source] V2DeflateSerializeError),
    #[error("stored histogram is not valid base64")]
    Base64(#[source] base64::DecodeError),
    #[error("stored histogram is {len} bytes, more than the {max} a histogram can need")]
    TooLarge { len: usize, max: usize },
    #[error("stored histogram is malformed: {0}")]
    Malformed(&'static str),
    #[error("failed to inflate stored histogram")]
    Inflate(#[source] std::io::Error),
    #[error("failed to decode histogram")]
    Decode(#[source] DeserializeError),
    #[error("{name} out of range: {value} (a quantile lies in (0, 1), a confidence in [0.5, 1))")]
    OutOfRange { name: &'static str, value: f64 },
    #[error("value {index} is not a finite number")]
    NotFinite { index: usize },
}
