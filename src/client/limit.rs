//! A cap on the size of one SSE event, applied to the response's bytes before the SSE decoder
//! buffers them: a server that streams one line that never ends must cost a bounded amount of
//! memory and fail its request as `malformed`, not grow the client without limit.
//!
//! The cap counts the bytes since the last event boundary (an empty line: two line endings in
//! a row, where a line ending is LF, CR or CRLF, as the SSE specification defines them), so it
//! bounds what the decoder can hold for one event, however it is split into network reads.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

/// Why the response body stopped.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error(transparent)]
    Http(#[from] reqwest::Error),
    #[error("an SSE event exceeded {0} bytes (the target's max-event-size)")]
    EventTooLarge(usize),
}

/// Where the scan stands between two reads.
#[derive(Debug, Clone, Copy)]
struct Scan {
    /// Bytes of the event being read so far.
    pending: usize,
    /// The last byte ended a line (or the stream just started): a line ending now would be
    /// an empty line.
    at_line_start: bool,
    /// The last byte was CR: an LF now belongs to the same line ending.
    after_cr: bool,
}

impl Scan {
    fn new() -> Self {
        Scan {
            pending: 0,
            at_line_start: true,
            after_cr: false,
        }
    }

    /// Feeds one read; the bytes of the event still open at its end.
    fn feed(&mut self, bytes: &[u8]) -> usize {
        let mut from = 0;
        // Where the last event of this read ended (one past its empty line).
        let mut boundary = None;
        for at in memchr::memchr2_iter(b'\n', b'\r', bytes) {
            if at > from {
                // Text between line endings: the line is not empty.
                self.at_line_start = false;
                self.after_cr = false;
            }
            let byte = bytes[at];
            if byte == b'\n' && self.after_cr {
                // CRLF: one line ending, already counted at the CR.
                self.after_cr = false;
                if boundary == Some(at) {
                    boundary = Some(at + 1);
                }
            } else {
                if self.at_line_start {
                    boundary = Some(at + 1);
                }
                self.at_line_start = true;
                self.after_cr = byte == b'\r';
            }
            from = at + 1;
        }
        if from < bytes.len() {
            self.at_line_start = false;
            self.after_cr = false;
        }
        self.pending = match boundary {
            Some(end) => bytes.len() - end,
            None => self.pending.saturating_add(bytes.len()),
        };
        self.pending
    }
}

/// The response's byte stream, ending with [`BodyError::EventTooLarge`] once an event grows
/// past `max` bytes.
pub struct Capped<S> {
    inner: S,
    max: usize,
    scan: Scan,
    failed: bool,
}

impl<S> Capped<S> {
    pub fn new(inner: S, max: usize) -> Self {
        Capped {
            inner,
            max,
            scan: Scan::new(),
            failed: false,
        }
    }
}

impl<S> Stream for Capped<S>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Unpin,
{
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.inner).poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                let max = self.max;
                if self.scan.feed(&bytes) > max {
                    self.failed = true;
                    return Poll::Ready(Some(Err(BodyError::EventTooLarge(max))));
                }
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The open event's size after feeding `reads` in order.
    fn pending(reads: &[&str]) -> usize {
        let mut s = Scan::new();
        reads
            .iter()
            .map(|r| s.feed(r.as_bytes()))
            .last()
            .unwrap_or(0)
    }

    #[test]
    fn an_empty_line_ends_the_event_whatever_the_line_endings() {
        assert_eq!(pending(&["data: a\n\n"]), 0);
        assert_eq!(pending(&["data: a\r\n\r\n"]), 0);
        assert_eq!(pending(&["data: a\r\r"]), 0);
        assert_eq!(pending(&["data: a\n\ndata: bc"]), 8);
        // A CRLF split across reads is one line ending, not an empty line.
        assert_eq!(pending(&["data: a\r", "\ndata: b"]), 16);
        assert_eq!(pending(&["data: a\r\n", "\r\nx"]), 1);
        assert_eq!(pending(&["data: a\n", "\n"]), 0);
    }

    #[test]
    fn an_event_that_never_ends_keeps_growing() {
        let mut s = Scan::new();
        let line = "x".repeat(1000);
        for i in 1..=10 {
            assert_eq!(s.feed(line.as_bytes()), 1000 * i);
        }
        // Single line endings inside the event do not end it.
        assert_eq!(s.feed(b"\ndata: y\n"), 10_009);
        assert_eq!(s.feed(b"\n"), 0);
    }

    #[test]
    fn leading_blank_lines_are_boundaries() {
        assert_eq!(pending(&["\n\n\ndata: a"]), 7);
    }
}
