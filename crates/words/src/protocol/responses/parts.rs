//! The parts of a `response` object that both the stream's last event (`response.completed`)
//! and a whole answer (`stream #false`, `whole.rs`) read: its usage and why it was
//! incomplete, and the raw-value helpers they share with the event decoder.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::super::chunk::{self, ChunkError, FinishReason, JsonStr, Usage};

/// The string a raw JSON value is, borrowed with its escapes (serde_json has validated
/// them); `None` for any other value.
pub(super) fn string(raw: &RawValue) -> Option<JsonStr<'_>> {
    chunk::raw_json_string(raw.get())
}

/// `incomplete_details.reason`: the output budget running out is `length`, anything else
/// (`content_filter`, none given) `Other`.
pub(super) fn incomplete_reason(details: Option<&RawValue>) -> FinishReason {
    #[derive(Deserialize)]
    struct Details<'a> {
        #[serde(borrow)]
        reason: Option<&'a RawValue>,
    }
    let reason = details
        .and_then(|d| serde_json::from_str::<Details<'_>>(d.get()).ok())
        .and_then(|d| d.reason)
        .and_then(string)
        .and_then(|s| s.raw());
    match reason {
        Some("max_output_tokens") => FinishReason::Length,
        _ => FinishReason::Other,
    }
}

/// `usage`: `null`, or an object whose counts are unsigned integers; its details are
/// informational, so a detail of another type is absent rather than an error.
pub(super) fn usage(raw: &RawValue) -> Result<Option<Usage>, ChunkError> {
    #[derive(Deserialize)]
    struct WireUsage<'a> {
        #[serde(default)]
        input_tokens: u64,
        #[serde(default)]
        output_tokens: u64,
        #[serde(borrow)]
        input_tokens_details: Option<&'a RawValue>,
        #[serde(borrow)]
        output_tokens_details: Option<&'a RawValue>,
    }
    if raw.get() == "null" {
        return Ok(None);
    }
    let u: WireUsage<'_> = serde_json::from_str(raw.get()).map_err(|_| {
        type_error(
            "response.usage",
            "an object of unsigned integer counts or null",
        )
    })?;
    Ok(Some(Usage {
        prompt_tokens: u.input_tokens,
        completion_tokens: u.output_tokens,
        cached_tokens: detail(u.input_tokens_details, |d| d.cached_tokens),
        reasoning_tokens: detail(u.output_tokens_details, |d| d.reasoning_tokens),
    }))
}

/// The counts read from `input_tokens_details` and `output_tokens_details`.
#[derive(Deserialize)]
struct Details<'a> {
    #[serde(borrow)]
    cached_tokens: Option<&'a RawValue>,
    #[serde(borrow)]
    reasoning_tokens: Option<&'a RawValue>,
}

/// The count `pick` takes from `details` when they are an object holding it as an unsigned
/// integer.
fn detail<'a>(
    details: Option<&'a RawValue>,
    pick: impl FnOnce(Details<'a>) -> Option<&'a RawValue>,
) -> Option<u64> {
    let details: Details<'a> = serde_json::from_str(details?.get()).ok()?;
    serde_json::from_str::<Value>(pick(details)?.get())
        .ok()?
        .as_u64()
}

pub(super) fn type_error(field: &'static str, expected: &'static str) -> ChunkError {
    ChunkError::Type { field, expected }
}
