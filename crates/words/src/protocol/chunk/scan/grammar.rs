//! The JSON grammar of the scanner: whitespace, objects, arrays, strings, numbers, literals,
//! each read at a position and returning the position after. The methods are `Text`'s, so
//! they are compiled with the rest of the scanner wherever they are written.

use super::super::escape::hex_digit;
use super::super::info::JsonStr;
use super::{Num, Text, plain_run};

/// Nesting this scanner follows before it leaves the chunk to serde_json (whose limit is 128).
const MAX_DEPTH: u32 = 32;

/// Integer digits (plus a positive exponent) below which serde_json cannot overflow an f64.
const MAX_MAGNITUDE: usize = 300;

impl<'a> Text<'a> {
    fn bytes(self) -> &'a [u8] {
        self.0.as_bytes()
    }

    pub(super) fn at(self, i: usize) -> Option<u8> {
        self.bytes().get(i).copied()
    }

    /// `i + 1` if the byte at `i` is `b`.
    pub(super) fn expect(self, i: usize, b: u8) -> Option<usize> {
        (self.at(i)? == b).then_some(i + 1)
    }

    /// Past JSON's four whitespace bytes, as serde_json skips them.
    #[inline]
    pub(super) fn ws(self, mut i: usize) -> usize {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.at(i) {
            i += 1;
        }
        i
    }

    /// The object at `i` (a `{`); `field` gets each key and the position of its value, and
    /// returns the position after the value.
    #[inline]
    pub(super) fn object(
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
    pub(super) fn array(
        self,
        i: usize,
        mut elem: impl FnMut(usize, usize) -> Option<usize>,
    ) -> Option<usize> {
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
    pub(super) fn key(self, i: usize) -> Option<(&'a [u8], usize)> {
        let start = self.expect(i, b'"')?;
        let end = plain_run(self.bytes(), start);
        let after = self.expect(end, b'"')?;
        Some((self.bytes().get(start..end)?, after))
    }

    /// Any value at `i`, nested `depth` deep, validated and dropped. Scalars are handled in
    /// line (most skipped values are `id`, `model`, `created`, `index`, `logprobs: null`).
    #[inline]
    pub(super) fn skip(self, i: usize, depth: u32) -> Option<usize> {
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

    pub(super) fn literal(self, i: usize, word: &[u8]) -> Option<usize> {
        let rest = self.bytes().get(i..)?;
        rest.starts_with(word).then_some(i + word.len())
    }

    /// Whether the value at `i` is `null` (any other value is skipped), and the position after.
    pub(super) fn null_or_skip(self, i: usize, depth: u32) -> Option<(bool, usize)> {
        match self.at(i)? {
            b'n' => Some((true, self.literal(i, b"null")?)),
            _ => Some((false, self.skip(i, depth)?)),
        }
    }

    /// The string at `i`, borrowed between its quotes, and the position after it.
    pub(super) fn string(self, i: usize) -> Option<(JsonStr<'a>, usize)> {
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
    pub(super) fn number(self, i: usize) -> Option<(Num<'a>, usize)> {
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
