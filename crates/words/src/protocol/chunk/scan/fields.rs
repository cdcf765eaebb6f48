//! The fields the measurement reads from a chunk (`choices`, `usage`, `timings` and what
//! they hold), each writing what it found into `out`; everything else is skipped by the
//! grammar.

use super::super::info::{
    ChunkInfo, FinishReason, JsonStr, ServerTimings, ToolCallDelta, Usage, finish_reason_of,
};
use super::{Delta, Seen, Text};

impl<'a> Text<'a> {
    /// `choices`: `null`, or an array whose first element is read and the rest skipped.
    pub(super) fn choices(self, i: usize, info: &mut ChunkInfo<'a>) -> Option<usize> {
        match self.at(i)? {
            b'n' => self.literal(i, b"null"),
            b'[' => self.array(i, |n, i| match n {
                0 => self.choice(i, info),
                _ => self.skip(i, 2),
            }),
            _ => None,
        }
    }

    fn choice(self, i: usize, info: &mut ChunkInfo<'a>) -> Option<usize> {
        if self.at(i)? != b'{' {
            return None;
        }
        let mut seen = Seen::default();
        let mut delta = Delta::default();
        let mut text = None;
        let end = self.object(i, |key, i| match key {
            b"delta" => {
                seen.first(0)?;
                self.delta(i, &mut delta)
            }
            b"text" => {
                seen.first(1)?;
                self.opt_str(i, &mut text)
            }
            b"finish_reason" => {
                seen.first(2)?;
                self.finish_reason(i, &mut info.finish_reason)
            }
            _ => self.skip(i, 3),
        })?;
        info.answer = delta.content.or(text);
        info.reasoning = delta.reasoning_content.or(delta.reasoning);
        info.tool_call = delta.tool_call;
        Some(end)
    }

    fn delta(self, i: usize, delta: &mut Delta<'a>) -> Option<usize> {
        match self.at(i)? {
            b'n' => self.literal(i, b"null"),
            b'{' => {
                let mut seen = Seen::default();
                self.object(i, |key, i| {
                    let (bit, out) = match key {
                        b"content" => (0, &mut delta.content),
                        b"reasoning_content" => (1, &mut delta.reasoning_content),
                        b"reasoning" => (2, &mut delta.reasoning),
                        b"tool_calls" => {
                            seen.first(3)?;
                            return self.tool_calls(i, &mut delta.tool_call);
                        }
                        _ => return self.skip(i, 4),
                    };
                    seen.first(bit)?;
                    self.opt_str(i, out)
                })
            }
            _ => None,
        }
    }

    /// `delta.tool_calls`: `null`, or an array of one call. Several calls in one delta
    /// (parallel calls sent together) are rare: the scanner gives them up to serde_json,
    /// which reads every one, rather than allocate for them here.
    fn tool_calls(self, i: usize, out: &mut ToolCallDelta<'a>) -> Option<usize> {
        match self.at(i)? {
            b'n' => self.literal(i, b"null"),
            b'[' => self.array(i, |n, i| match n {
                0 => self.tool_call(i, out),
                _ => None,
            }),
            _ => None,
        }
    }

    /// One tool call (an object): its `function`'s `name` and `arguments`.
    fn tool_call(self, i: usize, out: &mut ToolCallDelta<'a>) -> Option<usize> {
        if self.at(i)? != b'{' {
            return None;
        }
        let mut seen = Seen::default();
        self.object(i, |key, i| match key {
            b"function" => {
                seen.first(0)?;
                match self.at(i)? {
                    b'n' => self.literal(i, b"null"),
                    b'{' => self.function(i, out),
                    _ => None,
                }
            }
            b"id" => {
                seen.first(1)?;
                self.opt_str(i, &mut out.id)
            }
            _ => self.skip(i, 6),
        })
    }

    fn function(self, i: usize, out: &mut ToolCallDelta<'a>) -> Option<usize> {
        let mut seen = Seen::default();
        self.object(i, |key, i| {
            let (bit, field) = match key {
                b"name" => (0, &mut out.name),
                b"arguments" => (1, &mut out.arguments),
                _ => return self.skip(i, 7),
            };
            seen.first(bit)?;
            self.opt_str(i, field)
        })
    }

    /// A string or `null`; anything else is a type error, serde_json's to report.
    fn opt_str(self, i: usize, out: &mut Option<JsonStr<'a>>) -> Option<usize> {
        match self.at(i)? {
            b'"' => {
                let (s, end) = self.string(i)?;
                *out = Some(s);
                Some(end)
            }
            b'n' => self.literal(i, b"null"),
            _ => None,
        }
    }

    /// Any value: a string is classified, `null` is absent, anything else is `Other`.
    fn finish_reason(self, i: usize, out: &mut Option<FinishReason>) -> Option<usize> {
        if self.at(i)? == b'"' {
            let (s, end) = self.string(i)?;
            *out = Some(finish_reason_of(&s));
            return Some(end);
        }
        let (null, end) = self.null_or_skip(i, 3)?;
        *out = (!null).then_some(FinishReason::Other);
        Some(end)
    }

    /// `usage`: `null` or an object whose token counts are unsigned integers.
    pub(super) fn usage(self, i: usize, out: &mut Option<Usage>) -> Option<usize> {
        match self.at(i)? {
            b'n' => self.literal(i, b"null"),
            b'{' => {
                let mut u = Usage::default();
                let mut seen = Seen::default();
                let end = self.object(i, |key, i| {
                    let (bit, out) = match key {
                        b"prompt_tokens" => (0, &mut u.prompt_tokens),
                        b"completion_tokens" => (1, &mut u.completion_tokens),
                        b"prompt_tokens_details" => {
                            seen.first(2)?;
                            return self.details(i, b"cached_tokens", &mut u.cached_tokens);
                        }
                        b"completion_tokens_details" => {
                            seen.first(3)?;
                            return self.details(i, b"reasoning_tokens", &mut u.reasoning_tokens);
                        }
                        _ => return self.skip(i, 2),
                    };
                    seen.first(bit)?;
                    let (n, end) = self.number(i)?;
                    *out = n.uint()?;
                    Some(end)
                })?;
                *out = Some(u);
                Some(end)
            }
            _ => None,
        }
    }

    /// `name` (`cached_tokens`, `reasoning_tokens`) when the details are an object holding it
    /// as an unsigned integer.
    fn details(self, i: usize, name: &[u8], out: &mut Option<u64>) -> Option<usize> {
        if self.at(i)? != b'{' {
            return self.skip(i, 2);
        }
        let mut seen = Seen::default();
        self.object(i, |key, i| match key {
            k if k == name => {
                seen.first(0)?;
                self.lenient_uint(i, out)
            }
            _ => self.skip(i, 3),
        })
    }

    /// llama.cpp's `timings`, when it is an object; fields of other types are absent.
    pub(super) fn timings(self, i: usize, out: &mut Option<ServerTimings>) -> Option<usize> {
        if self.at(i)? != b'{' {
            return self.skip(i, 1);
        }
        let mut t = ServerTimings::default();
        let mut seen = Seen::default();
        let end = self.object(i, |key, i| match key {
            b"prompt_n" => {
                seen.first(0)?;
                self.lenient_uint(i, &mut t.prompt_n)
            }
            b"prompt_ms" => {
                seen.first(1)?;
                self.lenient_float(i, &mut t.prompt_ms)
            }
            b"predicted_n" => {
                seen.first(2)?;
                self.lenient_uint(i, &mut t.predicted_n)
            }
            b"predicted_ms" => {
                seen.first(3)?;
                self.lenient_float(i, &mut t.predicted_ms)
            }
            b"cache_n" => {
                seen.first(4)?;
                self.lenient_uint(i, &mut t.cache_n)
            }
            b"draft_n" => {
                seen.first(5)?;
                self.lenient_uint(i, &mut t.draft_n)
            }
            b"draft_n_accepted" => {
                seen.first(6)?;
                self.lenient_uint(i, &mut t.draft_n_accepted)
            }
            _ => self.skip(i, 2),
        })?;
        *out = Some(t);
        Some(end)
    }

    /// An unsigned integer; absent for any other value.
    fn lenient_uint(self, i: usize, out: &mut Option<u64>) -> Option<usize> {
        match self.at(i)? {
            b'-' | b'0'..=b'9' => {
                let (n, end) = self.number(i)?;
                *out = n.uint();
                Some(end)
            }
            _ => self.skip(i, 3),
        }
    }

    /// Any number as an f64, rounded by serde_json itself so both decoders agree to the bit;
    /// absent for any other value.
    fn lenient_float(self, i: usize, out: &mut Option<f64>) -> Option<usize> {
        match self.at(i)? {
            b'-' | b'0'..=b'9' => {
                let (n, end) = self.number(i)?;
                *out = Some(serde_json::from_slice::<f64>(n.raw).ok()?);
                Some(end)
            }
            _ => self.skip(i, 2),
        }
    }
}
