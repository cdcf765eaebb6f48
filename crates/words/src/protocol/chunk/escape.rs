//! JSON string escapes: decoding those the scanner validated, and the hex digit both read.

/// Decodes the escapes of a string the scanner validated. Should the text be invalid anyway,
/// the bad escape becomes U+FFFD rather than a panic.
pub(super) fn unescape_into(raw: &str, out: &mut String) {
    let mut rest = raw;
    while let Some(i) = memchr::memchr(b'\\', rest.as_bytes()) {
        out.push_str(&rest[..i]);
        let (ch, used) = unescape_one(&rest.as_bytes()[i + 1..]);
        out.push(ch);
        rest = rest.get(i + 1 + used..).unwrap_or_default();
    }
    out.push_str(rest);
}

/// The character an escape (the bytes after its backslash) stands for, and the bytes it used.
fn unescape_one(esc: &[u8]) -> (char, usize) {
    let simple = match esc.first() {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => return unescape_unicode(esc),
        _ => return (char::REPLACEMENT_CHARACTER, 0),
    };
    (simple, 1)
}

/// `u` and four hex digits, and for a leading surrogate the `\u` of its trailing half.
fn unescape_unicode(esc: &[u8]) -> (char, usize) {
    let hex = |at: usize| {
        esc.get(at..at + 4)?
            .iter()
            .try_fold(0u32, |n, &d| Some(n << 4 | u32::from(hex_digit(d)?)))
    };
    let Some(first) = hex(1) else {
        return (char::REPLACEMENT_CHARACTER, 1);
    };
    if (0xD800..0xDC00).contains(&first)
        && esc.get(5..7) == Some(b"\\u")
        && let Some(second @ 0xDC00..0xE000) = hex(7)
    {
        let code = 0x1_0000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return (
            char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER),
            11,
        );
    }
    (
        char::from_u32(first).unwrap_or(char::REPLACEMENT_CHARACTER),
        5,
    )
}

pub(super) fn hex_digit(d: u8) -> Option<u8> {
    match d {
        b'0'..=b'9' => Some(d - b'0'),
        b'a'..=b'f' => Some(d - b'a' + 10),
        b'A'..=b'F' => Some(d - b'A' + 10),
        _ => None,
    }
}
