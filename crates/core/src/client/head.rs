//! The response head, read from the bytes a connection has brought so far: parsed by
//! `httparse`, interim (`1xx`) answers skipped, the body's framing decided as RFC 9112 §6.3
//! decides it, and everything the client cannot use refused with its reason. A refusal is the
//! `protocol` error kind (docs/metrics.md): the server answered, but not in HTTP/1.1 the client
//! can read without guessing, and guessing is how one answer gets read as another's.
//!
//! Pure and incremental: [`parse`] is called again on the whole buffer after every read, and
//! its answer never changes once given (a head found stays that head; a refusal stays one),
//! which the fuzz target `response_head` holds it to.

use super::framing::Framing;

/// The most bytes all of an answer's heads (interim ones included) may take.
pub const MAX_HEAD: usize = 64 * 1024;
/// The most header fields one head may have.
pub const MAX_HEADERS: usize = 64;
/// The most interim (`1xx`) responses before the final one.
pub const MAX_INTERIM: usize = 16;

/// A final response's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// 200–599 (`1xx` are skipped, `101` and anything outside refused).
    pub status: u16,
    pub framing: Framing,
    /// HTTP/1.1 without `connection: close`: the server offers to keep the connection.
    pub keep_alive: bool,
    /// The simulator's request id (`x-infermeter-sim-id`), for the tests' ground truth.
    pub sim_id: Option<u64>,
    /// Bytes of the buffer the heads took, interim ones included: the body starts there.
    pub len: usize,
}

impl Head {
    /// The connection may carry another request once this response's body is read to its
    /// end. Not after a body without a delimited end (read to the close), nor after one known
    /// to be empty (`204`, `304`, `content-length: 0`): with no body there is nothing in which
    /// to find bytes the server should not have sent, and a stray answer behind an empty one
    /// would be read as the next request's.
    pub fn reusable(&self) -> bool {
        self.keep_alive
            && match self.framing {
                Framing::Chunked(_) => true,
                Framing::Length(n) => n > 0,
                Framing::Close => false,
            }
    }
}

/// Why a response head is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadHead {
    #[error("the response head is larger than {MAX_HEAD} bytes")]
    TooLarge,
    #[error("the response head has more than {MAX_HEADERS} header fields")]
    TooManyHeaders,
    #[error("the server answered in HTTP/2 (a SETTINGS frame), not HTTP/1.1")]
    Http2,
    #[error("the response head is not HTTP/1.x: {0}")]
    Unparsable(httparse::Error),
    #[error("more than {MAX_INTERIM} interim (1xx) responses")]
    TooManyInterim,
    #[error("status {0} cannot answer this request (101 without an upgrade, or not 100-599)")]
    BadStatus(u16),
    #[error("a content-length that is not a decimal number")]
    BadLength,
    #[error("content-length values that disagree")]
    ConflictingLength,
    #[error("both content-length and transfer-encoding")]
    LengthAndTransferEncoding,
    #[error("transfer-encoding with chunked not last, twice, or in an HTTP/1.0 response")]
    BadTransferEncoding,
}

/// The final head in `buf` (every byte read so far, from the answer's first), skipping
/// interim responses; `Ok(None)` while more bytes are needed.
pub fn parse(buf: &[u8]) -> Result<Option<Head>, BadHead> {
    let mut at = 0;
    for _ in 0..=MAX_INTERIM {
        match one(&buf[at..])? {
            None if buf.len() > MAX_HEAD => return Err(BadHead::TooLarge),
            None => return Ok(None),
            Some(One::Interim(used)) => at += used,
            Some(One::Final(mut head)) => {
                head.len += at;
                if head.len > MAX_HEAD {
                    return Err(BadHead::TooLarge);
                }
                return Ok(Some(head));
            }
        }
        if at > MAX_HEAD {
            return Err(BadHead::TooLarge);
        }
    }
    Err(BadHead::TooManyInterim)
}

enum One {
    /// A `1xx` head of this many bytes.
    Interim(usize),
    Final(Head),
}

/// The one head at the start of `buf`.
fn one(buf: &[u8]) -> Result<Option<One>, BadHead> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let used = match resp.parse(buf) {
        Ok(httparse::Status::Complete(used)) => used,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(BadHead::TooManyHeaders),
        Err(_) if http2(buf) => return Err(BadHead::Http2),
        Err(e) => return Err(BadHead::Unparsable(e)),
    };
    let status = resp.code.unwrap_or(0);
    match status {
        // 101 switches protocols, which this client never asks for.
        100 | 102..=199 => return Ok(Some(One::Interim(used))),
        200..=599 => {}
        _ => return Err(BadHead::BadStatus(status)),
    }
    let http11 = resp.version == Some(1);
    let fields = Fields::read(resp.headers)?;
    let framing = match (fields.chunked, fields.length) {
        (Some(_), Some(_)) => return Err(BadHead::LengthAndTransferEncoding),
        (Some(_), None) if !http11 => return Err(BadHead::BadTransferEncoding),
        // No body, whatever the fields say (a 304 may repeat the length of the 200).
        _ if status == 204 || status == 304 => Framing::Length(0),
        (Some(true), None) => Framing::chunked(),
        // Another coding last: the body ends when the connection does.
        (Some(false), None) => Framing::Close,
        (None, Some(n)) => Framing::Length(n),
        (None, None) => Framing::Close,
    };
    Ok(Some(One::Final(Head {
        status,
        framing,
        keep_alive: http11 && !fields.close,
        sim_id: fields.sim_id,
        len: used,
    })))
}

/// The start of an HTTP/2 server's first frame: a SETTINGS frame (type 4) on stream 0.
fn http2(buf: &[u8]) -> bool {
    buf.len() >= 9 && buf[3] == 0x04 && buf[5..9] == [0, 0, 0, 0]
}

/// What the header fields say about the body and the connection.
#[derive(Default)]
struct Fields {
    /// `transfer-encoding` was present: whether `chunked` is its last coding.
    chunked: Option<bool>,
    length: Option<u64>,
    /// `connection: close`.
    close: bool,
    sim_id: Option<u64>,
}

impl Fields {
    fn read(headers: &[httparse::Header<'_>]) -> Result<Self, BadHead> {
        let mut f = Fields::default();
        for h in headers {
            let name = h.name;
            if name.eq_ignore_ascii_case("transfer-encoding") {
                f.transfer_encoding(h.value)?;
            } else if name.eq_ignore_ascii_case("content-length") {
                if list(h.value).next().is_none() {
                    return Err(BadHead::BadLength);
                }
                for v in list(h.value) {
                    let n = length(v).ok_or(BadHead::BadLength)?;
                    if f.length.is_some_and(|m| m != n) {
                        return Err(BadHead::ConflictingLength);
                    }
                    f.length = Some(n);
                }
            } else if name.eq_ignore_ascii_case("connection") {
                f.close |= list(h.value).any(|t| t.eq_ignore_ascii_case(b"close"));
            } else if name.eq_ignore_ascii_case("x-infermeter-sim-id") {
                f.sim_id = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse().ok());
            }
        }
        Ok(f)
    }

    /// One `transfer-encoding` field's codings (a field may repeat: the lists join).
    fn transfer_encoding(&mut self, value: &[u8]) -> Result<(), BadHead> {
        for coding in list(value) {
            // A coding after `chunked` (or `chunked` twice): the body's end is ambiguous.
            if self.chunked == Some(true) {
                return Err(BadHead::BadTransferEncoding);
            }
            let name = coding.split(|&b| b == b';').next().unwrap_or_default();
            self.chunked = Some(trim(name).eq_ignore_ascii_case(b"chunked"));
        }
        if self.chunked.is_none() {
            // Present but empty: no coding is not a framing the client can use.
            return Err(BadHead::BadTransferEncoding);
        }
        Ok(())
    }
}

/// The non-empty elements of a comma-separated field value, trimmed.
fn list(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim)
        .filter(|t| !t.is_empty())
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// A content-length: decimal digits only (no sign, no space inside), within `u64`.
fn length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
