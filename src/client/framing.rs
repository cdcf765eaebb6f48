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
    /// In a chunk's size line: the size so far, its digits, and whether an extension or
    /// whitespace began (no more digits then).
    Size {
        size: u64,
        digits: u8,
        tail: bool,
    },
    /// Bytes of the current chunk still to come.
    Data(u64),
    /// After a chunk's data: its CR, then its LF.
    DataCr,
    DataLf,
    /// After the last (empty) chunk: trailer lines until an empty one.
    Trailer {
        at_line_start: bool,
    },
    Done,
}

/// The body's framing is broken (a bad chunk size, a missing CRLF).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the response body's chunked encoding is broken")]
pub struct BadFraming;

const SIZE_START: Chunked = Chunked::Size {
    size: 0,
    digits: 0,
    tail: false,
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
                size: 0,
                digits: 0,
                tail: false,
            } if let Some((n, used)) = quick_size(&input[at..]) => {
                at += used;
                *state = if n == 0 {
                    Chunked::Trailer {
                        at_line_start: true,
                    }
                } else {
                    Chunked::Data(n)
                };
            }
            Chunked::Size { size, digits, tail } => {
                let b = input[at];
                at += 1;
                match b {
                    b'\n' => {
                        if *digits == 0 {
                            return Err(BadFraming);
                        }
                        *state = if *size == 0 {
                            Chunked::Trailer {
                                at_line_start: true,
                            }
                        } else {
                            Chunked::Data(*size)
                        };
                    }
                    b'\r' => *tail = true,
                    _ if !*tail && b.is_ascii_hexdigit() => {
                        // 15 hex digits: sizes up to an exabyte, and no overflow.
                        if *digits >= 15 {
                            return Err(BadFraming);
                        }
                        let d = (b as char).to_digit(16).unwrap_or(0);
                        *size = *size * 16 + u64::from(d);
                        *digits += 1;
                    }
                    b';' | b' ' | b'\t' if *digits > 0 => *tail = true,
                    // An extension's text.
                    _ if *tail && *digits > 0 => {}
                    _ => return Err(BadFraming),
                }
            }
            Chunked::DataCr if input[at..].starts_with(b"\r\n") => {
                at += 2;
                *state = SIZE_START;
            }
            Chunked::DataCr => {
                match input[at] {
                    b'\r' => *state = Chunked::DataLf,
                    // A bare LF, as lenient parsers accept.
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
            Chunked::Trailer { at_line_start } => {
                let b = input[at];
                at += 1;
                match b {
                    b'\n' if *at_line_start => *state = Chunked::Done,
                    b'\n' => *at_line_start = true,
                    b'\r' => {}
                    _ => *at_line_start = false,
                }
            }
        }
    }
    Ok(at)
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
