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

use super::info::{ChunkInfo, JsonStr, ToolCallDelta};

// The grammar and the fields read are `impl Text` blocks of their own files; `Text` and the
// entry stay here, so the methods are still placed with the entry that calls them.
mod fields;
mod grammar;
// What a stream's chunks repeat, remembered: imports this file, so named from `chunk.rs`.
pub(super) mod memo;

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
    scan_from(data, info, None).map(|_| ())
}

/// The scan of the top-level object: from its start, or `from` a key of it that a
/// [`memo::ChunkMemo`] vouches for the bytes before. Where the first field read began (its key's
/// quote; 0 when it read none).
fn scan_from<'a>(data: &'a str, info: &mut ChunkInfo<'a>, from: Option<usize>) -> Option<usize> {
    let t = Text(data);
    let mut i = match from {
        Some(i) => i,
        None => {
            let start = t.ws(0);
            if t.at(start)? != b'{' {
                return None;
            }
            let i = t.ws(start + 1);
            if t.at(i)? == b'}' {
                return (t.ws(i + 1) == data.len()).then_some(0);
            }
            i
        }
    };
    let mut seen = Seen::default();
    let mut first = 0;
    // `Text::object`'s loop, written out so that it can start at a key.
    loop {
        let at = i;
        let (key, after) = t.key(i)?;
        let colon = t.ws(after);
        let v = t.ws(t.expect(colon, b':')?);
        let read = |first: &mut usize| {
            if *first == 0 {
                *first = at;
            }
        };
        i = match key {
            b"choices" => {
                seen.first(0)?;
                read(&mut first);
                t.choices(v, info)
            }
            b"usage" => {
                seen.first(1)?;
                read(&mut first);
                t.usage(v, &mut info.usage)
            }
            b"error" => {
                seen.first(2)?;
                read(&mut first);
                let (null, i) = t.null_or_skip(v, 1)?;
                info.error = !null;
                Some(i)
            }
            b"timings" => {
                seen.first(3)?;
                read(&mut first);
                t.timings(v, &mut info.timings)
            }
            _ => t.skip(v, 1),
        }?;
        i = t.ws(i);
        match t.at(i)? {
            b',' => i = t.ws(i + 1),
            b'}' => return (t.ws(i + 1) == data.len()).then_some(first),
            _ => return None,
        }
    }
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
