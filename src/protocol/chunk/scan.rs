//! The fast path of chunk decoding: one pass over the bytes that reads the few fields the
//! measurement needs, borrows every string, and validates the rest of the text the way
//! serde_json would, without building anything for it.
//!
//! Every function takes the position to read at and returns the position after what it read,
//! in an `Option` where `None` means "not sure", never "invalid": whatever this scanner does
//! not fully understand (a syntax error, an escaped key, a key it reads seen twice, a field of
//! an unexpected type, deep nesting, a number serde_json might reject as out of range) is left
//! to the serde_json decoder, so an answer from here is always the one serde_json would give.
//! Positions travel in registers rather than in a cursor behind a reference: this is most of
//! the client's work per chunk.

use super::escape::hex_digit;
use super::info::{
    ChunkInfo, FinishReason, JsonStr, ServerTimings, ToolCallDelta, Usage, finish_reason_of,
};

/// Nesting this scanner follows before it leaves the chunk to serde_json (whose limit is 128).
const MAX_DEPTH: u32 = 32;

/// Integer digits (plus a positive exponent) below which serde_json cannot overflow an f64.
const MAX_MAGNITUDE: usize = 300;

/// Bytes that end the plain run of a JSON string: the quote, the backslash and the control
/// characters serde_json rejects inside strings.
const STRING_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = true;
        b += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Decodes `data` into `info` (as the caller made it: default) if the scanner is sure of the
/// answer; `None` leaves it to serde_json. Filling the caller's value saves copying one
/// `ChunkInfo` per chunk.
pub(super) fn scan<'a>(data: &'a str, info: &mut ChunkInfo<'a>) -> Option<()> {
    let t = Text(data);
    let start = t.ws(0);
    if t.at(start)? != b'{' {
        return None;
    }
    let mut seen = Seen::default();
    let end = t.object(start, |key, i| match key {
        b"choices" => {
            seen.first(0)?;
            t.choices(i, info)
        }
        b"usage" => {
            seen.first(1)?;
            t.usage(i, &mut info.usage)
        }
        b"error" => {
            seen.first(2)?;
            let (null, i) = t.null_or_skip(i, 1)?;
            info.error = !null;
            Some(i)
        }
        b"timings" => {
            seen.first(3)?;
            t.timings(i, &mut info.timings)
        }
        _ => t.skip(i, 1),
    })?;
    (t.ws(end) == data.len()).then_some(())
}

/// Known keys already read in one object: serde_json keeps the last of duplicates, which a
/// single pass cannot know in advance, so a repeat goes to serde_json.
#[derive(Default)]
struct Seen(u8);

impl Seen {
    fn first(&mut self, bit: u8) -> Option<()> {
        let mask = 1 << bit;
        if self.0 & mask != 0 {
            return None;
        }
        self.0 |= mask;
        Some(())
    }
}

/// The text of one delta object as found.
#[derive(Default)]
struct Delta<'a> {
    content: Option<JsonStr<'a>>,
    reasoning_content: Option<JsonStr<'a>>,
    reasoning: Option<JsonStr<'a>>,
    tool_call: ToolCallDelta<'a>,
}

/// A number token: its text, and whether it has the form serde_json may keep as a `u64`.
struct Num<'a> {
    raw: &'a [u8],
    integer: bool,
}

impl Num<'_> {
    /// The value, when serde_json keeps it as a `u64` (digits only, and in range).
    fn uint(&self) -> Option<u64> {
        if !self.integer {
            return None;
        }
        self.raw.iter().try_fold(0u64, |n, &d| {
            n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
    }
}

/// The chunk's text; methods read at a position and return the position after.
#[derive(Clone, Copy)]
struct Text<'a>(&'a str);

/// The grammar: whitespace, objects, arrays, strings, numbers, literals.
impl<'a> Text<'a> {
    fn bytes(self) -> &'a [u8] {
        self.0.as_bytes()
    }

    fn at(self, i: usize) -> Option<u8> {
        self.bytes().get(i).copied()
    }

    /// `i + 1` if the byte at `i` is `b`.
    fn expect(self, i: usize, b: u8) -> Option<usize> {
        (self.at(i)? == b).then_some(i + 1)
    }

    /// Past JSON's four whitespace bytes, as serde_json skips them.
    #[inline]
    fn ws(self, mut i: usize) -> usize {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.at(i) {
            i += 1;
        }
        i
    }

    /// The object at `i` (a `{`); `field` gets each key and the position of its value, and
    /// returns the position after the value.
    #[inline]
    fn object(
        self,
        i: usize,
        mut field: impl FnMut(&'a [u8], usize) -> Option<usize>,
    ) -> Option<usize> {
        let mut i = self.ws(i + 1);
        if self.at(i)? == b'}' {
            return Some(i + 1);
        }
        loop {
            let (key, after) = self.key(i)?;
            let colon = self.ws(after);
            i = field(key, self.ws(self.expect(colon, b':')?))?;
            i = self.ws(i);
            match self.at(i)? {
                b',' => i = self.ws(i + 1),
                b'}' => return Some(i + 1),
                _ => return None,
            }
        }
    }

    /// The array at `i` (a `[`); `elem` gets each element's index and position, and returns
    /// the position after it.
    #[inline]
    fn array(self, i: usize, mut elem: impl FnMut(usize, usize) -> Option<usize>) -> Option<usize> {
        let mut i = self.ws(i + 1);
        if self.at(i)? == b']' {
            return Some(i + 1);
        }
        let mut n = 0;
        loop {
            i = self.ws(elem(n, i)?);
            n += 1;
            match self.at(i)? {
                b',' => i = self.ws(i + 1),
                b']' => return Some(i + 1),
                _ => return None,
            }
        }
    }

    /// A key's bytes, and the position after its closing quote. Keys with escapes (which no
    /// server sends) are left to serde_json, so that a key is known by its bytes.
    #[inline]
    fn key(self, i: usize) -> Option<(&'a [u8], usize)> {
        let start = self.expect(i, b'"')?;
        let end = plain_run(self.bytes(), start);
        let after = self.expect(end, b'"')?;
        Some((self.bytes().get(start..end)?, after))
    }

    /// Any value at `i`, nested `depth` deep, validated and dropped. Scalars are handled in
    /// line (most skipped values are `id`, `model`, `created`, `index`, `logprobs: null`).
    #[inline]
    fn skip(self, i: usize, depth: u32) -> Option<usize> {
        match self.at(i)? {
            b'"' => self.string_span(i).map(|(_, end, _)| end + 1),
            b'{' | b'[' => self.skip_nested(i, depth),
            b't' => self.literal(i, b"true"),
            b'f' => self.literal(i, b"false"),
            b'n' => self.literal(i, b"null"),
            b'-' | b'0'..=b'9' => self.number(i).map(|(_, i)| i),
            _ => None,
        }
    }

    /// An object or array at `i`, skipped.
    #[inline(never)]
    fn skip_nested(self, i: usize, depth: u32) -> Option<usize> {
        if depth >= MAX_DEPTH {
            return None;
        }
        match self.at(i)? {
            b'{' => self.object(i, |_, i| self.skip(i, depth + 1)),
            _ => self.array(i, |_, i| self.skip(i, depth + 1)),
        }
    }

    fn literal(self, i: usize, word: &[u8]) -> Option<usize> {
        let rest = self.bytes().get(i..)?;
        rest.starts_with(word).then_some(i + word.len())
    }

    /// Whether the value at `i` is `null` (any other value is skipped), and the position after.
    fn null_or_skip(self, i: usize, depth: u32) -> Option<(bool, usize)> {
        match self.at(i)? {
            b'n' => Some((true, self.literal(i, b"null")?)),
            _ => Some((false, self.skip(i, depth)?)),
        }
    }

    /// The string at `i`, borrowed between its quotes, and the position after it.
    fn string(self, i: usize) -> Option<(JsonStr<'a>, usize)> {
        let (start, end, escaped) = self.string_span(i)?;
        let raw = self.0.get(start..end)?;
        let s = if escaped {
            JsonStr::from_escaped(raw)
        } else {
            JsonStr::from_plain(raw)
        };
        Some((s, end + 1))
    }

    /// Where the string at `i` lies between its quotes, and whether it has escapes, which are
    /// checked as serde_json checks them when it decodes a string (surrogates must pair).
    #[inline]
    fn string_span(self, i: usize) -> Option<(usize, usize, bool)> {
        let start = i + 1;
        let end = plain_run(self.bytes(), start);
        if self.at(end)? == b'"' {
            return Some((start, end, false));
        }
        self.escaped_string_end(end).map(|end| (start, end, true))
    }

    /// The closing quote of a string whose plain run stops at `i` on something else.
    #[cold]
    fn escaped_string_end(self, mut i: usize) -> Option<usize> {
        loop {
            match self.at(i)? {
                b'"' => return Some(i),
                b'\\' => i = plain_run(self.bytes(), self.escape(i + 1)?),
                _ => return None,
            }
        }
    }

    /// One escape after its backslash.
    fn escape(self, i: usize) -> Option<usize> {
        match self.at(i)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 1),
            b'u' => match self.hex4(i + 1)? {
                0xDC00..=0xDFFF => None,
                0xD800..=0xDBFF => {
                    let low = self.expect(self.expect(i + 5, b'\\')?, b'u')?;
                    matches!(self.hex4(low)?, 0xDC00..=0xDFFF).then_some(low + 4)
                }
                _ => Some(i + 5),
            },
            _ => None,
        }
    }

    fn hex4(self, i: usize) -> Option<u16> {
        let digits = self.bytes().get(i..i + 4)?;
        digits
            .iter()
            .try_fold(0u16, |n, &d| Some(n << 4 | u16::from(hex_digit(d)?)))
    }

    /// The number at `i`, in JSON's grammar, and only if serde_json certainly accepts it.
    #[inline]
    fn number(self, i: usize) -> Option<(Num<'a>, usize)> {
        let negative = self.at(i)? == b'-';
        let int_start = i + usize::from(negative);
        let int_end = match self.at(int_start)? {
            // A second leading zero (`01`) is invalid.
            b'0' if !matches!(self.at(int_start + 1), Some(b'0'..=b'9')) => int_start + 1,
            b'1'..=b'9' => self.digits_end(int_start + 1),
            _ => return None,
        };
        let mut end = int_end;
        if let Some(b'.' | b'e' | b'E') = self.at(end) {
            end = self.fraction_and_exponent(end, int_end - int_start)?;
        }
        if int_end - int_start > MAX_MAGNITUDE {
            return None;
        }
        let num = Num {
            raw: self.bytes().get(i..end)?,
            integer: !negative && end == int_end,
        };
        Some((num, end))
    }

    /// A number's `.digits` and `e±digits` parts from `i`, given its integer digits.
    #[cold]
    fn fraction_and_exponent(self, mut i: usize, int_digits: usize) -> Option<usize> {
        if self.at(i) == Some(b'.') {
            i = self.some_digits(i + 1)?;
        }
        if let Some(b'e' | b'E') = self.at(i) {
            let sign = self.at(i + 1);
            let exp_start = i + 1 + usize::from(matches!(sign, Some(b'+' | b'-')));
            i = self.some_digits(exp_start)?;
            let exp = self.bytes().get(exp_start..i)?;
            // Long exponents and large magnitudes are serde_json's to judge (it rejects
            // numbers that overflow an f64).
            if exp.len() > 4 {
                return None;
            }
            let exp = exp.iter().fold(0, |n, &d| n * 10 + usize::from(d - b'0'));
            if sign != Some(b'-') && int_digits + exp > MAX_MAGNITUDE {
                return None;
            }
        }
        Some(i)
    }

    fn digits_end(self, mut i: usize) -> usize {
        while let Some(b'0'..=b'9') = self.at(i) {
            i += 1;
        }
        i
    }

    /// Past at least one digit.
    fn some_digits(self, i: usize) -> Option<usize> {
        let end = self.digits_end(i);
        (end > i).then_some(end)
    }
}

/// The fields the measurement reads, each writing what it found into `out`.
impl<'a> Text<'a> {
    /// `choices`: `null`, or an array whose first element is read and the rest skipped.
    fn choices(self, i: usize, info: &mut ChunkInfo<'a>) -> Option<usize> {
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
    fn usage(self, i: usize, out: &mut Option<Usage>) -> Option<usize> {
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
    fn timings(self, i: usize, out: &mut Option<ServerTimings>) -> Option<usize> {
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

/// Where the plain run of string bytes from `i` ends: eight bytes at a time while the text
/// lasts, since most of a chunk is string bytes.
#[inline]
pub(crate) fn plain_run(bytes: &[u8], mut i: usize) -> usize {
    while let Some(word) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        if let Some(at) = first_special(u64::from_le_bytes(*word)) {
            return i + at;
        }
        i += 8;
    }
    while let Some(&b) = bytes.get(i)
        && !STRING_SPECIAL[usize::from(b)]
    {
        i += 1;
    }
    i
}

/// The index of the first byte of `word` (little-endian) that `STRING_SPECIAL` marks. Each
/// test sets the high bit of a byte that matches; a borrow can also set it in bytes above a
/// match, never below one, so the lowest bit set is exact.
#[inline]
fn first_special(word: u64) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let hits = zero(word ^ (ONES * u64::from(b'"')))
        | zero(word ^ (ONES * u64::from(b'\\')))
        | (word.wrapping_sub(ONES * 0x20) & !word & HIGH);
    (hits != 0).then(|| hits.trailing_zeros() as usize / 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The eight-byte test against the byte table: every byte value at every position, behind
    /// and before bytes of every kind.
    #[test]
    fn first_special_matches_the_table() {
        let fillers = [
            b'a', b' ', b'~', 0x7f, 0x80, 0xc3, 0xff, b'"', b'\\', 0x1f, 0x00, b'0',
        ];
        for &filler in &fillers {
            for b in 0..=255u8 {
                for at in 0..8 {
                    let mut word = [filler; 8];
                    word[at] = b;
                    let expected = word.iter().position(|&x| STRING_SPECIAL[usize::from(x)]);
                    assert_eq!(
                        first_special(u64::from_le_bytes(word)),
                        expected,
                        "{word:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn plain_run_stops_where_the_table_says() {
        let text = b"abcdefghijklmnopqrstuvwxyz\"tail";
        for start in 0..text.len() {
            let end = if start <= 26 { 26 } else { text.len() };
            assert_eq!(plain_run(text, start), end, "from {start}");
        }
        assert_eq!(plain_run(b"short", 0), 5);
        assert_eq!(plain_run(b"0123456789\x01", 3), 10);
    }
}
