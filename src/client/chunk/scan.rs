//! The fast path of chunk decoding: one pass over the bytes that reads the few fields the
//! measurement needs, borrows every string, and validates the rest of the text the way
//! serde_json would, without building anything for it.
//!
//! Every function returns `Option`: `None` means "not sure", never "invalid". Whatever this
//! scanner does not fully understand (a syntax error, an escaped key, a key it reads seen twice,
//! a field of an unexpected type, deep nesting, a number serde_json might reject as out of
//! range) is left to the serde_json decoder, so an answer from here is always the one serde_json
//! would give.

use super::{ChunkInfo, FinishReason, JsonStr, ServerTimings, Usage, finish_reason_of};

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

/// Decodes `data` if the scanner is sure of the answer; `None` leaves it to serde_json.
pub(super) fn scan(data: &str) -> Option<ChunkInfo<'_>> {
    let mut sc = Scanner {
        text: data,
        pos: 0,
        depth: 0,
    };
    sc.ws();
    if sc.peek()? != b'{' {
        return None;
    }
    let mut info = ChunkInfo::default();
    let mut seen = Seen::default();
    sc.object(|sc, key| match key.as_plain()? {
        b"choices" => {
            seen.first(0)?;
            sc.choices(&mut info)
        }
        b"usage" => {
            seen.first(1)?;
            info.usage = sc.usage()?;
            Some(())
        }
        b"error" => {
            seen.first(2)?;
            info.error = !sc.null_or_skip()?;
            Some(())
        }
        b"timings" => {
            seen.first(3)?;
            info.timings = sc.timings()?;
            Some(())
        }
        _ => sc.skip(),
    })?;
    sc.ws();
    (sc.pos == data.len()).then_some(info)
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
}

/// A number token: its text, and its value when it is one serde_json keeps as a `u64`.
struct Num<'a> {
    raw: &'a str,
    uint: Option<u64>,
}

struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    depth: u32,
}

impl<'a> Scanner<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.pos += usize::from(hit);
        hit
    }

    /// JSON's four whitespace bytes, as serde_json skips them.
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// An object at `pos`; `field` is called with each key, positioned at its value, and must
    /// consume the value.
    fn object(
        &mut self,
        mut field: impl FnMut(&mut Self, JsonStr<'a>) -> Option<()>,
    ) -> Option<()> {
        self.open(b'{')?;
        if self.eat(b'}') {
            return self.close();
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.ws();
            if self.next()? != b':' {
                return None;
            }
            self.ws();
            field(self, key)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return self.close(),
                _ => return None,
            }
        }
    }

    /// An array at `pos`; `elem` is called with each element's index and must consume it.
    fn array(&mut self, mut elem: impl FnMut(&mut Self, usize) -> Option<()>) -> Option<()> {
        self.open(b'[')?;
        if self.eat(b']') {
            return self.close();
        }
        let mut i = 0;
        loop {
            elem(self, i)?;
            i += 1;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b']' => return self.close(),
                _ => return None,
            }
        }
    }

    fn open(&mut self, bracket: u8) -> Option<()> {
        if self.next()? != bracket || self.depth >= MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        self.ws();
        Some(())
    }

    fn close(&mut self) -> Option<()> {
        self.depth -= 1;
        Some(())
    }

    /// Any value, validated and dropped.
    fn skip(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|sc, _| sc.skip()),
            b'[' => self.array(|sc, _| sc.skip()),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let rest = self.bytes().get(self.pos..)?;
        if !rest.starts_with(word) {
            return None;
        }
        self.pos += word.len();
        Some(())
    }

    /// `Some(true)` for `null`, `Some(false)` for any other value (skipped).
    fn null_or_skip(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(true);
        }
        self.skip()?;
        Some(false)
    }

    /// A string at `pos`, borrowed between its quotes; its escapes are checked as serde_json
    /// checks them when it decodes a string (surrogates must pair).
    fn string(&mut self) -> Option<JsonStr<'a>> {
        let bytes = self.bytes();
        self.pos += 1;
        let start = self.pos;
        let mut escaped = false;
        loop {
            while let Some(&b) = bytes.get(self.pos)
                && !STRING_SPECIAL[usize::from(b)]
            {
                self.pos += 1;
            }
            match self.next()? {
                b'"' => break,
                b'\\' => {
                    self.escape()?;
                    escaped = true;
                }
                _ => return None,
            }
        }
        let raw = self.text.get(start..self.pos - 1)?;
        Some(if escaped {
            JsonStr::from_escaped(raw)
        } else {
            JsonStr::from_plain(raw)
        })
    }

    /// One escape after its backslash.
    fn escape(&mut self) -> Option<()> {
        match self.next()? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(()),
            b'u' => match self.hex4()? {
                0xDC00..=0xDFFF => None,
                0xD800..=0xDBFF => {
                    if self.next()? != b'\\' || self.next()? != b'u' {
                        return None;
                    }
                    matches!(self.hex4()?, 0xDC00..=0xDFFF).then_some(())
                }
                _ => Some(()),
            },
            _ => None,
        }
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.bytes().get(self.pos..self.pos + 4)?;
        let mut n = 0u16;
        for &d in digits {
            n = n << 4 | u16::from(hex_digit(d)?);
        }
        self.pos += 4;
        Some(n)
    }

    /// A number at `pos`, in JSON's grammar, and only if serde_json certainly accepts it.
    fn number(&mut self) -> Option<Num<'a>> {
        let start = self.pos;
        let negative = self.eat(b'-');
        let int_start = self.pos;
        let mut value = Some(0u64);
        match self.next()? {
            b'0' => {}
            d @ b'1'..=b'9' => {
                value = Some(u64::from(d - b'0'));
                while let Some(d @ b'0'..=b'9') = self.peek() {
                    value = value
                        .and_then(|v| v.checked_mul(10))
                        .and_then(|v| v.checked_add(u64::from(d - b'0')));
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        let int_digits = self.pos - int_start;
        let mut integer = !negative;
        if self.eat(b'.') {
            integer = false;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            integer = false;
            self.pos += 1;
            let negative_exp = self.eat(b'-');
            if !negative_exp {
                self.eat(b'+');
            }
            let exp_start = self.pos;
            self.digits()?;
            let exp = self.text.get(exp_start..self.pos)?;
            // Long exponents and large magnitudes are serde_json's to judge (it rejects
            // numbers that overflow an f64).
            let exp: usize = if exp.len() <= 4 {
                exp.parse().ok()?
            } else {
                return None;
            };
            if !negative_exp && int_digits + exp > MAX_MAGNITUDE {
                return None;
            }
        }
        if int_digits > MAX_MAGNITUDE {
            return None;
        }
        // A second leading zero (`01`) is invalid; the caller's grammar would reject the
        // digit that follows, but only if it looks, so say it here.
        if let Some(b'0'..=b'9') = self.peek() {
            return None;
        }
        Some(Num {
            raw: self.text.get(start..self.pos)?,
            uint: if integer { value } else { None },
        })
    }

    /// At least one digit.
    fn digits(&mut self) -> Option<()> {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        (self.pos > start).then_some(())
    }

    /// `choices`: `null`, or an array whose first element is read and the rest skipped.
    fn choices(&mut self, info: &mut ChunkInfo<'a>) -> Option<()> {
        match self.peek()? {
            b'n' => self.literal(b"null"),
            b'[' => self.array(|sc, i| if i == 0 { sc.choice(info) } else { sc.skip() }),
            _ => None,
        }
    }

    fn choice(&mut self, info: &mut ChunkInfo<'a>) -> Option<()> {
        if self.peek()? != b'{' {
            return None;
        }
        let mut seen = Seen::default();
        let mut delta = Delta::default();
        let mut text = None;
        self.object(|sc, key| match key.as_plain()? {
            b"delta" => {
                seen.first(0)?;
                sc.delta(&mut delta)
            }
            b"text" => {
                seen.first(1)?;
                text = sc.opt_str()?;
                Some(())
            }
            b"finish_reason" => {
                seen.first(2)?;
                info.finish_reason = sc.finish_reason()?;
                Some(())
            }
            _ => sc.skip(),
        })?;
        info.answer = delta.content.or(text);
        info.reasoning = delta.reasoning_content.or(delta.reasoning);
        Some(())
    }

    fn delta(&mut self, delta: &mut Delta<'a>) -> Option<()> {
        match self.peek()? {
            b'n' => self.literal(b"null"),
            b'{' => {
                let mut seen = Seen::default();
                self.object(|sc, key| {
                    let (bit, slot) = match key.as_plain()? {
                        b"content" => (0, &mut delta.content),
                        b"reasoning_content" => (1, &mut delta.reasoning_content),
                        b"reasoning" => (2, &mut delta.reasoning),
                        _ => return sc.skip(),
                    };
                    seen.first(bit)?;
                    *slot = sc.opt_str()?;
                    Some(())
                })
            }
            _ => None,
        }
    }

    /// A string or `null`; anything else is a type error, serde_json's to report.
    fn opt_str(&mut self) -> Option<Option<JsonStr<'a>>> {
        match self.peek()? {
            b'"' => self.string().map(Some),
            b'n' => self.literal(b"null").map(|()| None),
            _ => None,
        }
    }

    /// Any value: a string is classified, `null` is absent, anything else is `Other`.
    fn finish_reason(&mut self) -> Option<Option<FinishReason>> {
        match self.peek()? {
            b'"' => Some(Some(finish_reason_of(&self.string()?))),
            _ => Some((!self.null_or_skip()?).then_some(FinishReason::Other)),
        }
    }

    /// `usage`: `null` or an object whose token counts are unsigned integers.
    fn usage(&mut self) -> Option<Option<Usage>> {
        match self.peek()? {
            b'n' => self.literal(b"null").map(|()| None),
            b'{' => {
                let mut u = Usage::default();
                let mut seen = Seen::default();
                self.object(|sc, key| match key.as_plain()? {
                    b"prompt_tokens" => {
                        seen.first(0)?;
                        u.prompt_tokens = sc.number()?.uint?;
                        Some(())
                    }
                    b"completion_tokens" => {
                        seen.first(1)?;
                        u.completion_tokens = sc.number()?.uint?;
                        Some(())
                    }
                    b"prompt_tokens_details" => {
                        seen.first(2)?;
                        u.cached_tokens = sc.prompt_tokens_details()?;
                        Some(())
                    }
                    _ => sc.skip(),
                })?;
                Some(Some(u))
            }
            _ => None,
        }
    }

    /// `cached_tokens` when the details are an object holding it as an unsigned integer.
    fn prompt_tokens_details(&mut self) -> Option<Option<u64>> {
        if self.peek()? != b'{' {
            return self.skip().map(|()| None);
        }
        let mut cached = None;
        let mut seen = Seen::default();
        self.object(|sc, key| match key.as_plain()? {
            b"cached_tokens" => {
                seen.first(0)?;
                cached = sc.lenient_uint()?;
                Some(())
            }
            _ => sc.skip(),
        })?;
        Some(cached)
    }

    /// llama.cpp's `timings`, when it is an object; fields of other types are absent.
    fn timings(&mut self) -> Option<Option<ServerTimings>> {
        if self.peek()? != b'{' {
            return self.skip().map(|()| None);
        }
        let mut t = ServerTimings::default();
        let mut seen = Seen::default();
        self.object(|sc, key| {
            match key.as_plain()? {
                b"prompt_n" => {
                    seen.first(0)?;
                    t.prompt_n = sc.lenient_uint()?;
                }
                b"prompt_ms" => {
                    seen.first(1)?;
                    t.prompt_ms = sc.lenient_float()?;
                }
                b"predicted_n" => {
                    seen.first(2)?;
                    t.predicted_n = sc.lenient_uint()?;
                }
                b"predicted_ms" => {
                    seen.first(3)?;
                    t.predicted_ms = sc.lenient_float()?;
                }
                b"cache_n" => {
                    seen.first(4)?;
                    t.cache_n = sc.lenient_uint()?;
                }
                _ => sc.skip()?,
            }
            Some(())
        })?;
        Some(Some(t))
    }

    /// An unsigned integer, or absent for any other value.
    fn lenient_uint(&mut self) -> Option<Option<u64>> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => Some(self.number()?.uint),
            _ => self.skip().map(|()| None),
        }
    }

    /// Any number as an f64, rounded by serde_json itself so both decoders agree to the bit;
    /// absent for any other value.
    fn lenient_float(&mut self) -> Option<Option<f64>> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => {
                let raw = self.number()?.raw;
                serde_json::from_str::<f64>(raw).ok().map(Some)
            }
            _ => self.skip().map(|()| None),
        }
    }
}

pub(super) fn hex_digit(d: u8) -> Option<u8> {
    match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        b'A'..=b'F' => Some(d - b'A' + 10),
        _ => None,
    }
}
