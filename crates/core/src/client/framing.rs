//! HTTP/1.1 response body framing: `transfer-encoding: chunked`, `content-length`, or to the
//! end of the connection. Decodes what a network read brought into the payload, so the SSE
//! decoder sees only the body's own bytes.

/// How the body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Chunked(Chunked),
    /// Bytes of a `content-length` body still to come.
    Length(u64),
    /// The body is everything until the server closes the connection.
    Close,
}

/// Where a chunked body stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunked {
    /// In a chunk's size line: the size so far, its digits, the line's length so far, and
    /// what the line has reached.
    Size {
        size: u64,
        digits: u8,
        len: u16,
        at: SizeLine,
    },
    /// Bytes of the current chunk still to come.
    Data(u64),
    /// After a chunk's data: its CR, then its LF.
    DataCr,
    DataLf,
    /// After the last (empty) chunk: trailer lines until an empty one. `len` counts the
    /// trailer's bytes, `empty` says the current line has none yet, `cr` that a CR was just
    /// read.
    Trailer {
        len: u16,
        empty: bool,
        cr: bool,
    },
    Done,
}

/// How far a chunk-size line has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeLine {
    Digits,
    /// Whitespace after the digits (only `;` or the line's end may follow).
    Space,
    /// A chunk extension's text (read and ignored).
    Ext,
    /// The line's CR: its LF must follow.
    Cr,
}

/// The body's framing is broken (a bad chunk size, a missing CRLF).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the response body's chunked encoding is broken")]
pub struct BadFraming;

/// The longest chunk-size line, extensions included (hyper allows 16 KiB of extensions for a
/// whole body; a size line of ours carries none).
const MAX_SIZE_LINE: u16 = 4096;
/// The most bytes of trailer fields after the last chunk.
const MAX_TRAILER: u16 = 16 * 1024;

const SIZE_START: Chunked = Chunked::Size {
    size: 0,
    digits: 0,
    len: 0,
    at: SizeLine::Digits,
};

impl Framing {
    pub fn chunked() -> Self {
        Framing::Chunked(SIZE_START)
    }

    /// The body has ended (a connection-delimited body ends at end of file instead).
    pub fn is_done(&self) -> bool {
        matches!(self, Framing::Chunked(Chunked::Done) | Framing::Length(0))
    }

    /// Decodes `input` into `out`; returns how much of `input` belongs to the body (bytes
    /// after its end are the connection's next response, which HTTP/1.1 without pipelining
    /// never sends).
    pub fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> Result<usize, BadFraming> {
        match self {
            Framing::Close => {
                out.extend_from_slice(input);
                Ok(input.len())
            }
            Framing::Length(left) => {
                let n = (*left).min(input.len() as u64) as usize;
                out.extend_from_slice(&input[..n]);
                *left -= n as u64;
                Ok(n)
            }
            Framing::Chunked(state) => decode_chunked(state, input, out),
        }
    }
}

/// Chunked decoding as RFC 9112 §7.1 has it, strict where a lenient reading could take one
/// body for another: a size line is hex digits, optional whitespace, optional `;` extensions
/// (visible text), then CRLF; a CR is always followed by LF. A bare LF is taken as a line's
/// end (RFC 9112 §2.2 lets a recipient do so; it cannot be read two ways).
fn decode_chunked(
    state: &mut Chunked,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Result<usize, BadFraming> {
    let mut at = 0;
    while at < input.len() {
        match state {
            Chunked::Done => return Ok(at),
            Chunked::Data(left) => {
                let n = (*left).min((input.len() - at) as u64) as usize;
                out.extend_from_slice(&input[at..at + n]);
                at += n;
                *left -= n as u64;
                if *left == 0 {
                    *state = Chunked::DataCr;
                }
            }
            Chunked::Size {
                size: 0, digits: 0, ..
            } if let Some((n, used)) = quick_size(&input[at..]) => {
                at += used;
                *state = after_size(n);
            }
            Chunked::Size {
                size,
                digits,
                len,
                at: line,
            } => {
                let b = input[at];
                at += 1;
                if let Some(n) = size_byte(size, digits, len, line, b)? {
                    *state = after_size(n);
                }
            }
            Chunked::DataCr if input[at..].starts_with(b"\r\n") => {
                at += 2;
                *state = SIZE_START;
            }
            Chunked::DataCr => {
                match input[at] {
                    b'\r' => *state = Chunked::DataLf,
                    b'\n' => *state = SIZE_START,
                    _ => return Err(BadFraming),
                }
                at += 1;
            }
            Chunked::DataLf => {
                if input[at] != b'\n' {
                    return Err(BadFraming);
                }
                at += 1;
                *state = SIZE_START;
            }
            Chunked::Trailer { .. } => {
                let b = input[at];
                at += 1;
                trailer_byte(state, b)?;
            }
        }
    }
    Ok(at)
}

/// The state after a size line that said `n`.
fn after_size(n: u64) -> Chunked {
    if n == 0 {
        Chunked::Trailer {
            len: 0,
            empty: true,
            cr: false,
        }
    } else {
        Chunked::Data(n)
    }
}

/// One byte of a size line; the size once the line has ended.
fn size_byte(
    size: &mut u64,
    digits: &mut u8,
    len: &mut u16,
    line: &mut SizeLine,
    b: u8,
) -> Result<Option<u64>, BadFraming> {
    *len += 1;
    if *len > MAX_SIZE_LINE {
        return Err(BadFraming);
    }
    match (*line, b) {
        (SizeLine::Cr, b'\n') => return Ok(Some(*size)),
        (SizeLine::Cr, _) => return Err(BadFraming),
        (_, b'\r') if *digits > 0 => *line = SizeLine::Cr,
        (_, b'\n') if *digits > 0 => return Ok(Some(*size)),
        (SizeLine::Digits, _) if b.is_ascii_hexdigit() => {
            // 15 hex digits: sizes up to an exabyte, and no overflow.
            if *digits >= 15 {
                return Err(BadFraming);
            }
            let d = (b as char).to_digit(16).unwrap_or(0);
            *size = *size * 16 + u64::from(d);
            *digits += 1;
        }
        (SizeLine::Digits | SizeLine::Space, b' ' | b'\t') if *digits > 0 => {
            *line = SizeLine::Space;
        }
        (SizeLine::Digits | SizeLine::Space, b';') if *digits > 0 => *line = SizeLine::Ext,
        // An extension's text: visible characters, spaces, tabs, obs-text.
        (SizeLine::Ext, b'\t' | b' '..=b'~' | 0x80..=0xff) => {}
        _ => return Err(BadFraming),
    }
    Ok(None)
}

/// One byte of the trailer section: lines until an empty one, CR always followed by LF, no
/// control characters, within `MAX_TRAILER`.
fn trailer_byte(state: &mut Chunked, b: u8) -> Result<(), BadFraming> {
    let Chunked::Trailer { len, empty, cr } = state else {
        return Ok(());
    };
    *len += 1;
    if *len > MAX_TRAILER {
        return Err(BadFraming);
    }
    match (*cr, b) {
        (true, b'\n') | (false, b'\n') if *empty => *state = Chunked::Done,
        (true, b'\n') | (false, b'\n') => {
            *empty = true;
            *cr = false;
        }
        (true, _) => return Err(BadFraming),
        (false, b'\r') => *cr = true,
        (false, b'\t' | b' '..=b'~' | 0x80..=0xff) => *empty = false,
        (false, _) => return Err(BadFraming),
    }
    Ok(())
}

/// A whole size line without extensions at the start of `input` (`1a\r\n`), the common
/// case, read at once: its size and length. Anything else is left to the byte-wise path.
#[inline]
fn quick_size(input: &[u8]) -> Option<(u64, usize)> {
    let mut size = 0u64;
    for (i, &b) in input.iter().enumerate().take(16) {
        match b {
            b'\r' if i > 0 && input.get(i + 1) == Some(&b'\n') => return Some((size, i + 2)),
            b'\n' if i > 0 => return Some((size, i + 1)),
            _ => size = size * 16 + u64::from(char::from(b).to_digit(16)?),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(reads: &[&[u8]]) -> Result<(Vec<u8>, bool), BadFraming> {
        let mut f = Framing::chunked();
        let mut out = Vec::new();
        for r in reads {
            let used = f.decode(r, &mut out)?;
            assert!(used == r.len() || f.is_done());
        }
        Ok((out, f.is_done()))
    }

    #[test]
    fn chunks_extensions_and_trailers_decode() {
        let body = b"5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\n";
        let (out, done) = decode_all(&[body]).unwrap();
        assert_eq!(out, b"hello 0123456789");
        assert!(done);
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(
                decode_all(&[a, b]).unwrap(),
                (out.clone(), true),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn bytes_after_the_end_are_not_the_body() {
        let mut f = Framing::chunked();
        let mut out = Vec::new();
        assert_eq!(f.decode(b"2\r\nab\r\n0\r\n\r\nHTTP", &mut out), Ok(12));
        assert!(f.is_done());
        let mut f = Framing::Length(3);
        assert_eq!(f.decode(b"abcdef", &mut out), Ok(3));
        assert!(f.is_done());
    }

    #[test]
    fn broken_chunk_sizes_are_errors() {
        assert_eq!(decode_all(&[b"zz\r\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b"\r\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b"2\r\nabc"]), Err(BadFraming));
        assert_eq!(decode_all(&[b"ffffffffffffffff\r\n"]), Err(BadFraming));
    }

    #[test]
    fn a_cr_is_always_followed_by_lf() {
        // `1\r2\n` once read as a chunk of 1 byte, the `2` taken for an extension.
        assert_eq!(decode_all(&[b"1\r2\nab\r\n0\r\n\r\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b"1\r", b"2\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b"1\r\na\rb"]), Err(BadFraming));
        assert_eq!(
            decode_all(&[b"1\r\na\r\n0\r\nx: 1\ry\r\n\r\n"]),
            Err(BadFraming)
        );
        assert_eq!(decode_all(&[b"1\r\na\r\n0\r\n\r", b"x"]), Err(BadFraming));
    }

    #[test]
    fn size_lines_are_digits_whitespace_and_extensions_only() {
        assert_eq!(decode_all(&[b"1 x\r\na\r\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b"1x\r\na\r\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b" 1\r\na\r\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b";x\r\na\r\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b"1;a=\x01\r\na\r\n"]), Err(BadFraming));
        assert_eq!(decode_all(&[b"1;a=\x7f\r\na\r\n"]), Err(BadFraming));
        let body = b"1 \t ; a=\"b c\" ;d\r\na\r\n0\r\n\r\n";
        assert_eq!(decode_all(&[body]).unwrap(), (b"a".to_vec(), true));
        // Bare LFs end lines (RFC 9112 2.2), unambiguously.
        let body = b"1\na\n0\nx: 1\n\n";
        assert_eq!(decode_all(&[body]).unwrap(), (b"a".to_vec(), true));
    }

    #[test]
    fn endless_size_lines_and_trailers_are_errors() {
        let mut line = b"1;".to_vec();
        line.resize(usize::from(MAX_SIZE_LINE), b'x');
        assert_eq!(decode_all(&[&line]).unwrap(), (Vec::new(), false));
        line.push(b'x');
        assert_eq!(decode_all(&[&line]), Err(BadFraming));
        let mut trailer = b"0\r\n".to_vec();
        for _ in 0..=usize::from(MAX_TRAILER) / 8 {
            trailer.extend_from_slice(b"x: 1234\n");
        }
        assert_eq!(decode_all(&[&trailer]), Err(BadFraming));
        assert_eq!(decode_all(&[b"0\r\nx: \x00\r\n\r\n"]), Err(BadFraming));
    }

    #[test]
    fn an_unfinished_body_is_not_done() {
        assert_eq!(
            decode_all(&[b"5\r\nhel"]).unwrap(),
            (b"hel".to_vec(), false)
        );
        assert_eq!(decode_all(&[b"0\r\n"]).unwrap(), (Vec::new(), false));
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_chunking_and_any_split_decode_to_the_payload(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..8),
            cut in 0usize..400,
            upper in any::<bool>(),
        ) {
            let mut wire = Vec::new();
            for c in &chunks {
                let size = if upper { format!("{:X}", c.len()) } else { format!("{:x}", c.len()) };
                wire.extend_from_slice(size.as_bytes());
                wire.extend_from_slice(b"\r\n");
                wire.extend_from_slice(c);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(b"0\r\n\r\n");
            let cut = cut.min(wire.len());
            let (out, done) = decode_all(&[&wire[..cut], &wire[cut..]]).unwrap();
            prop_assert!(done);
            prop_assert_eq!(out, chunks.concat());
        }

        #[test]
        fn arbitrary_bytes_never_panic(reads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..32), 0..8)) {
            let mut f = Framing::chunked();
            let mut out = Vec::new();
            for r in &reads {
                match f.decode(r, &mut out) {
                    Ok(used) => prop_assert!(used <= r.len()),
                    Err(_) => break,
                }
            }
        }
    }
}
